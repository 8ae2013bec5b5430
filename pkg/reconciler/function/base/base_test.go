package base

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/registry"
)

// fakeInspector answers Inspect with image and Base with the entry of bases for the
// reference asked (an error when absent), and records the references asked.
type fakeInspector struct {
	image registry.Middleware
	bases map[string]registry.BaseImage
	asked []string
}

func (f *fakeInspector) Inspect(context.Context, string, authn.Keychain) (registry.Middleware, error) {
	return f.image, nil
}

func (f *fakeInspector) Base(_ context.Context, ref string, _ authn.Keychain) (registry.BaseImage, error) {
	f.asked = append(f.asked, ref)
	b, ok := f.bases[ref]
	if !ok {
		return registry.BaseImage{}, &registry.InspectError{Ref: ref, Reason: registry.ReasonNotFound}
	}
	return b, nil
}

const (
	runImage = "127.0.0.1:5000/paketo/run:latest"
	mirror   = "127.0.0.1:5001/mirror/run:latest"
	builder  = "127.0.0.1:5000/ubi8/go-toolset:latest"
	oldTop   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newTop   = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	appLayer = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	oldRun   = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	newRun   = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// TestChecker_Check: the base policy's check against what the running image records
// and what its base's tag points to now: the verdict the build step gets, the status
// and BaseUpToDate's status, reason and severity.
func TestChecker_Check(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) // a Monday
	cnb := registry.Middleware{Base: registry.Base{Kind: registry.BaseRunImage, Image: runImage, Reference: "127.0.0.1:5000/paketo/run@" + oldRun,
		TopLayer: oldTop, DiffIDs: []string{oldTop, appLayer}}}
	s2i := registry.Middleware{Base: registry.Base{Kind: registry.BaseBuilder, Image: builder, DiffIDs: []string{oldTop, appLayer}}}
	moved := map[string]registry.BaseImage{runImage: {Ref: runImage, Digest: newRun, TopLayer: newTop, DiffIDs: []string{newTop}}}
	same := map[string]registry.BaseImage{runImage: {Ref: runImage, Digest: oldRun, TopLayer: oldTop, DiffIDs: []string{oldTop}}}
	builderMoved := map[string]registry.BaseImage{builder: {Ref: builder, Digest: newRun, TopLayer: newTop, DiffIDs: []string{newTop}}}
	builderSame := map[string]registry.BaseImage{builder: {Ref: builder, Digest: oldRun, TopLayer: oldTop, DiffIDs: []string{oldTop}}}
	policy := func(p string) map[string]string { return map[string]string{v1alpha1.AnnotationBaseUpdates: p} }

	for _, tt := range []struct {
		name     string
		ann      map[string]string
		cfg      func(*config.Base)
		image    registry.Middleware
		bases    map[string]registry.BaseImage
		disabled bool // func.yaml's deploy.managementDisabled
		want     build.Base
		wantCond string // status/reason/severity of BaseUpToDate; "" for none
		wantSt   *v1alpha1.BaseStatus
		asked    []string
	}{{
		name: "policy Off: no status, no condition, nothing read",
		ann:  policy("Off"), image: cnb, bases: moved,
	}, {
		name:  "ConfigMap default Report, up to date",
		image: cnb, bases: same,
		wantCond: "True/BaseCurrent/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + oldRun, Policy: "Report", PolicySource: "OperatorConfig"},
		want:  build.Base{Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + oldRun, RunImage: "127.0.0.1:5000/paketo/run@" + oldRun, RunImageName: runImage},
		asked: []string{runImage},
	}, {
		name:  "run image moved, Report: reported, nothing due",
		image: cnb, bases: moved,
		wantCond: "False/BaseReportOnly/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Report", PolicySource: "OperatorConfig"},
		want:  build.Base{Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5000/paketo/run@" + newRun, RunImageName: runImage},
		asked: []string{runImage},
	}, {
		name: "run image moved, annotation Rebase: a rebase is due",
		ann:  policy("Rebase"), image: cnb, bases: moved,
		wantCond: "False/BaseOutdated/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Rebase", PolicySource: "Annotation"},
		want:  build.Base{Due: true, Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5000/paketo/run@" + newRun, RunImageName: runImage},
		asked: []string{runImage},
	}, {
		name: "run image moved, read from the configured mirror first: rebased from the mirror, named as the image knows it",
		ann:  policy("Rebase"), image: cnb, cfg: func(b *config.Base) { b.Mirrors = map[string]string{"127.0.0.1:5000/paketo": "127.0.0.1:5001/mirror"} },
		bases:    map[string]registry.BaseImage{mirror: {Ref: mirror, Digest: newRun, TopLayer: newTop, DiffIDs: []string{newTop}}},
		wantCond: "False/BaseOutdated/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, ResolvedFrom: mirror, Policy: "Rebase", PolicySource: "Annotation"},
		want:  build.Base{Due: true, Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5001/mirror/run@" + newRun, RunImageName: runImage},
		asked: []string{mirror},
	}, {
		name: "run image moved, outside the maintenance window: waits for it",
		ann:  policy("Rebase"), image: cnb, bases: moved,
		cfg:      func(b *config.Base) { b.Window, _ = config.ParseWindow("Sat 02:00-06:00") },
		wantCond: "False/OutsideMaintenanceWindow/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Rebase", PolicySource: "Annotation"},
		want: build.Base{Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5000/paketo/run@" + newRun, RunImageName: runImage,
			NotBefore: time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)},
		asked: []string{runImage},
	}, {
		name: "run image moved, inside the maintenance window: due",
		ann:  policy("Rebase"), image: cnb, bases: moved,
		cfg:      func(b *config.Base) { b.Window, _ = config.ParseWindow("Mon 11:00-13:00") },
		wantCond: "False/BaseOutdated/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Rebase", PolicySource: "Annotation"},
		want:  build.Base{Due: true, Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5000/paketo/run@" + newRun, RunImageName: runImage},
		asked: []string{runImage},
	}, {
		name: "run image moved, func.yaml disables management: not updated",
		ann:  policy("Rebase"), image: cnb, bases: moved, disabled: true,
		wantCond: "False/ManagementDisabled/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Rebase", PolicySource: "Annotation"},
		want:  build.Base{Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5000/paketo/run@" + newRun, RunImageName: runImage},
		asked: []string{runImage},
	}, {
		name: "invalid annotation: report only, never acts",
		ann:  policy("Always"), image: cnb, bases: moved, cfg: func(b *config.Base) { b.Updates = "RebaseAndRebuild" },
		wantCond: "False/BaseReportOnly/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun,
			Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Report", PolicySource: "Annotation"},
		want:  build.Base{Rebase: true, Image: runImage, Current: "127.0.0.1:5000/paketo/run@" + oldRun, Available: "127.0.0.1:5000/paketo/run@" + newRun, RunImage: "127.0.0.1:5000/paketo/run@" + newRun, RunImageName: runImage},
		asked: []string{runImage},
	}, {
		name: "s2i builder moved, Rebase: an s2i image cannot be rebased, reported",
		ann:  policy("Rebase"), image: s2i, bases: builderMoved,
		wantCond: "False/BaseReportOnly/Info",
		wantSt:   &v1alpha1.BaseStatus{Kind: "Builder", Image: builder, Available: "127.0.0.1:5000/ubi8/go-toolset@" + newRun, Policy: "Rebase", PolicySource: "Annotation"},
		want:     build.Base{Image: builder, Available: "127.0.0.1:5000/ubi8/go-toolset@" + newRun, RunImage: "127.0.0.1:5000/ubi8/go-toolset@" + newRun, RunImageName: builder},
		asked:    []string{builder},
	}, {
		name: "s2i builder moved, RebaseAndRebuild: a rebuild is due",
		ann:  policy("RebaseAndRebuild"), image: s2i, bases: builderMoved,
		wantCond: "False/BaseOutdated/Info",
		wantSt:   &v1alpha1.BaseStatus{Kind: "Builder", Image: builder, Available: "127.0.0.1:5000/ubi8/go-toolset@" + newRun, Policy: "RebaseAndRebuild", PolicySource: "Annotation"},
		want:     build.Base{Due: true, Image: builder, Available: "127.0.0.1:5000/ubi8/go-toolset@" + newRun, RunImage: "127.0.0.1:5000/ubi8/go-toolset@" + newRun, RunImageName: builder},
		asked:    []string{builder},
	}, {
		name: "s2i image on the current builder: up to date, current is the builder's digest",
		ann:  policy("RebaseAndRebuild"), image: s2i, bases: builderSame,
		wantCond: "True/BaseCurrent/Info",
		wantSt: &v1alpha1.BaseStatus{Kind: "Builder", Image: builder, Current: "127.0.0.1:5000/ubi8/go-toolset@" + oldRun,
			Available: "127.0.0.1:5000/ubi8/go-toolset@" + oldRun, Policy: "RebaseAndRebuild", PolicySource: "Annotation"},
		want:  build.Base{Image: builder, Current: "127.0.0.1:5000/ubi8/go-toolset@" + oldRun, Available: "127.0.0.1:5000/ubi8/go-toolset@" + oldRun, RunImage: "127.0.0.1:5000/ubi8/go-toolset@" + oldRun, RunImageName: builder},
		asked: []string{builder},
	}, {
		name: "an image that records no base: said so, not guessed",
		ann:  policy("Rebase"), image: registry.Middleware{},
		wantCond: "Unknown/BaseUnknown/Info",
		wantSt:   &v1alpha1.BaseStatus{Policy: "Rebase", PolicySource: "Annotation"},
	}, {
		name: "a label that lies: Warning, nothing read",
		ann:  policy("Rebase"), bases: moved,
		image:    registry.Middleware{Base: registry.Base{Kind: registry.BaseRunImage, Image: runImage, Problem: "its top layer is not among the image's layers"}},
		wantCond: "Unknown/BaseLabelInvalid/Warning",
		wantSt:   &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Policy: "Rebase", PolicySource: "Annotation"},
	}, {
		name: "the label's own mirrors are never read: a tenant's label does not choose where the operator reads from",
		ann:  policy("Rebase"),
		image: registry.Middleware{Base: registry.Base{Kind: registry.BaseRunImage, Image: runImage, Mirrors: []string{mirror},
			Reference: "127.0.0.1:5000/paketo/run@" + oldRun, TopLayer: oldTop, DiffIDs: []string{oldTop, appLayer}}},
		bases:    map[string]registry.BaseImage{mirror: {Ref: mirror, Digest: newRun, TopLayer: newTop, DiffIDs: []string{newTop}}},
		wantCond: "Unknown/BaseUnreachable/Warning",
		wantSt:   &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Policy: "Rebase", PolicySource: "Annotation"},
		asked:    []string{runImage},
	}, {
		name: "an arm64 image, its base read for amd64: cannot be compared, nothing due",
		ann:  policy("Rebase"),
		image: registry.Middleware{Base: registry.Base{Kind: registry.BaseRunImage, Image: runImage, Reference: "127.0.0.1:5000/paketo/run@" + oldRun,
			TopLayer: oldTop, DiffIDs: []string{oldTop, appLayer}, Platform: "linux/arm64"}},
		bases:    map[string]registry.BaseImage{runImage: {Ref: runImage, Digest: newRun, TopLayer: newTop, DiffIDs: []string{newTop}, Platform: "linux/amd64"}},
		wantCond: "Unknown/BaseUnknown/Info",
		wantSt:   &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Available: "127.0.0.1:5000/paketo/run@" + newRun, Policy: "Rebase", PolicySource: "Annotation"},
		asked:    []string{runImage},
	}, {
		name: "the run image is not there: Warning, nothing due",
		ann:  policy("Rebase"), image: cnb, bases: nil,
		wantCond: "Unknown/BaseUnreachable/Warning",
		wantSt:   &v1alpha1.BaseStatus{Kind: "RunImage", Image: runImage, Policy: "Rebase", PolicySource: "Annotation"},
		asked:    []string{runImage},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			store := config.NewStore()
			cfg := store.Load()
			if tt.cfg != nil {
				tt.cfg(&cfg.Base)
				store.Set(cfg)
			}
			insp := &fakeInspector{image: tt.image, bases: tt.bases}
			c := New(Deps{Inspector: insp, Config: store, Clock: clocktesting.NewFakePassiveClock(now)})
			fn := &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", Annotations: tt.ann}}
			if tt.disabled {
				fn.Status.MarkManagementDisabled(true)
			}
			got, err := c.Check(context.Background(), fn, Input{Image: "127.0.0.1:5000/fns/hello@" + oldRun, Timeout: time.Second})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			st := fn.Status.Base.DeepCopy()
			if st != nil {
				st.LastChecked = nil
			}
			if diff := cmp.Diff(tt.wantSt, st); diff != "" {
				t.Errorf("status.base (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCond, cond(fn)); diff != "" {
				t.Errorf("BaseUpToDate (-want +got):\n%s\n%+v", diff, fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate))
			}
			if diff := cmp.Diff(tt.asked, insp.asked); diff != "" {
				t.Errorf("bases read (-want +got):\n%s", diff)
			}
			if c := fn.Status.GetCondition(v1alpha1.FunctionConditionReady); c != nil && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "base") {
				t.Errorf("Ready depends on the base: %+v", c)
			}
		})
	}
}

// TestChecker_Check_LastCheckedNotRewrittenEachCheck: status.base.lastChecked moves
// when what the base points to changes, or once per baseCheckInterval, not at every
// check (each would be a status write of every Function of the fleet).
func TestChecker_Check_LastCheckedNotRewrittenEachCheck(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	insp := &fakeInspector{image: registry.Middleware{Base: registry.Base{Kind: registry.BaseRunImage, Image: runImage,
		Reference: "127.0.0.1:5000/paketo/run@" + oldRun, TopLayer: oldTop, DiffIDs: []string{oldTop}}},
		bases: map[string]registry.BaseImage{runImage: {Ref: runImage, Digest: oldRun, TopLayer: oldTop, DiffIDs: []string{oldTop}}}}
	c := New(Deps{Inspector: insp, Config: config.NewStore(), Clock: clk})
	fn := &v1alpha1.Function{}
	check := func() time.Time {
		t.Helper()
		if _, err := c.Check(context.Background(), fn, Input{Image: "127.0.0.1:5000/fns/hello@" + oldRun}); err != nil {
			t.Fatal(err)
		}
		return fn.Status.Base.LastChecked.Time
	}
	first := check()
	clk.SetTime(now.Add(time.Minute))
	if got := check(); !got.Equal(first) {
		t.Errorf("lastChecked moved to %s a minute later, with nothing changed", got)
	}
	clk.SetTime(now.Add(config.DefaultBaseCheckInterval))
	if got := check(); !got.Equal(now.Add(config.DefaultBaseCheckInterval)) {
		t.Errorf("lastChecked %s after the check interval, want it moved", got)
	}
	insp.bases[runImage] = registry.BaseImage{Ref: runImage, Digest: newRun, TopLayer: newTop, DiffIDs: []string{newTop}}
	clk.SetTime(now.Add(config.DefaultBaseCheckInterval + time.Minute))
	if got := check(); !got.Equal(now.Add(config.DefaultBaseCheckInterval + time.Minute)) {
		t.Errorf("lastChecked %s when the base moved, want it moved", got)
	}
}

// TestChecker_Check_NotDeployedLeavesNothing: without an image nothing is read and
// the status is left as the policy says.
func TestChecker_Check_NotDeployedLeavesNothing(t *testing.T) {
	insp := &fakeInspector{}
	c := New(Deps{Inspector: insp, Config: config.NewStore()})
	fn := &v1alpha1.Function{}
	if _, err := c.Check(context.Background(), fn, Input{}); err != nil {
		t.Fatal(err)
	}
	if fn.Status.Base != nil || len(insp.asked) != 0 {
		t.Errorf("status.base %+v, asked %v; want none", fn.Status.Base, insp.asked)
	}
}

func cond(fn *v1alpha1.Function) string {
	c := fn.Status.GetCondition(v1alpha1.FunctionConditionBaseUpToDate)
	if c == nil {
		return ""
	}
	sev := c.Severity
	if sev == "" {
		sev = apis.ConditionSeverityError
	}
	return string(c.Status) + "/" + c.Reason + "/" + string(sev)
}
