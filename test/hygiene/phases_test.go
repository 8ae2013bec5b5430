package hygiene

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fnops/func-operator/test/envtest"
)

// TestPhases runs hack/phase.sh, what make test records each phase with, on phases
// made up here: every phase passing (the positive control: exit 0, each phase and
// each test package's time in the table, longest package first), one failing (its
// failures quoted and the run failed, though its command's output went through a
// pipe), and one that never ran because what it waits for failed (the run failed).
func TestPhases(t *testing.T) {
	script := filepath.Join(envtest.RepoRoot(), "hack", "phase.sh")
	goTestOK := `printf 'ok  \tgithub.com/fnops/func-operator/pkg/a\t2.5s\nok  \tgithub.com/fnops/func-operator/test/b\t120.0s\n'`
	goTestFail := `printf -- '--- FAIL: TestX (1.00s)\n    x_test.go:12: want 1, got 2\nFAIL\tgithub.com/fnops/func-operator/pkg/c\t1.2s\n'; exit 1`
	for _, tt := range []struct {
		name   string
		phases [][2]string // name, shell command
		expect string      // the phases the run expects
		// wantFail: the summary's last line names these; "" when it passes.
		wantFail string
		want     []*regexp.Regexp // lines of the whole output
	}{{
		name:   "every phase passes",
		phases: [][2]string{{"tool-x", "echo built"}, {"test-y", goTestOK}},
		expect: "tool-x test-y",
		want: []*regexp.Regexp{
			regexp.MustCompile(`(?m)^\[tool-x\] built$`),
			regexp.MustCompile(`(?m)^  tool-x +\+0m0\ds +0m0\ds  cpu +0m0\ds  ok$`),
			regexp.MustCompile(`(?m)^  test-y +\+0m0\ds +0m0\ds  cpu +0m0\ds  ok$`),
			regexp.MustCompile(`(?m)^  ok   test/b +test-y +120\.0s\n  ok   pkg/a +test-y +2\.5s$`),
			regexp.MustCompile(`(?m)^make test: every phase passed$`),
		},
	}, {
		name:     "a test phase fails",
		phases:   [][2]string{{"tool-x", "echo built"}, {"test-y", goTestFail}},
		expect:   "tool-x test-y",
		wantFail: "test-y",
		want: []*regexp.Regexp{
			regexp.MustCompile(`(?m)^\[test-y\] FAILED \(exit 1\)`),
			regexp.MustCompile(`(?m)^  test-y +\+0m0\ds +0m0\ds  cpu +0m0\ds  FAILED \(exit 1\)$`),
			regexp.MustCompile(`(?m)^  FAIL pkg/c +test-y +1\.2s$`),
			regexp.MustCompile(`(?m)^--- FAIL: TestX \(1\.00s\)\n    x_test\.go:12: want 1, got 2$`),
		},
	}, {
		name:     "a phase never ran",
		phases:   [][2]string{{"tool-x", "echo built"}},
		expect:   "tool-x test-y",
		wantFail: "did not run: test-y",
		want:     []*regexp.Regexp{regexp.MustCompile(`(?m)^phases that did not run: test-y$`)},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var out strings.Builder
			for _, p := range tt.phases {
				cmd := exec.Command("bash", script, "run", p[0], "bash", "-c", p[1])
				cmd.Env = append(os.Environ(), "PHASES_DIR="+dir)
				b, _ := cmd.CombinedOutput() // a failing phase exits non-zero; the summary says so
				out.Write(b)
			}
			cmd := exec.Command("bash", script, "summary")
			cmd.Env = append(os.Environ(), "PHASES_DIR="+dir, "EXPECT="+tt.expect)
			b, err := cmd.CombinedOutput()
			out.Write(b)
			got := out.String()
			last := lastLine(string(b))
			switch {
			case tt.wantFail == "" && err != nil:
				t.Errorf("summary failed (%v), want it to pass:\n%s", err, got)
			case tt.wantFail != "" && err == nil:
				t.Errorf("summary passed, want it to fail naming %q:\n%s", tt.wantFail, got)
			case tt.wantFail != "" && !strings.Contains(last, tt.wantFail):
				t.Errorf("the summary's last line is %q, want it to name %q", last, tt.wantFail)
			}
			for _, re := range tt.want {
				if !re.MatchString(got) {
					t.Errorf("no match for %s in:\n%s", re, got)
				}
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
