package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// SimulationMarker starts every line that a simulated actor (the kubelet, Knative
// Serving) says: what it did happened nowhere but in the API server.
const SimulationMarker = "[simulation]"

// narrator writes the demo's story on its writer, one line at a time from any
// goroutine, and times its steps.
type narrator struct {
	mu     sync.Mutex
	w      io.Writer
	start  time.Time
	step   int
	steps  int
	title  string
	begun  time.Time
	phases []phase
}

// phase is a finished step and how long it took.
type phase struct {
	title string
	took  time.Duration
}

func newNarrator(w io.Writer, steps int) *narrator {
	return &narrator{w: w, start: time.Now(), steps: steps}
}

// Step ends the step under way (timing it) and starts the next one.
func (n *narrator) Step(title, explanation string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.endLocked()
	n.step++
	n.title, n.begun = title, time.Now()
	n.printf("\n==> %d/%d %s\n", n.step, n.steps, title)
	for _, line := range wrap(explanation, 88) {
		n.printf("    %s\n", line)
	}
}

// End ends the step under way.
func (n *narrator) End() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.endLocked()
}

func (n *narrator) endLocked() {
	if n.title == "" {
		return
	}
	took := time.Since(n.begun)
	n.phases = append(n.phases, phase{title: n.title, took: took})
	n.printf("    (%s)\n", took.Round(100*time.Millisecond))
	n.title = ""
}

// Say writes a line of the step under way.
func (n *narrator) Say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.printf("    %s\n", fmt.Sprintf(format, args...))
}

// Simulated writes a line of a simulated actor, marked as such.
func (n *narrator) Simulated(actor, msg string) {
	n.Say("%s %s: %s", SimulationMarker, actor, msg)
}

// Plain writes text as it is.
func (n *narrator) Plain(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.printf(format, args...)
}

// Phases returns the steps finished so far and the time since the narrator started.
func (n *narrator) Phases() ([]phase, time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]phase(nil), n.phases...), time.Since(n.start)
}

// printf writes to the narrator's writer; a narration that cannot be written is
// not worth stopping the demo for.
func (n *narrator) printf(format string, args ...any) { _, _ = fmt.Fprintf(n.w, format, args...) }

// wrap breaks text into lines of at most width characters, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
