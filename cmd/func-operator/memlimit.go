package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
)

// The Go runtime's soft memory limit follows the container's: config/500-controller.yaml
// hands the container's memory limit to the process (the Downward API's
// resourceFieldRef limits.memory, in bytes) in memoryLimitEnv, and the operator sets
// the runtime's limit to memoryLimitRatio of it, so that the garbage collector works
// harder as the heap nears the limit instead of letting a burst (the first check of
// thousands of Functions) reach it and be killed. A limit changed in the Deployment
// moves it along; GOMEMLIMIT, when set, is the runtime's own and wins.
const (
	memoryLimitEnv = "FUNC_OPERATOR_MEMORY_LIMIT"
	// memoryLimitRatio leaves a fifth of the container's limit to what the Go heap
	// limit does not count: goroutine stacks beyond the heap, the runtime's own
	// structures, and the slack a collection needs to finish.
	memoryLimitRatio = 0.8
)

// Where the runtime's memory limit comes from, as the start-up log says.
const (
	memoryLimitFromGOMEMLIMIT = "GOMEMLIMIT"
	memoryLimitFromContainer  = "container"
	memoryLimitNone           = "none"
)

// memoryLimit returns the soft memory limit to set, in bytes, and where it comes
// from: 0 and "GOMEMLIMIT" when that is set (the runtime already applied it), the
// ratio of memoryLimitEnv's bytes and "container", or 0 and "none" without either.
func memoryLimit(getenv func(string) string) (int64, string, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, memoryLimitFromGOMEMLIMIT, nil
	}
	v := strings.TrimSpace(getenv(memoryLimitEnv))
	if v == "" {
		return 0, memoryLimitNone, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, memoryLimitNone, fmt.Errorf("%s=%q is not the container's memory limit in bytes: the Go runtime sets no memory limit", memoryLimitEnv, v)
	}
	return int64(float64(n) * memoryLimitRatio), memoryLimitFromContainer, nil
}

// applyMemoryLimit sets the runtime's memory limit as memoryLimit says, and logs it.
func applyMemoryLimit(log logr.Logger) {
	limit, from, err := memoryLimit(os.Getenv)
	if err != nil {
		log.Error(err, "the memory limit")
	}
	if from == memoryLimitFromContainer {
		debug.SetMemoryLimit(limit)
	}
	log.Info("memory limit", "goMemoryLimit", debug.SetMemoryLimit(-1), "from", from)
}
