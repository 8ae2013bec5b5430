package rebuild

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/fnops/func-operator/pkg/funclib"
)

// RunPipelineFunc runs one build and returns when its PipelineRun ends.
type RunPipelineFunc func(ctx context.Context, req funclib.BuildRequest) error

// Launcher starts builds off the reconcile path and remembers the ones this process
// launched until their outcome is recorded. The status of a build comes from its
// PipelineRun; the Launcher only tells whether a launch is still under way and why
// one failed before its PipelineRun existed.
type Launcher struct {
	run      RunPipelineFunc
	onReturn func(types.NamespacedName)
	log      logr.Logger
	// LogLines, when set, is how many lines of a failed build's output (func quotes
	// the failed step's log in its error) the operator's log keeps; the rest is cut.
	LogLines func() int

	mu       sync.Mutex
	launches map[types.NamespacedName]*launch
	wg       sync.WaitGroup
}

// launch is one build this process started.
type launch struct {
	id     string
	cancel context.CancelFunc
	ended  bool
	err    error
	// result is what a job launched with LaunchJob returned (a rebase's image).
	result string
}

// NewLauncher returns a Launcher that runs builds with run (funclib.RunPipeline, or a
// test's) and calls onReturn, without a lock held, when one returns.
func NewLauncher(run RunPipelineFunc, onReturn func(types.NamespacedName), log logr.Logger) *Launcher {
	return &Launcher{run: run, onReturn: onReturn, log: log, launches: map[types.NamespacedName]*launch{}}
}

// Launch starts build id of key. The build's context is not derived from a reconcile
// or the manager: func's provider deletes the PipelineRun when its context is
// cancelled, so only Cancel (the Function was deleted) does that. A build that
// outlives the operator process keeps running, and the next process adopts it.
func (l *Launcher) Launch(key types.NamespacedName, id string, req funclib.BuildRequest) {
	l.start(key, id, func(ctx context.Context) (string, error) { return "", l.run(ctx, req) },
		"launching build", "commit", req.Revision, "path", req.ContextDir)
}

// LaunchJob starts build id of key done in-process by job (a rebase), under timeout:
// one build per Function, as Launch. What job returns is kept for Result.
func (l *Launcher) LaunchJob(key types.NamespacedName, id string, timeout time.Duration, job func(ctx context.Context) (string, error)) {
	l.start(key, id, func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return job(ctx)
	}, "launching in-process build", "timeout", timeout.String())
}

// Result is what build id of key, launched with LaunchJob, returned; "" until it ended.
func (l *Launcher) Result(key types.NamespacedName, id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec, ok := l.launches[key]; ok && rec.id == id && rec.ended {
		return rec.result
	}
	return ""
}

func (l *Launcher) start(key types.NamespacedName, id string, run func(ctx context.Context) (string, error), msg string, kv ...any) {
	ctx, cancel := context.WithCancel(context.Background())
	rec := &launch{id: id, cancel: cancel}
	l.mu.Lock()
	if old, ok := l.launches[key]; ok && !old.ended {
		l.mu.Unlock()
		cancel()
		return // one build per Function
	}
	l.launches[key] = rec
	l.mu.Unlock()
	l.wg.Add(1)
	log := l.log.WithValues("Function", klog.KRef(key.Namespace, key.Name), "build", id)
	log.Info(msg, kv...)
	go func() {
		defer l.wg.Done()
		result, err := run(ctx)
		if err != nil {
			lines := DefaultLogLines
			if l.LogLines != nil {
				lines = l.LogLines()
			}
			log.Info("build pipeline returned", "error", TailLines(err.Error(), lines, maxLogLineBytes))
		} else {
			log.Info("build pipeline returned")
		}
		l.mu.Lock()
		rec.ended, rec.err, rec.result = true, err, result
		l.mu.Unlock()
		cancel()
		if l.onReturn != nil {
			l.onReturn(key)
		}
	}()
}

// Launched returns what this process knows of build id of key: whether it launched
// it, whether the launch returned, and its error.
func (l *Launcher) Launched(key types.NamespacedName, id string) (launched, ended bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok := l.launches[key]
	if !ok || rec.id != id {
		return false, false, nil
	}
	return true, rec.ended, rec.err
}

// Busy reports whether a build of key is being launched or runs in this process.
func (l *Launcher) Busy(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec, ok := l.launches[key]
	return ok && !rec.ended
}

// Done forgets build id of key once its outcome is recorded.
func (l *Launcher) Done(key types.NamespacedName, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec, ok := l.launches[key]; ok && rec.id == id && rec.ended {
		delete(l.launches, key)
	}
}

// Cancel stops the build of a deleted Function: func's provider deletes its PipelineRun.
func (l *Launcher) Cancel(key types.NamespacedName) {
	l.mu.Lock()
	rec, ok := l.launches[key]
	delete(l.launches, key)
	l.mu.Unlock()
	if ok {
		l.log.Info("cancelling the build of a deleted Function", "Function", klog.KRef(key.Namespace, key.Name), "build", rec.id)
		rec.cancel()
	}
}

// Wait waits for every launch to return.
func (l *Launcher) Wait() { l.wg.Wait() }
