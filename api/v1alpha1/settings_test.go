package v1alpha1

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
)

func TestFunction_Settings(t *testing.T) {
	const (
		fromSpecAuto    = "spec.autoUpdateMiddleware"
		fromSpecSuspend = "spec.suspend"
		fromSpecHistory = "spec.buildHistoryLimit"
		fromAnnAuto     = "annotation " + AnnotationAutoUpdateMiddleware
		fromAnnSuspend  = "annotation " + AnnotationSuspend
		fromAnnHistory  = "annotation " + AnnotationBuildHistoryLimit
	)
	defaults := Settings{SuspendFrom: fromSpecSuspend, BuildHistoryLimit: DefaultBuildHistoryLimit, BuildHistoryLimitFrom: "default"}
	with := func(change func(*Settings)) Settings {
		s := defaults
		change(&s)
		return s
	}
	tests := []struct {
		name        string
		spec        FunctionSpec
		annotations map[string]string
		want        Settings
		// wantInvalid are substrings of Settings.Invalid, in order.
		wantInvalid []string
	}{{
		name: "nothing set: the defaults",
		want: defaults,
	}, {
		name:        "unrelated annotations: the defaults",
		annotations: map[string]string{"functions.knative.dev/last-deployed": "2026-11-20T10:00:00Z"},
		want:        defaults,
	}, {
		name:        "rebuild commit annotation",
		annotations: map[string]string{AnnotationRebuildCommit: " Followed "},
		want:        with(func(s *Settings) { s.RebuildCommit = RebuildCommitFollowed }),
	}, {
		name:        "invalid rebuild commit annotation: the ConfigMap does not decide, rebuilds are held",
		annotations: map[string]string{AnnotationRebuildCommit: "head"},
		want:        with(func(s *Settings) { s.HoldRebuilds = true }),
		wantInvalid: []string{`annotation functions.dev/rebuild-commit: "head" is not Deployed, DeployedOnly or Followed: no rebuild until it is fixed`},
	}, {
		name:        "deploy-on-commit annotation",
		annotations: map[string]string{AnnotationDeployOnCommit: " true"},
		want:        with(func(s *Settings) { s.DeployOnCommitSet = ptr.To(true) }),
	}, {
		name:        "invalid deploy-on-commit annotation: the ConfigMap decides, nothing held",
		annotations: map[string]string{AnnotationDeployOnCommit: "yes"},
		want:        defaults,
		wantInvalid: []string{`annotation functions.dev/deploy-on-commit: "yes" is not true or false (ConfigMap func-operator-config's deployOnCommit applies now)`},
	}, {
		name: "spec only",
		spec: FunctionSpec{AutoUpdateMiddleware: ptr.To(false), Suspend: true, BuildHistoryLimit: ptr.To[int32](7)},
		want: Settings{AutoUpdateMiddleware: ptr.To(false), AutoUpdateFrom: fromSpecAuto, Suspend: true, SuspendFrom: fromSpecSuspend,
			BuildHistoryLimit: 7, BuildHistoryLimitFrom: fromSpecHistory},
	}, {
		name: "annotations only (what is left after func deploy)",
		annotations: map[string]string{AnnotationAutoUpdateMiddleware: "false", AnnotationSuspend: "true",
			AnnotationBuildHistoryLimit: "0"},
		want: Settings{AutoUpdateMiddleware: ptr.To(false), AutoUpdateFrom: fromAnnAuto, Suspend: true, SuspendFrom: fromAnnSuspend,
			BuildHistoryLimit: 0, BuildHistoryLimitFrom: fromAnnHistory},
	}, {
		name: "annotation values are parsed as the ConfigMap's",
		annotations: map[string]string{AnnotationAutoUpdateMiddleware: " TRUE ", AnnotationSuspend: "0",
			AnnotationBuildHistoryLimit: " 20"},
		want: Settings{AutoUpdateMiddleware: ptr.To(true), AutoUpdateFrom: fromAnnAuto, Suspend: false, SuspendFrom: fromAnnSuspend,
			BuildHistoryLimit: 20, BuildHistoryLimitFrom: fromAnnHistory},
	}, {
		name: "the spec wins over the annotations when it sets a field",
		spec: FunctionSpec{AutoUpdateMiddleware: ptr.To(true), Suspend: true, BuildHistoryLimit: ptr.To[int32](1)},
		annotations: map[string]string{AnnotationAutoUpdateMiddleware: "false", AnnotationSuspend: "false",
			AnnotationBuildHistoryLimit: "9"},
		want: Settings{AutoUpdateMiddleware: ptr.To(true), AutoUpdateFrom: fromSpecAuto, Suspend: true, SuspendFrom: fromSpecSuspend,
			BuildHistoryLimit: 1, BuildHistoryLimitFrom: fromSpecHistory},
	}, {
		name:        "spec.suspend false cannot be told from unset: the annotation decides",
		spec:        FunctionSpec{Suspend: false, BuildHistoryLimit: ptr.To[int32](0)},
		annotations: map[string]string{AnnotationSuspend: "true"},
		want: with(func(s *Settings) {
			s.Suspend, s.SuspendFrom, s.BuildHistoryLimit, s.BuildHistoryLimitFrom = true, fromAnnSuspend, 0, fromSpecHistory
		}),
	}, {
		name:        "an invalid auto-update annotation holds rebuilds",
		annotations: map[string]string{AnnotationAutoUpdateMiddleware: "no"},
		want: with(func(s *Settings) {
			s.AutoUpdateMiddleware, s.AutoUpdateFrom, s.HoldRebuilds = ptr.To(false), fromAnnAuto, true
		}),
		wantInvalid: []string{`annotation functions.dev/auto-update-middleware: "no" is not true or false: no rebuild until it is fixed`},
	}, {
		name:        "an invalid suspend annotation holds rebuilds, checks go on",
		annotations: map[string]string{AnnotationSuspend: "yes"},
		want:        with(func(s *Settings) { s.SuspendFrom, s.HoldRebuilds = fromAnnSuspend, true }),
		wantInvalid: []string{`annotation functions.dev/suspend: "yes" is not true or false: checked, but no rebuild until it is fixed`},
	}, {
		name:        "an invalid build history limit deletes nothing",
		annotations: map[string]string{AnnotationBuildHistoryLimit: "21"},
		want:        with(func(s *Settings) { s.BuildHistoryLimit, s.BuildHistoryLimitFrom = -1, fromAnnHistory }),
		wantInvalid: []string{`annotation functions.dev/build-history-limit: "21" is not an integer from 0 to 20: no finished PipelineRun is deleted`},
	}, {
		name:        "a negative or empty build history limit is invalid",
		annotations: map[string]string{AnnotationBuildHistoryLimit: "-1", AnnotationSuspend: ""},
		want: with(func(s *Settings) {
			s.BuildHistoryLimit, s.BuildHistoryLimitFrom, s.SuspendFrom, s.HoldRebuilds = -1, fromAnnHistory, fromAnnSuspend, true
		}),
		wantInvalid: []string{`functions.dev/build-history-limit: "-1"`, `functions.dev/suspend: "" is not true or false`},
	}, {
		name:        "a long invalid value is quoted cut",
		annotations: map[string]string{AnnotationSuspend: strings.Repeat("é", 100)},
		want:        with(func(s *Settings) { s.SuspendFrom, s.HoldRebuilds = fromAnnSuspend, true }),
		wantInvalid: []string{`annotation functions.dev/suspend: "` + strings.Repeat("é", 32) + `"… (200 bytes) is not true or false`},
	}, {
		name: "an invalid annotation the spec overrides is reported, but holds nothing",
		spec: FunctionSpec{AutoUpdateMiddleware: ptr.To(true), Suspend: true, BuildHistoryLimit: ptr.To[int32](2)},
		annotations: map[string]string{AnnotationAutoUpdateMiddleware: "off", AnnotationSuspend: "on",
			AnnotationBuildHistoryLimit: "many"},
		want: Settings{AutoUpdateMiddleware: ptr.To(true), AutoUpdateFrom: fromSpecAuto, Suspend: true, SuspendFrom: fromSpecSuspend,
			BuildHistoryLimit: 2, BuildHistoryLimitFrom: fromSpecHistory},
		wantInvalid: []string{
			`annotation functions.dev/auto-update-middleware: "off" is not true or false (spec.autoUpdateMiddleware applies now)`,
			`annotation functions.dev/build-history-limit: "many" is not an integer from 0 to 20 (spec.buildHistoryLimit applies now)`,
			`annotation functions.dev/suspend: "on" is not true or false (spec.suspend applies now)`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn := &Function{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}, Spec: tt.spec}
			got := fn.Settings()
			invalid := got.Invalid
			got.Invalid = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Settings() (-want +got):\n%s", diff)
			}
			if len(invalid) != len(tt.wantInvalid) {
				t.Fatalf("Invalid = %q, want %d entries like %q", invalid, len(tt.wantInvalid), tt.wantInvalid)
			}
			for i, w := range tt.wantInvalid {
				if !strings.Contains(invalid[i], w) {
					t.Errorf("Invalid[%d] = %q, want it to contain %q", i, invalid[i], w)
				}
			}
		})
	}
}

func TestSettings_AutoUpdate(t *testing.T) {
	tests := []struct {
		name            string
		spec            FunctionSpec
		annotations     map[string]string
		operatorDefault bool
		want            AutoUpdateStatus
		followsOperator bool
	}{
		{name: "operator default on", operatorDefault: true, want: AutoUpdateStatus{Enabled: true, Source: AutoUpdateSourceOperatorConfig}, followsOperator: true},
		{name: "operator default off", want: AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceOperatorConfig}, followsOperator: true},
		{name: "spec", spec: FunctionSpec{AutoUpdateMiddleware: ptr.To(false)}, operatorDefault: true,
			want: AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceFunction}},
		{name: "annotation", annotations: map[string]string{AnnotationAutoUpdateMiddleware: "false"}, operatorDefault: true,
			want: AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceAnnotation}},
		{name: "spec over annotation", spec: FunctionSpec{AutoUpdateMiddleware: ptr.To(true)},
			annotations: map[string]string{AnnotationAutoUpdateMiddleware: "false"},
			want:        AutoUpdateStatus{Enabled: true, Source: AutoUpdateSourceFunction}},
		{name: "an invalid suspend annotation holds rebuilds even where the operator would", annotations: map[string]string{AnnotationSuspend: "paused"},
			operatorDefault: true, want: AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceAnnotation}},
		{name: "an invalid suspend annotation holds rebuilds over spec.autoUpdateMiddleware",
			spec: FunctionSpec{AutoUpdateMiddleware: ptr.To(true)}, annotations: map[string]string{AnnotationSuspend: "paused"},
			want: AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceAnnotation}},
		{name: "an invalid auto-update annotation holds rebuilds", annotations: map[string]string{AnnotationAutoUpdateMiddleware: "sometimes"},
			operatorDefault: true, want: AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceAnnotation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := (&Function{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}, Spec: tt.spec}).Settings()
			if diff := cmp.Diff(tt.want, s.AutoUpdate(tt.operatorDefault)); diff != "" {
				t.Errorf("AutoUpdate(%t) (-want +got):\n%s", tt.operatorDefault, diff)
			}
			if got := s.FollowsOperatorDefault(); got != tt.followsOperator {
				t.Errorf("FollowsOperatorDefault() = %t, want %t", got, tt.followsOperator)
			}
		})
	}
}

func TestFunctionStatus_MarkSettings(t *testing.T) {
	fs := initialized()
	fs.MarkSourceReady("main", testCommit)
	readyBefore := *fs.GetCondition(FunctionConditionReady)

	bad := (&Function{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		AnnotationSuspend: "yes", AnnotationBuildHistoryLimit: "ten"}}}).Settings()
	fs.MarkSettings(bad)
	c := fs.GetCondition(FunctionConditionSettingsValid)
	if c == nil || !c.IsFalse() || c.Reason != ReasonInvalidAnnotation || c.Severity != apis.ConditionSeverityWarning {
		t.Fatalf("SettingsValid = %+v, want False, %s, Warning", c, ReasonInvalidAnnotation)
	}
	for _, want := range []string{AnnotationSuspend + `: "yes"`, AnnotationBuildHistoryLimit + `: "ten"`} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("SettingsValid message %q does not name %s", c.Message, want)
		}
	}
	if r := fs.GetCondition(FunctionConditionReady); r.Status != readyBefore.Status || r.Reason != readyBefore.Reason {
		t.Errorf("Ready = %+v after MarkSettings, want it unchanged (%+v): SettingsValid never gates Ready", r, readyBefore)
	}

	fs.MarkSettings((&Function{}).Settings())
	if c := fs.GetCondition(FunctionConditionSettingsValid); c != nil {
		t.Errorf("SettingsValid = %+v with valid settings, want none", c)
	}
	// The four conditions that gate Ready are still there.
	for _, ct := range allConditions {
		if fs.GetCondition(ct) == nil {
			t.Errorf("%s gone after MarkSettings", ct)
		}
	}
}

func TestFunctionStatus_MarkSuspendedBy(t *testing.T) {
	fs := initialized()
	fs.MarkSuspendedBy("annotation " + AnnotationSuspend)
	c := fs.GetCondition(FunctionConditionSuspended)
	if c == nil || !c.IsTrue() || !strings.HasPrefix(c.Message, "annotation functions.dev/suspend is true:") {
		t.Errorf("Suspended = %+v, want True naming the annotation", c)
	}
	fs.MarkSuspended()
	if c := fs.GetCondition(FunctionConditionSuspended); c == nil || c.Status != corev1.ConditionTrue || !strings.HasPrefix(c.Message, "spec.suspend is true:") {
		t.Errorf("Suspended = %+v, want True naming spec.suspend", c)
	}
}

// TestServiceReadiness_UnmarshalJSON decodes the strings the operator writes and the
// boolean that versions before func v0.50 wrote.
func TestServiceReadiness_UnmarshalJSON(t *testing.T) {
	for in, want := range map[string]ServiceReadiness{
		`{"ready":"True"}`: ServiceReadyTrue, `{"ready":"False"}`: ServiceReadyFalse, `{"ready":"Unknown"}`: ServiceReadyUnknown,
		`{"ready":true}`: ServiceReadyTrue, `{"ready":false}`: ServiceReadyFalse, `{}`: "",
	} {
		var got ServiceStatus
		if err := json.Unmarshal([]byte(in), &got); err != nil || got.Ready != want {
			t.Errorf("%s: Ready = %q, %v; want %q", in, got.Ready, err, want)
		}
	}
	var got ServiceStatus
	if err := json.Unmarshal([]byte(`{"ready":1}`), &got); err == nil {
		t.Errorf("a number decoded as %q, want an error", got.Ready)
	}
	out, err := json.Marshal(ServiceStatus{Ready: ServiceReadyTrue})
	if err != nil || string(out) != `{"ready":"True"}` {
		t.Errorf("marshalled as %s, %v; want a string", out, err)
	}
}

func TestSettings_DeployOnCommit(t *testing.T) {
	for _, tt := range []struct {
		name       string
		set        *bool
		def        bool
		wantOn     bool
		wantSource string
	}{
		{name: "no annotation: the ConfigMap's default", def: true, wantOn: true, wantSource: AutoUpdateSourceOperatorConfig},
		{name: "annotation off over a default on", set: ptr.To(false), def: true, wantOn: false, wantSource: AutoUpdateSourceAnnotation},
		{name: "annotation on over a default off", set: ptr.To(true), def: false, wantOn: true, wantSource: AutoUpdateSourceAnnotation},
	} {
		t.Run(tt.name, func(t *testing.T) {
			on, source := Settings{DeployOnCommitSet: tt.set}.DeployOnCommit(tt.def)
			if on != tt.wantOn || source != tt.wantSource {
				t.Errorf("DeployOnCommit(%v) = %v, %s; want %v, %s", tt.def, on, source, tt.wantOn, tt.wantSource)
			}
		})
	}
}
