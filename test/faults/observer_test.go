package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// observer watches every Function and build PipelineRun, as a monitoring system
// would, and counts what must never happen, whatever the fault:
//   - a Ready flap: a Function's Ready going from True to anything else (no fault
//     of this suite makes a function unhealthy, but for the one a fault marks
//     unhealthy on purpose: expectUnhealthy). Not one: Ready Unknown while Knative
//     rolls out the image of the Function's own rebuild (its build succeeded, not yet
//     verified), an older Revision serving meanwhile (rollingOwnRebuild): the
//     operator mirrors Knative's Ready, which is Unknown until the new Revision takes
//     the traffic; those are counted apart (rollouts);
//   - a duplicate build: a PipelineRun created for a Function while another of its
//     runs is running, or after one of its runs succeeded.
//
// Lost builds and Secret values are counted by the suite at the end of each fault.
type observer struct {
	c   cache.Cache
	ctx context.Context

	mu    sync.Mutex
	ready map[string]bool
	flaps []string
	// unhealthy are the Functions a fault makes unhealthy on purpose: their Ready
	// going down is counted in downs, not as a flap.
	unhealthy map[string]bool
	downs     map[string]int
	// rollouts counts Ready going Unknown during the rollout of a Function's own
	// rebuild (rollingOwnRebuild).
	rollouts   int
	runs       map[types.UID]string // run → its Function
	live       map[string]map[types.UID]bool
	succeeded  map[string]bool
	duplicates []string
	created    map[string]int
	// secrets are values no status may ever show; leaks where one did.
	secrets []string
	leaks   []string
}

// startObserver watches Functions (and, with builds, PipelineRuns) through cfg until
// the test ends. Its informers ride out API server outages, as a monitor's would.
func startObserver(t *testing.T, cfg *rest.Config, secrets []string) *observer {
	t.Helper()
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	o := newObserver(secrets)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o.c, o.ctx = c, ctx
	fns, err := c.GetInformer(ctx, &v1alpha1.Function{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fns.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { o.function(obj) },
		UpdateFunc: func(_, obj interface{}) { o.function(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !c.WaitForCacheSync(syncCtx) {
		t.Fatal("the observer's cache did not sync")
	}
	return o
}

// newObserver returns an observer that has seen nothing yet.
func newObserver(secrets []string) *observer {
	return &observer{ready: map[string]bool{}, unhealthy: map[string]bool{}, downs: map[string]int{},
		runs: map[types.UID]string{}, live: map[string]map[types.UID]bool{},
		succeeded: map[string]bool{}, created: map[string]int{}, secrets: secrets}
}

// watchBuilds starts watching build PipelineRuns, once the cluster serves them.
func (o *observer) watchBuilds(t *testing.T) {
	t.Helper()
	c, ctx := o.c, o.ctx
	runs, err := c.GetInformer(ctx, &pipelinev1.PipelineRun{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { o.run(obj, false) },
		UpdateFunc: func(_, obj interface{}) { o.run(obj, false) },
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			o.run(obj, true)
		},
	}); err != nil {
		t.Fatal(err)
	}
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !runs.HasSynced() {
		if !toolscache.WaitForCacheSync(syncCtx.Done(), runs.HasSynced) {
			t.Fatal("the observer's PipelineRun informer did not sync")
		}
	}
}

func (o *observer) function(obj interface{}) {
	fn, ok := obj.(*v1alpha1.Function)
	if !ok {
		return
	}
	key := fn.Namespace + "/" + fn.Name
	c := fn.Status.GetCondition(apis.ConditionReady)
	ready := c != nil && c.IsTrue()
	status, err := json.Marshal(fn.Status)
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, s := range o.secrets {
		if err != nil || strings.Contains(string(status), s) {
			o.leaks = append(o.leaks, fmt.Sprintf("secret #%d (%d characters) in a status of Function %s (or it could not be encoded: %v)", i+1, len(s), key, err))
		}
	}
	switch {
	case o.ready[key] && !ready && o.unhealthy[key]:
		o.downs[key]++
	case o.ready[key] && !ready && rollingOwnRebuild(fn):
		o.rollouts++
	case o.ready[key] && !ready && fn.DeletionTimestamp == nil:
		what := "no Ready condition"
		if c != nil {
			what = fmt.Sprintf("%s (%s: %s)", c.Status, c.Reason, c.Message)
		}
		o.flaps = append(o.flaps, fmt.Sprintf("%s at %s: Ready True -> %s", key, time.Now().Format(time.StampMilli), what))
	}
	o.ready[key] = ready
}

// rollingOwnRebuild tells a Function whose Ready is Unknown because Knative rolls out
// the image of its own rebuild (the build succeeded and is not verified yet) while an
// older Revision serves.
func rollingOwnRebuild(fn *v1alpha1.Function) bool {
	c, sr := fn.Status.GetCondition(apis.ConditionReady), fn.Status.GetCondition(v1alpha1.FunctionConditionServiceReady)
	b := fn.Status.Build
	return c != nil && c.Status == corev1.ConditionUnknown && sr != nil && sr.Status == corev1.ConditionUnknown &&
		fn.Status.Service != nil && fn.Status.Service.LatestReadyRevision != "" &&
		b != nil && b.Phase == v1alpha1.BuildPhaseSucceeded && !fn.Status.RebuildRecorded()
}

func (o *observer) run(obj interface{}, deleted bool) {
	pr, ok := obj.(*pipelinev1.PipelineRun)
	if !ok || pr.Labels[resources.LabelFunction] == "" {
		return
	}
	key := pr.Namespace + "/" + pr.Labels[resources.LabelFunction]
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.runs[pr.UID]; !seen { // a run first seen deleted was created all the same
		o.runs[pr.UID] = key
		o.created[key]++
		var others []string
		for uid := range o.live[key] {
			others = append(others, string(uid))
		}
		switch {
		case len(others) > 0:
			o.duplicates = append(o.duplicates, fmt.Sprintf("%s: PipelineRun %s created while %v still ran", key, pr.Name, others))
		case o.succeeded[key]:
			o.duplicates = append(o.duplicates, fmt.Sprintf("%s: PipelineRun %s created after a build of it succeeded", key, pr.Name))
		}
		if o.live[key] == nil {
			o.live[key] = map[types.UID]bool{}
		}
		o.live[key][pr.UID] = true
	}
	c := pr.Status.GetCondition(apis.ConditionSucceeded)
	if deleted || (c != nil && !c.IsUnknown()) {
		delete(o.live[key], pr.UID)
	}
	if !deleted && c != nil && c.IsTrue() {
		o.succeeded[key] = true
	}
}

// expectUnhealthy tells the observer that a fault makes the Function key unhealthy
// on purpose (on), or no longer (off): meanwhile its Ready going down is no flap.
func (o *observer) expectUnhealthy(key string, on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unhealthy[key] = on
}

// readyDowns returns how many times the observer saw the Function key, marked
// unhealthy on purpose, go from Ready to not, and whether it saw it Ready last.
func (o *observer) readyDowns(key string) (downs int, ready bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.downs[key], o.ready[key]
}

// counts returns the Ready flaps and duplicate builds so far.
func (o *observer) counts() (flaps, duplicates []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.flaps...), append([]string(nil), o.duplicates...)
}

// statusLeaks returns where a status showed a Secret value, at any update.
func (o *observer) statusLeaks() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.leaks...)
}

// runsOf returns how many build PipelineRuns were created for the Function key.
func (o *observer) runsOf(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.created[key]
}

// readyNow returns the Functions the observer last saw Ready, sorted.
func (o *observer) readyNow() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for k, r := range o.ready {
		if r {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// secretLeaks looks for each Secret value in the operator's output, every Event and
// every Function's status, and returns where it found one (never the value).
func secretLeaks(ctx context.Context, c client.Client, logs string, secrets []string) ([]string, error) {
	var events corev1.EventList
	if err := c.List(ctx, &events); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var fns v1alpha1.FunctionList
	if err := c.List(ctx, &fns); err != nil {
		return nil, fmt.Errorf("listing Functions: %w", err)
	}
	places := map[string]string{"the operator's output": logs}
	for _, e := range events.Items {
		places["event "+e.Namespace+"/"+e.Name] = e.Message + " " + e.Reason
	}
	for _, f := range fns.Items {
		b, err := json.Marshal(f.Status)
		if err != nil {
			return nil, fmt.Errorf("encoding the status of %s/%s: %w", f.Namespace, f.Name, err)
		}
		places["status of Function "+f.Namespace+"/"+f.Name] = string(b)
	}
	var leaks []string
	for where, text := range places {
		for i, s := range secrets {
			if strings.Contains(text, s) {
				leaks = append(leaks, fmt.Sprintf("secret #%d (%d characters) in %s", i+1, len(s), where))
			}
		}
	}
	sort.Strings(leaks)
	return leaks, nil
}
