package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/knative"
	"github.com/fnops/func-operator/pkg/operator"
)

// newClient is a client of the control plane's admin knowing the operator's types
// (Functions, Knative Services, PipelineRuns).
func newClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return c, nil
}

// watchedConditions are the Function's conditions the narration follows.
var watchedConditions = []apis.ConditionType{
	v1alpha1.FunctionConditionSourceReady, v1alpha1.FunctionConditionDeployed, v1alpha1.FunctionConditionMiddlewareUpToDate,
	v1alpha1.FunctionConditionServiceReady, v1alpha1.FunctionConditionReady,
}

// snapshot is what the watcher last read.
type snapshot struct {
	fn  *v1alpha1.Function
	svc serviceState
}

// serviceState is what the watcher last read of the Knative Service.
type serviceState struct {
	// image is the template's image; empty when the Service was not read.
	image string
	// ready: Knative Serving reports the Service's generation Ready, on its latest
	// Revision.
	ready bool
}

// watcher narrates what the operator, Tekton and Knative Serving write as it
// changes: the Function's conditions, build and middleware, the PipelineRuns'
// Succeeded condition, the Function's Events and the Knative Service's Ready
// condition, Revisions and traffic.
type watcher struct {
	n    *narrator
	c    client.Client
	seen map[string]string
}

// until polls (and narrates) every 100ms until done holds for what was read, ctx
// ends or timeout passes.
func (w *watcher) until(ctx context.Context, timeout time.Duration, what string, done func(*snapshot) bool) error {
	return until(ctx, timeout, what, func() (bool, error) {
		s, err := w.poll(ctx)
		if err != nil {
			return false, err
		}
		return done(s), nil
	})
}

// changed reports whether key's value differs from the last seen, and notes it.
func (w *watcher) changed(key, value string) bool {
	if w.seen == nil {
		w.seen = map[string]string{}
	}
	if old, ok := w.seen[key]; ok && old == value {
		return false
	}
	w.seen[key] = value
	return true
}

// poll reads the Function, the Service, the PipelineRuns and the Events, and narrates
// what changed.
func (w *watcher) poll(ctx context.Context) (*snapshot, error) {
	fn := &v1alpha1.Function{}
	if err := w.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: function}, fn); err != nil {
		return nil, fmt.Errorf("reading Function %s/%s: %w", namespace, function, err)
	}
	for _, t := range watchedConditions {
		c := fn.Status.GetCondition(t)
		if c == nil {
			continue
		}
		if w.changed("condition/"+string(t), fmt.Sprint(c.Status, c.Reason, c.Message)) {
			line := fmt.Sprintf("operator: Function %s %s=%s", function, t, c.Status)
			if c.Reason != "" {
				line += " (" + c.Reason + ")"
			}
			if c.Message != "" {
				line += ": " + c.Message
			}
			w.n.Say("%s", line)
		}
	}
	if mw := fn.Status.Middleware; mw != nil && mw.Current != "" && w.changed("middleware", fmt.Sprint(mw.Current, mw.Available, mw.PendingRebuild)) {
		w.n.Say("operator: status.middleware: current %s, available %s, pendingRebuild %t", mw.Current, mw.Available, mw.PendingRebuild)
	}
	if b := fn.Status.Build; b != nil && w.changed("build", fmt.Sprint(b.Phase, b.PipelineRun)) {
		run := ""
		if b.PipelineRun != "" {
			run = ", PipelineRun " + b.PipelineRun
		}
		w.n.Say("operator: status.build: %s%s (middleware %s -> %s)", b.Phase, run, b.FromMiddleware, b.ToMiddleware)
	}
	var runs pipelinev1.PipelineRunList
	if err := w.c.List(ctx, &runs, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing PipelineRuns: %w", err)
	}
	for _, pr := range runs.Items {
		if w.changed("pipelinerun/"+pr.Name, "") {
			w.n.Say("operator: created PipelineRun %s (pipeline %s)", pr.Name, pipelineName(&pr))
		}
		if c := pr.Status.GetCondition(apis.ConditionSucceeded); c != nil && w.changed("pipelinerun-status/"+pr.Name, fmt.Sprint(c.Status, c.Reason)) {
			w.n.Say("Tekton: PipelineRun %s Succeeded=%s (%s): %s", pr.Name, c.Status, c.Reason, c.Message)
		}
	}
	var events corev1.EventList
	if err := w.c.List(ctx, &events, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	sort.Slice(events.Items, func(i, j int) bool {
		return events.Items[i].CreationTimestamp.Before(&events.Items[j].CreationTimestamp)
	})
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Function" && e.InvolvedObject.Name == function && w.changed("event/"+string(e.UID), "") {
			w.n.Say("operator: Event %s %s: %s", e.Type, e.Reason, e.Message)
		}
	}
	svc, err := w.pollService(ctx)
	if err != nil {
		return nil, err
	}
	return &snapshot{fn: fn, svc: svc}, nil
}

// pollService reads the Knative Service and narrates what Knative Serving wrote of
// it that changed: its Ready condition, latest ready Revision, traffic and URL.
func (w *watcher) pollService(ctx context.Context) (serviceState, error) {
	svc, err := service(ctx, w.c)
	if err != nil {
		return serviceState{}, err
	}
	var s serviceState
	if cs := svc.Spec.Template.Spec.Containers; len(cs) > 0 {
		s.image = cs[0].Image
	}
	st := svc.Status
	c := st.GetCondition(apis.ConditionReady)
	s.ready = knative.Serves(svc)
	if c == nil {
		return s, nil
	}
	// One line of what Knative wrote, its parts apart: its messages end with a period.
	ready := fmt.Sprintf("Service %s/%s Ready=%s", namespace, function, c.Status)
	if detail := strings.TrimSuffix(strings.Trim(c.Reason+": "+c.Message, ": "), "."); detail != "" {
		ready += " (" + detail + ")"
	}
	parts := []string{ready}
	if st.LatestReadyRevisionName != "" {
		parts = append(parts, "latest ready Revision "+st.LatestReadyRevisionName)
	}
	var traffic []string
	for _, t := range st.Traffic {
		if t.Percent != nil {
			traffic = append(traffic, fmt.Sprintf("%d%% to %s", *t.Percent, t.RevisionName))
		}
	}
	if len(traffic) > 0 {
		parts = append(parts, "traffic "+strings.Join(traffic, ", "))
	}
	if st.URL != nil && c.IsTrue() {
		parts = append(parts, "at "+st.URL.String())
	}
	line := "Knative Serving: " + strings.Join(parts, "; ")
	if w.changed("service", line) {
		w.n.Say("%s", line)
	}
	return s, nil
}

func pipelineName(pr *pipelinev1.PipelineRun) string {
	if pr.Spec.PipelineRef != nil {
		return pr.Spec.PipelineRef.Name
	}
	return "inline"
}
