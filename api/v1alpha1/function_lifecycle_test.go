package v1alpha1

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

const (
	testCommit      = "0123456789abcdef0123456789abcdef01234567"
	testShortCommit = "0123456789ab"
)

var allConditions = []apis.ConditionType{
	FunctionConditionReady,
	FunctionConditionSourceReady,
	FunctionConditionDeployed,
	FunctionConditionMiddlewareUpToDate,
	FunctionConditionServiceReady,
}

// cond is the part of a condition the tests compare.
type cond struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// conds returns every condition of fs by type, without times and severities.
func conds(fs *FunctionStatus) map[apis.ConditionType]cond {
	m := map[apis.ConditionType]cond{}
	for _, c := range fs.Conditions {
		m[c.Type] = cond{Status: c.Status, Reason: c.Reason, Message: c.Message}
	}
	return m
}

func initialized() *FunctionStatus {
	fs := &FunctionStatus{}
	fs.InitializeConditions()
	return fs
}

func TestFunctionStatus_InitializeConditions(t *testing.T) {
	fs := initialized()
	want := map[apis.ConditionType]cond{}
	for _, c := range allConditions {
		want[c] = cond{Status: corev1.ConditionUnknown}
	}
	if diff := cmp.Diff(want, conds(fs)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if fs.IsReady() {
		t.Error("IsReady() = true for fresh conditions")
	}

	// Initializing again keeps what was decided.
	fs.MarkSourceFailed(ReasonBranchNotFound, "no branch")
	fs.InitializeConditions()
	if diff := cmp.Diff(cond{Status: corev1.ConditionFalse, Reason: ReasonBranchNotFound, Message: "no branch"},
		conds(fs)[FunctionConditionSourceReady]); diff != "" {
		t.Errorf("SourceReady after a second InitializeConditions (-want +got):\n%s", diff)
	}
}

func TestFunctionStatus_MarkSourceReady(t *testing.T) {
	tests := []struct {
		name    string
		commit  string
		wantMsg string
	}{
		{"full commit is shortened to 12 characters", testCommit, "func.yaml read from branch main at commit " + testShortCommit},
		{"short commit is kept", "abc123", "func.yaml read from branch main at commit abc123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			fs.MarkSourceReady("main", tt.commit)

			got := conds(fs)
			if diff := cmp.Diff(cond{Status: corev1.ConditionTrue, Reason: ReasonFuncYamlRead, Message: tt.wantMsg},
				got[FunctionConditionSourceReady]); diff != "" {
				t.Errorf("SourceReady (-want +got):\n%s", diff)
			}
			// The other conditions are still Unknown, so Ready is too.
			for _, c := range []apis.ConditionType{FunctionConditionReady, FunctionConditionDeployed,
				FunctionConditionMiddlewareUpToDate, FunctionConditionServiceReady} {
				if diff := cmp.Diff(corev1.ConditionUnknown, got[c].Status); diff != "" {
					t.Errorf("%s status (-want +got):\n%s", c, diff)
				}
			}
			if fs.IsReady() {
				t.Error("IsReady() = true with Deployed, MiddlewareUpToDate and ServiceReady Unknown")
			}
		})
	}
}

func TestFunctionStatus_Ready(t *testing.T) {
	trueCond := cond{Status: corev1.ConditionTrue}
	tests := []struct {
		name      string
		mark      func(fs *FunctionStatus)
		wantReady cond
	}{{
		name: "all four True",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceReady("main", testCommit)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionDeployed)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionMiddlewareUpToDate)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionServiceReady)
		},
		wantReady: trueCond,
	}, {
		name: "three True, ServiceReady Unknown",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceReady("main", testCommit)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionDeployed)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionMiddlewareUpToDate)
			fs.MarkServiceReadyUnknown("Waiting", "revision %s is starting", "hello-00001")
		},
		wantReady: cond{Status: corev1.ConditionUnknown, Reason: "Waiting", Message: "revision hello-00001 is starting"},
	}, {
		name: "source fails after everything was True",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceReady("main", testCommit)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionDeployed)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionMiddlewareUpToDate)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionServiceReady)
			fs.MarkSourceFailed(ReasonFuncYamlInvalid, "func.yaml has no %s", "name")
		},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonFuncYamlInvalid, Message: "func.yaml has no name"},
	}, {
		name: "source fails on fresh conditions",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceFailed(ReasonGitCloneFailed, "cloning %s: %s", "https://example.com/r.git", "timeout")
		},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonGitCloneFailed, Message: "cloning https://example.com/r.git: timeout"},
	}, {
		name: "a failed source outranks Unknown downstream conditions",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceFailed(ReasonPathNotFound, "no path")
			fs.MarkDownstreamWaitingForSource()
			fs.MarkMiddlewareUnknown(ReasonRegistryUnreachable, "registry down")
		},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonPathNotFound, Message: "no path"},
	}, {
		name: "source unknown",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceUnknown(ReasonReconciling, "reading the source failed: %s", "boom")
		},
		wantReady: cond{Status: corev1.ConditionUnknown, Reason: ReasonReconciling, Message: "reading the source failed: boom"},
	}, {
		name: "source recovers",
		mark: func(fs *FunctionStatus) {
			fs.MarkSourceFailed(ReasonFuncYamlInvalid, "bad")
			fs.MarkSourceReady("main", testCommit)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionDeployed)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionMiddlewareUpToDate)
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionServiceReady)
		},
		wantReady: trueCond,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			tt.mark(fs)
			if diff := cmp.Diff(tt.wantReady, conds(fs)[FunctionConditionReady]); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantReady.Status == corev1.ConditionTrue, fs.IsReady()); diff != "" {
				t.Errorf("IsReady() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunctionStatus_MarkSourceFailed(t *testing.T) {
	fs := initialized()
	fs.MarkSourceFailed(ReasonBranchNotFound, "branch %q not found in repository %s (branches: %s)", "dev", "https://example.com/r.git", "main")
	want := cond{Status: corev1.ConditionFalse, Reason: ReasonBranchNotFound,
		Message: `branch "dev" not found in repository https://example.com/r.git (branches: main)`}
	got := conds(fs)
	if diff := cmp.Diff(want, got[FunctionConditionSourceReady]); diff != "" {
		t.Errorf("SourceReady (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got[FunctionConditionReady]); diff != "" {
		t.Errorf("Ready (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&want, toCond(fs.GetCondition(FunctionConditionSourceReady))); diff != "" {
		t.Errorf("GetCondition(SourceReady) (-want +got):\n%s", diff)
	}
}

func toCond(c *apis.Condition) *cond {
	if c == nil {
		return nil
	}
	return &cond{Status: c.Status, Reason: c.Reason, Message: c.Message}
}

func TestFunctionStatus_LastTransitionTime(t *testing.T) {
	past := apis.VolatileTime{Inner: metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))}
	// setPast sets the LastTransitionTime of every condition to past.
	setPast := func(fs *FunctionStatus) {
		for i := range fs.Conditions {
			fs.Conditions[i].LastTransitionTime = past
		}
	}
	ltt := func(fs *FunctionStatus, t apis.ConditionType) apis.VolatileTime {
		c := fs.GetCondition(t)
		if c == nil {
			return apis.VolatileTime{}
		}
		return c.LastTransitionTime
	}

	tests := []struct {
		name string
		// first leads to the state whose times are set to the past.
		first func(fs *FunctionStatus)
		// then marks again.
		then       func(fs *FunctionStatus)
		wantMoved  []apis.ConditionType
		wantStayed []apis.ConditionType
		// wantSameConds is true when the conditions must end as they were.
		wantSameConds bool
	}{{
		name:          "same MarkSourceReady again",
		first:         func(fs *FunctionStatus) { fs.MarkSourceReady("main", testCommit) },
		then:          func(fs *FunctionStatus) { fs.MarkSourceReady("main", testCommit) },
		wantStayed:    allConditions,
		wantSameConds: true,
	}, {
		name:          "same MarkSourceFailed again",
		first:         func(fs *FunctionStatus) { fs.MarkSourceFailed(ReasonGitCloneFailed, "cloning %s failed", "x") },
		then:          func(fs *FunctionStatus) { fs.MarkSourceFailed(ReasonGitCloneFailed, "cloning %s failed", "x") },
		wantStayed:    allConditions,
		wantSameConds: true,
	}, {
		name:  "same MarkMiddlewareOutdated again",
		first: func(fs *FunctionStatus) { fs.MarkMiddlewareOutdated("v1 is available") },
		then:  func(fs *FunctionStatus) { fs.MarkMiddlewareOutdated("v1 is available") },
		wantStayed: []apis.ConditionType{FunctionConditionSourceReady, FunctionConditionDeployed,
			FunctionConditionMiddlewareUpToDate, FunctionConditionServiceReady, FunctionConditionReady},
		wantSameConds: true,
	}, {
		name:       "ready to failed",
		first:      func(fs *FunctionStatus) { fs.MarkSourceReady("main", testCommit) },
		then:       func(fs *FunctionStatus) { fs.MarkSourceFailed(ReasonFuncYamlInvalid, "bad") },
		wantMoved:  []apis.ConditionType{FunctionConditionSourceReady, FunctionConditionReady},
		wantStayed: []apis.ConditionType{FunctionConditionDeployed, FunctionConditionMiddlewareUpToDate, FunctionConditionServiceReady},
	}, {
		name:       "new commit changes the message",
		first:      func(fs *FunctionStatus) { fs.MarkSourceReady("main", testCommit) },
		then:       func(fs *FunctionStatus) { fs.MarkSourceReady("main", "fedcba9876543210fedcba9876543210fedcba98") },
		wantMoved:  []apis.ConditionType{FunctionConditionSourceReady},
		wantStayed: []apis.ConditionType{FunctionConditionReady, FunctionConditionDeployed},
	}, {
		name:      "failure with another message",
		first:     func(fs *FunctionStatus) { fs.MarkSourceFailed(ReasonGitCloneFailed, "one") },
		then:      func(fs *FunctionStatus) { fs.MarkSourceFailed(ReasonGitCloneFailed, "two") },
		wantMoved: []apis.ConditionType{FunctionConditionSourceReady, FunctionConditionReady},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			tt.first(fs)
			setPast(fs)
			before := conds(fs)
			tt.then(fs)
			for _, c := range tt.wantStayed {
				if diff := cmp.Diff(past, ltt(fs, c)); diff != "" {
					t.Errorf("%s LastTransitionTime moved (-want +got):\n%s", c, diff)
				}
			}
			for _, c := range tt.wantMoved {
				if got := ltt(fs, c); !got.Inner.After(past.Inner.Time) {
					t.Errorf("%s LastTransitionTime = %v, want later than %v", c, got.Inner, past.Inner)
				}
			}
			if tt.wantSameConds {
				if diff := cmp.Diff(before, conds(fs)); diff != "" {
					t.Errorf("conditions changed by the same mark (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestFunctionStatus_DeploymentMarks(t *testing.T) {
	outdated := cond{Status: corev1.ConditionFalse, Reason: ReasonMiddlewareOutdated, Message: "v1 is available"}
	sourceReady := cond{Status: corev1.ConditionTrue, Reason: ReasonFuncYamlRead,
		Message: "func.yaml read from branch main at commit " + testShortCommit}
	notDeployed := cond{Status: corev1.ConditionFalse, Reason: ReasonNotDeployed,
		Message: `no Knative Service, and no Deployment and Service of func's raw or keda deployer, named "hello" in namespace "team-a": deploy the function (func deploy)`}
	tests := []struct {
		name string
		mark func(fs *FunctionStatus)
		want map[apis.ConditionType]cond
	}{{
		name: "not deployed: Ready is False with the reason, ServiceReady and the middleware wait",
		mark: func(fs *FunctionStatus) {
			fs.MarkNotDeployed("hello", "team-a")
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        sourceReady,
			FunctionConditionDeployed:           notDeployed,
			FunctionConditionMiddlewareUpToDate: {Status: corev1.ConditionUnknown, Reason: ReasonNotDeployed, Message: "the function is not deployed"},
			FunctionConditionServiceReady:       {Status: corev1.ConditionUnknown, Reason: ReasonNotDeployed, Message: "the function is not deployed"},
			FunctionConditionReady:              notDeployed,
		},
	}, {
		name: "deployed and ready, middleware outdated: Ready says so",
		mark: func(fs *FunctionStatus) {
			fs.MarkDeployed("Knative Service hello", "registry.example/hello@sha256:abc", "")
			fs.MarkServiceReady("Knative Service hello is ready")
			fs.MarkMiddlewareOutdated("v1 is available")
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        sourceReady,
			FunctionConditionDeployed:           {Status: corev1.ConditionTrue, Reason: ReasonDeployed, Message: "Knative Service hello runs registry.example/hello@sha256:abc"},
			FunctionConditionMiddlewareUpToDate: outdated,
			FunctionConditionServiceReady:       {Status: corev1.ConditionTrue, Reason: ReasonServiceReady, Message: "Knative Service hello is ready"},
			FunctionConditionReady:              outdated,
		},
	}, {
		name: "update skipped by policy: outdated (False, severity Info), Ready is True, as upstream",
		mark: func(fs *FunctionStatus) {
			fs.MarkDeployed("Knative Service hello", "img", "")
			fs.MarkServiceReady("Knative Service hello is ready")
			fs.MarkAutoUpdateDisabled("auto-update is off")
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        sourceReady,
			FunctionConditionDeployed:           {Status: corev1.ConditionTrue, Reason: ReasonDeployed, Message: "Knative Service hello runs img"},
			FunctionConditionMiddlewareUpToDate: {Status: corev1.ConditionFalse, Reason: ReasonAutoUpdateDisabled, Message: "auto-update is off"},
			FunctionConditionServiceReady:       {Status: corev1.ConditionTrue, Reason: ReasonServiceReady, Message: "Knative Service hello is ready"},
			FunctionConditionReady:              {Status: corev1.ConditionTrue},
		},
	}, {
		name: "service not ready: its reason and message carried over to Ready",
		mark: func(fs *FunctionStatus) {
			fs.MarkDeployed("Knative Service hello", "img", "")
			fs.MarkMiddlewareUpToDate("v1 is the newest")
			fs.MarkServiceNotReady("RevisionMissing", "Configuration %q does not have any ready Revision.", "hello")
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        sourceReady,
			FunctionConditionDeployed:           {Status: corev1.ConditionTrue, Reason: ReasonDeployed, Message: "Knative Service hello runs img"},
			FunctionConditionMiddlewareUpToDate: {Status: corev1.ConditionTrue, Reason: ReasonUpToDate, Message: "v1 is the newest"},
			FunctionConditionServiceReady:       {Status: corev1.ConditionFalse, Reason: "RevisionMissing", Message: `Configuration "hello" does not have any ready Revision.`},
			FunctionConditionReady:              {Status: corev1.ConditionFalse, Reason: "RevisionMissing", Message: `Configuration "hello" does not have any ready Revision.`},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			fs.MarkSourceReady("main", testCommit)
			tt.mark(fs)
			if diff := cmp.Diff(tt.want, conds(fs)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunctionStatus_MarkDownstreamWaitingForSource(t *testing.T) {
	const waiting = "waiting for the function's source to be ready"
	waitingCond := cond{Status: corev1.ConditionUnknown, Reason: ReasonSourceNotReady, Message: waiting}
	middlewareUnknown := cond{Status: corev1.ConditionUnknown, Reason: ReasonRegistryUnreachable, Message: "registry down"}
	notDeployed := cond{Status: corev1.ConditionFalse, Reason: ReasonNotDeployed,
		Message: `no Knative Service, and no Deployment and Service of func's raw or keda deployer, named "fn" in namespace "ns": deploy the function (func deploy)`}
	serviceWaits := cond{Status: corev1.ConditionUnknown, Reason: ReasonNotDeployed, Message: "the function is not deployed"}

	tests := []struct {
		name  string
		setup func() *FunctionStatus
		want  map[apis.ConditionType]cond
	}{{
		name:  "no conditions at all",
		setup: func() *FunctionStatus { return &FunctionStatus{} },
		want: map[apis.ConditionType]cond{
			FunctionConditionDeployed:           waitingCond,
			FunctionConditionMiddlewareUpToDate: waitingCond,
			FunctionConditionServiceReady:       waitingCond,
			FunctionConditionReady:              waitingCond,
		},
	}, {
		name:  "initialized conditions have no reason yet",
		setup: initialized,
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        {Status: corev1.ConditionUnknown},
			FunctionConditionDeployed:           waitingCond,
			FunctionConditionMiddlewareUpToDate: waitingCond,
			FunctionConditionServiceReady:       waitingCond,
			FunctionConditionReady:              waitingCond,
		},
	}, {
		name: "decided conditions keep their last observation",
		setup: func() *FunctionStatus {
			fs := initialized()
			fs.MarkNotDeployed("fn", "ns")
			return fs
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        {Status: corev1.ConditionUnknown},
			FunctionConditionDeployed:           notDeployed,
			FunctionConditionMiddlewareUpToDate: serviceWaits,
			FunctionConditionServiceReady:       serviceWaits,
			FunctionConditionReady:              notDeployed,
		},
	}, {
		name: "only the undecided ones change",
		setup: func() *FunctionStatus {
			fs := initialized()
			functionCondSet.Manage(fs).MarkTrue(FunctionConditionDeployed)
			fs.MarkMiddlewareUnknown(ReasonRegistryUnreachable, "%s", middlewareUnknown.Message)
			return fs
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        {Status: corev1.ConditionUnknown},
			FunctionConditionDeployed:           {Status: corev1.ConditionTrue},
			FunctionConditionMiddlewareUpToDate: middlewareUnknown,
			FunctionConditionServiceReady:       waitingCond,
			FunctionConditionReady:              waitingCond,
		},
	}, {
		name: "a failed source keeps Ready False",
		setup: func() *FunctionStatus {
			fs := initialized()
			fs.MarkSourceFailed(ReasonAuthSecretNotFound, "no secret")
			return fs
		},
		want: map[apis.ConditionType]cond{
			FunctionConditionSourceReady:        {Status: corev1.ConditionFalse, Reason: ReasonAuthSecretNotFound, Message: "no secret"},
			FunctionConditionDeployed:           waitingCond,
			FunctionConditionMiddlewareUpToDate: waitingCond,
			FunctionConditionServiceReady:       waitingCond,
			FunctionConditionReady:              {Status: corev1.ConditionFalse, Reason: ReasonAuthSecretNotFound, Message: "no secret"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := tt.setup()
			fs.MarkDownstreamWaitingForSource()
			if diff := cmp.Diff(tt.want, conds(fs)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunctionStatus_MarkUnknownHelpers(t *testing.T) {
	tests := []struct {
		name string
		mark func(fs *FunctionStatus, reason, format string, a ...interface{})
		typ  apis.ConditionType
	}{
		{"MarkSourceUnknown", (*FunctionStatus).MarkSourceUnknown, FunctionConditionSourceReady},
		{"MarkDeployedUnknown", (*FunctionStatus).MarkDeployedUnknown, FunctionConditionDeployed},
		{"MarkMiddlewareUnknown", (*FunctionStatus).MarkMiddlewareUnknown, FunctionConditionMiddlewareUpToDate},
		{"MarkServiceReadyUnknown", (*FunctionStatus).MarkServiceReadyUnknown, FunctionConditionServiceReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			tt.mark(fs, "SomeReason", "checking %s #%d", "thing", 2)
			want := map[apis.ConditionType]cond{}
			for _, c := range allConditions {
				want[c] = cond{Status: corev1.ConditionUnknown}
			}
			want[tt.typ] = cond{Status: corev1.ConditionUnknown, Reason: "SomeReason", Message: "checking thing #2"}
			want[FunctionConditionReady] = want[tt.typ]
			if diff := cmp.Diff(want, conds(fs)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunctionStatus_AddHistory(t *testing.T) {
	entry := func(i int) HistoryEntry {
		return HistoryEntry{
			Time:    metav1.NewTime(time.Date(2024, 1, 1, 0, i, 0, 0, time.UTC)),
			Message: fmt.Sprintf("event %d", i),
		}
	}
	// want returns entries newest..oldest.
	want := func(newest, oldest int) []HistoryEntry {
		var es []HistoryEntry
		for i := newest; i >= oldest; i-- {
			es = append(es, entry(i))
		}
		return es
	}
	tests := []struct {
		name  string
		added int
		want  []HistoryEntry
	}{
		{"one", 1, want(0, 0)},
		{"three, newest first", 3, want(2, 0)},
		{"exactly the maximum", MaxHistory, want(MaxHistory-1, 0)},
		{"one more than the maximum drops the oldest", MaxHistory + 1, want(MaxHistory, 1)},
		{"many more than the maximum", 3 * MaxHistory, want(3*MaxHistory-1, 2*MaxHistory)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &FunctionStatus{}
			for i := 0; i < tt.added; i++ {
				fs.AddHistory(entry(i))
			}
			if diff := cmp.Diff(tt.want, fs.History); diff != "" {
				t.Errorf("History (-want +got):\n%s", diff)
			}
			if len(fs.History) > MaxHistory {
				t.Errorf("len(History) = %d, more than %d", len(fs.History), MaxHistory)
			}
		})
	}
	if MaxHistory != 20 {
		t.Errorf("MaxHistory = %d, the CRD says at most 20", MaxHistory)
	}
}

func TestRepository_CleanPath(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"", ""},
		{".", ""},
		{"./", ""},
		{"/", ""},
		{"/a/", "a"},
		{"a", "a"},
		{"./fns/hello", "fns/hello"},
		{"fns/hello/", "fns/hello"},
		{"fns/hello", "fns/hello"},
		{"fns//hello", "fns/hello"},
		{"././fns/hello", "fns/hello"},
		{".//fns/hello", "fns/hello"},
		{"fns/./hello/.", "fns/hello"},
		{".func", ".func"},
		{"..hidden/x", "..hidden/x"},
		// The CRD refuses '..' segments; cleaning never turns one into a path that exists.
		{"../x", "../x"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := Repository{Path: tt.path}.CleanPath()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CleanPath(%q) (-want +got):\n%s", tt.path, diff)
			}
			// dir, upstream's newer name, is read the same.
			if got := (Repository{Dir: tt.path}).CleanPath(); got != tt.want {
				t.Errorf("CleanPath of dir %q = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

// TestRepository_Names: both names of each pair read the same through the accessors,
// and a branch is named as a full ref, so that it is never taken for a tag.
func TestRepository_Names(t *testing.T) {
	tests := []struct {
		name          string
		repo          Repository
		wantReference string
		wantDirectory string
	}{
		{name: "neither", repo: Repository{}},
		{name: "branch and path", repo: Repository{Branch: "main", Path: "fns/a"}, wantReference: "refs/heads/main", wantDirectory: "fns/a"},
		{name: "revision and dir", repo: Repository{Revision: "main", Dir: "fns/a"}, wantReference: "main", wantDirectory: "fns/a"},
		{name: "revision as a full ref", repo: Repository{Revision: "refs/tags/v1"}, wantReference: "refs/tags/v1"},
		// The API server refuses both of a pair; were both stored, the newer name wins.
		{name: "both of each pair", repo: Repository{Branch: "a", Revision: "b", Path: "x", Dir: "y"}, wantReference: "b", wantDirectory: "y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := [2]string{tt.repo.Reference(), tt.repo.Directory()}
			if diff := cmp.Diff([2]string{tt.wantReference, tt.wantDirectory}, got); diff != "" {
				t.Errorf("[Reference, Directory] (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFunction_KRShaped(t *testing.T) {
	f := &Function{}
	f.Namespace, f.Name = "team-a", "hello"

	var kr duckv1.KRShaped = f
	st := kr.GetStatus()
	if st != &f.Status.Status {
		t.Fatal("GetStatus() does not point into the Function")
	}
	st.ObservedGeneration = 7
	if diff := cmp.Diff(int64(7), f.Status.ObservedGeneration); diff != "" {
		t.Errorf("ObservedGeneration set through GetStatus (-want +got):\n%s", diff)
	}

	f.Status.InitializeConditions()
	f.Status.MarkSourceFailed(ReasonUnsafeFuncYaml, "unsafe")
	// The duck-typed view sees the same conditions.
	got := kr.GetConditionSet().Manage(kr.GetStatus()).GetTopLevelCondition()
	if diff := cmp.Diff(&cond{Status: corev1.ConditionFalse, Reason: ReasonUnsafeFuncYaml, Message: "unsafe"}, toCond(got)); diff != "" {
		t.Errorf("top-level condition via KRShaped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(FunctionConditionReady, got.Type); diff != "" {
		t.Errorf("top-level condition type (-want +got):\n%s", diff)
	}

	wantGVK := schema.GroupVersionKind{Group: SchemeGroupVersion.Group, Version: SchemeGroupVersion.Version, Kind: "Function"}
	if diff := cmp.Diff(wantGVK, f.GetGroupVersionKind()); diff != "" {
		t.Errorf("GetGroupVersionKind() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("team-a/hello", f.String()); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}

	// Conditions are kept sorted by type, so the status does not churn.
	types := make([]apis.ConditionType, 0, len(f.Status.Conditions))
	for _, c := range f.Status.Conditions {
		types = append(types, c.Type)
	}
	wantTypes := []apis.ConditionType{FunctionConditionDeployed, FunctionConditionMiddlewareUpToDate,
		FunctionConditionReady, FunctionConditionServiceReady, FunctionConditionSourceReady}
	if diff := cmp.Diff(wantTypes, types, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("condition order (-want +got):\n%s", diff)
	}
}

func TestFunctionStatus_RebuildMarks(t *testing.T) {
	deployed := cond{Status: corev1.ConditionTrue, Reason: ReasonDeployed, Message: "Knative Service hello runs img"}
	serviceReady := cond{Status: corev1.ConditionTrue, Reason: ReasonServiceReady, Message: "Knative Service hello is ready"}
	tests := []struct {
		name      string
		mark      func(fs *FunctionStatus)
		wantMw    cond
		wantReady cond
	}{{
		name:      "queued: outdated, so Ready is False with the queue's reason",
		mark:      func(fs *FunctionStatus) { fs.MarkRebuildQueued("position %d of %d", 3, 7) },
		wantMw:    cond{Status: corev1.ConditionFalse, Reason: ReasonRebuildQueued, Message: "position 3 of 7"},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonRebuildQueued, Message: "position 3 of 7"},
	}, {
		name:      "rebuilding: still outdated (False) until the new image serves, and Ready with it",
		mark:      func(fs *FunctionStatus) { fs.MarkRebuilding("PipelineRun %s runs", "hello-run-x") },
		wantMw:    cond{Status: corev1.ConditionFalse, Reason: ReasonRebuilding, Message: "PipelineRun hello-run-x runs"},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonRebuilding, Message: "PipelineRun hello-run-x runs"},
	}, {
		name:      "build failed: False, the old revision serves",
		mark:      func(fs *FunctionStatus) { fs.MarkBuildFailed("task %s failed", "build") },
		wantMw:    cond{Status: corev1.ConditionFalse, Reason: ReasonBuildFailed, Message: "task build failed"},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonBuildFailed, Message: "task build failed"},
	}, {
		name:      "not possible: False with why",
		mark:      func(fs *FunctionStatus) { fs.MarkRebuildNotPossible("Tekton is not installed") },
		wantMw:    cond{Status: corev1.ConditionFalse, Reason: ReasonRebuildNotPossible, Message: "Tekton is not installed"},
		wantReady: cond{Status: corev1.ConditionFalse, Reason: ReasonRebuildNotPossible, Message: "Tekton is not installed"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			fs.MarkSourceReady("main", testCommit)
			fs.MarkDeployed("Knative Service hello", "img", "")
			fs.MarkServiceReady("Knative Service hello is ready")
			fs.MarkMiddlewareOutdated("v2 is available")
			tt.mark(fs)
			got := conds(fs)
			if diff := cmp.Diff(tt.wantMw, got[FunctionConditionMiddlewareUpToDate]); diff != "" {
				t.Errorf("MiddlewareUpToDate (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantReady, got[FunctionConditionReady]); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			for _, c := range []apis.ConditionType{FunctionConditionSourceReady, FunctionConditionDeployed, FunctionConditionServiceReady} {
				if want := map[apis.ConditionType]cond{FunctionConditionDeployed: deployed, FunctionConditionServiceReady: serviceReady}[c]; want.Reason != "" && got[c] != want {
					t.Errorf("%s changed: %+v", c, got[c])
				}
			}
		})
	}
}

// TestFunctionStatus_NonGatingMiddleware: a MiddlewareUpToDate of severity Info (auto-update
// off, middleware in the function's source) never gates Ready, whatever is marked after it,
// and one of severity Error does again once marked.
func TestFunctionStatus_NonGatingMiddleware(t *testing.T) {
	ready := func(fs *FunctionStatus) {
		fs.MarkSourceReady("main", testCommit)
		fs.MarkDeployed("Knative Service hello", "img", "")
		fs.MarkServiceReady("Knative Service hello is ready")
	}
	tests := []struct {
		name         string
		mark         func(fs *FunctionStatus)
		wantMw       cond
		wantSeverity apis.ConditionSeverity
		wantReady    cond
		wantOutdated bool
	}{{
		name:         "auto-update off: False, Info; Ready True",
		mark:         func(fs *FunctionStatus) { ready(fs); fs.MarkAutoUpdateDisabled("v2 is available") },
		wantMw:       cond{Status: corev1.ConditionFalse, Reason: ReasonAutoUpdateDisabled, Message: "v2 is available"},
		wantSeverity: apis.ConditionSeverityInfo,
		wantReady:    cond{Status: corev1.ConditionTrue},
		wantOutdated: true,
	}, {
		name: "auto-update off, then a gating condition goes Unknown: Ready follows it, not the Info one",
		mark: func(fs *FunctionStatus) {
			ready(fs)
			fs.MarkAutoUpdateDisabled("v2 is available")
			fs.MarkServiceReadyUnknown("Deploying", "revision starting")
		},
		wantMw:       cond{Status: corev1.ConditionFalse, Reason: ReasonAutoUpdateDisabled, Message: "v2 is available"},
		wantSeverity: apis.ConditionSeverityInfo,
		wantReady:    cond{Status: corev1.ConditionUnknown, Reason: "Deploying", Message: "revision starting"},
		wantOutdated: true,
	}, {
		name:         "source-managed and older: False, Info; Ready True",
		mark:         func(fs *FunctionStatus) { ready(fs); fs.MarkSourceManagedOutdated("update the source") },
		wantMw:       cond{Status: corev1.ConditionFalse, Reason: ReasonSourceManagedMiddleware, Message: "update the source"},
		wantSeverity: apis.ConditionSeverityInfo,
		wantReady:    cond{Status: corev1.ConditionTrue},
		wantOutdated: true,
	}, {
		name:         "source-managed, version unreadable: Unknown, Info; Ready True",
		mark:         func(fs *FunctionStatus) { ready(fs); fs.MarkSourceManagedUnknown("no version") },
		wantMw:       cond{Status: corev1.ConditionUnknown, Reason: ReasonSourceManagedMiddleware, Message: "no version"},
		wantSeverity: apis.ConditionSeverityInfo,
		wantReady:    cond{Status: corev1.ConditionTrue},
	}, {
		name:      "source-managed and current: True",
		mark:      func(fs *FunctionStatus) { ready(fs); fs.MarkSourceManagedUpToDate("pins the newest") },
		wantMw:    cond{Status: corev1.ConditionTrue, Reason: ReasonSourceManagedMiddleware, Message: "pins the newest"},
		wantReady: cond{Status: corev1.ConditionTrue},
	}, {
		name: "auto-update turned on again: outdated gates Ready (severity Error)",
		mark: func(fs *FunctionStatus) {
			ready(fs)
			fs.MarkAutoUpdateDisabled("v2 is available")
			fs.MarkMiddlewareOutdated("v2 is available: a rebuild is pending")
		},
		wantMw:       cond{Status: corev1.ConditionFalse, Reason: ReasonMiddlewareOutdated, Message: "v2 is available: a rebuild is pending"},
		wantReady:    cond{Status: corev1.ConditionFalse, Reason: ReasonMiddlewareOutdated, Message: "v2 is available: a rebuild is pending"},
		wantOutdated: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := initialized()
			tt.mark(fs)
			got := fs.GetCondition(FunctionConditionMiddlewareUpToDate)
			if diff := cmp.Diff(&tt.wantMw, toCond(got)); diff != "" {
				t.Errorf("MiddlewareUpToDate (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSeverity, got.Severity); diff != "" {
				t.Errorf("MiddlewareUpToDate severity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(&tt.wantReady, toCond(fs.GetCondition(FunctionConditionReady))); diff != "" {
				t.Errorf("Ready (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOutdated, fs.MiddlewareOutdated()); diff != "" {
				t.Errorf("MiddlewareOutdated (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFunctionStatus_Progress: Stalled and Reconciling, for kstatus, are never True
// together, are removed by ClearProgress, and do not change Ready.
func TestFunctionStatus_Progress(t *testing.T) {
	fs := initialized()
	fs.MarkSourceFailed(ReasonFuncYamlInvalid, "bad yaml")
	readyBefore := *toCond(fs.GetCondition(FunctionConditionReady))

	fs.MarkReconciling(ReasonReconciling, "checking")
	fs.MarkStalled(ReasonFuncYamlInvalid, "bad %s", "yaml")
	got := conds(fs)
	if diff := cmp.Diff(cond{Status: corev1.ConditionTrue, Reason: ReasonFuncYamlInvalid, Message: "bad yaml"}, got[FunctionConditionStalled]); diff != "" {
		t.Errorf("Stalled (-want +got):\n%s", diff)
	}
	if _, ok := got[FunctionConditionReconciling]; ok {
		t.Errorf("Reconciling is still set next to Stalled: %+v", got[FunctionConditionReconciling])
	}
	if c := fs.GetCondition(FunctionConditionStalled); c.Severity != apis.ConditionSeverityInfo {
		t.Errorf("Stalled severity = %q, want Info", c.Severity)
	}
	if diff := cmp.Diff(readyBefore, got[FunctionConditionReady]); diff != "" {
		t.Errorf("Ready changed by Stalled (-want +got):\n%s", diff)
	}

	fs.MarkReconciling(ReasonRebuilding, "build b1 runs")
	got = conds(fs)
	if _, ok := got[FunctionConditionStalled]; ok {
		t.Error("Stalled is still set next to Reconciling")
	}
	if diff := cmp.Diff(cond{Status: corev1.ConditionTrue, Reason: ReasonRebuilding, Message: "build b1 runs"}, got[FunctionConditionReconciling]); diff != "" {
		t.Errorf("Reconciling (-want +got):\n%s", diff)
	}

	fs.ClearProgress()
	got = conds(fs)
	for _, c := range []apis.ConditionType{FunctionConditionStalled, FunctionConditionReconciling} {
		if _, ok := got[c]; ok {
			t.Errorf("%s is still set after ClearProgress", c)
		}
	}
	if len(got) != 5 {
		t.Errorf("%d conditions after ClearProgress, want the 5 of the set: %+v", len(got), got)
	}
}

// TestFunctionStatus_ReadyTransitionTimeWithInfoMiddleware: while MiddlewareUpToDate
// has severity Info, marking a condition again leaves Ready's transition time alone.
func TestFunctionStatus_ReadyTransitionTimeWithInfoMiddleware(t *testing.T) {
	past := apis.VolatileTime{Inner: metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))}
	fs := initialized()
	fs.MarkSourceReady("main", testCommit)
	fs.MarkDeployed("Knative Service hello", "img", "")
	fs.MarkServiceReady("Knative Service hello is ready")
	fs.MarkAutoUpdateDisabled("v2 is available")
	for i := range fs.Conditions {
		if fs.Conditions[i].Type == FunctionConditionReady {
			fs.Conditions[i].LastTransitionTime = past
		}
	}
	fs.MarkServiceReady("Knative Service hello is ready")
	fs.MarkAutoUpdateDisabled("v2 is available")
	ready := fs.GetCondition(FunctionConditionReady)
	if !ready.IsTrue() {
		t.Fatalf("Ready = %+v, want True", ready)
	}
	if diff := cmp.Diff(past, ready.LastTransitionTime); diff != "" {
		t.Errorf("Ready LastTransitionTime moved (-want +got):\n%s", diff)
	}
	fs.MarkServiceNotReady("RevisionFailed", "crash")
	if got := fs.GetCondition(FunctionConditionReady).LastTransitionTime; got == past {
		t.Error("positive control: Ready went False but its transition time did not move")
	}
}

// TestFunctionStatus_SourceReachable: an unreachable repository shows with severity
// Warning and leaves Ready as it was; the positive control is that SourceReady going
// False does move Ready.
func TestFunctionStatus_SourceReachable(t *testing.T) {
	fs := initialized()
	fs.MarkSourceReady("main", testCommit)
	fs.MarkDeployed("Knative Service hello", "img", "")
	fs.MarkServiceReady("Knative Service hello is ready")
	fs.MarkMiddlewareUpToDate("v2")
	fs.MarkSourceReachable()
	if !fs.GetCondition(FunctionConditionReady).IsTrue() {
		t.Fatalf("Ready = %+v, want True", fs.GetCondition(FunctionConditionReady))
	}
	fs.MarkSourceUnreachable(ReasonBranchListFailed, "listing the branches: %d", 503)
	c := fs.GetCondition(FunctionConditionSourceReachable)
	if c == nil || !c.IsFalse() || c.Severity != apis.ConditionSeverityWarning || c.Reason != ReasonBranchListFailed || c.Message != "listing the branches: 503" {
		t.Errorf("SourceReachable = %+v, want False, severity Warning, reason %s", c, ReasonBranchListFailed)
	}
	if r := fs.GetCondition(FunctionConditionReady); !r.IsTrue() {
		t.Errorf("Ready = %+v while the repository is unreachable, want True", r)
	}
	fs.MarkSourceReachable()
	if c := fs.GetCondition(FunctionConditionSourceReachable); !c.IsTrue() || c.Severity != "" {
		t.Errorf("SourceReachable = %+v after the outage, want True", c)
	}
	fs.MarkSourceFailed(ReasonBranchListFailed, "listing the branches: 503")
	if r := fs.GetCondition(FunctionConditionReady); r.IsTrue() {
		t.Error("positive control: SourceReady False left Ready True")
	}
}

func TestMarkSuspended(t *testing.T) {
	fs := &FunctionStatus{}
	fs.InitializeConditions()
	fs.MarkSourceReady("main", "abc")
	fs.MarkStalled(ReasonBranchNotFound, "stalled before")
	readyBefore := *fs.GetCondition(FunctionConditionReady)

	fs.MarkSuspended()
	c := fs.GetCondition(FunctionConditionSuspended)
	if c == nil || !c.IsTrue() || c.Reason != ReasonSuspended || c.Severity != apis.ConditionSeverityInfo {
		t.Fatalf("Suspended = %+v, want True, Info", c)
	}
	if fs.GetCondition(FunctionConditionStalled) != nil {
		t.Errorf("Stalled kept while suspended")
	}
	if r := fs.GetCondition(FunctionConditionReady); r.Status != readyBefore.Status || r.Reason != readyBefore.Reason {
		t.Errorf("Ready %+v after MarkSuspended, want it unchanged (%+v)", r, readyBefore)
	}
	fs.ClearSuspended()
	if fs.GetCondition(FunctionConditionSuspended) != nil {
		t.Errorf("Suspended kept after ClearSuspended")
	}
}

// TestBuildStatus_Phases: which phases are queued, in flight and pending; no build
// is none of them.
func TestBuildStatus_Phases(t *testing.T) {
	type is struct{ Queued, InFlight, Pending bool }
	for _, tt := range []struct {
		build *BuildStatus
		want  is
	}{
		{build: nil, want: is{}},
		{build: &BuildStatus{Phase: BuildPhaseQueued}, want: is{Queued: true, Pending: true}},
		{build: &BuildStatus{Phase: BuildPhaseStarting}, want: is{InFlight: true, Pending: true}},
		{build: &BuildStatus{Phase: BuildPhaseRunning}, want: is{InFlight: true, Pending: true}},
		{build: &BuildStatus{Phase: BuildPhaseSucceeded}, want: is{}},
		{build: &BuildStatus{Phase: BuildPhaseFailed}, want: is{}},
		{build: &BuildStatus{}, want: is{}},
	} {
		got := is{Queued: tt.build.Queued(), InFlight: tt.build.InFlight(), Pending: tt.build.Pending()}
		if got != tt.want {
			t.Errorf("%+v: %+v, want %+v", tt.build, got, tt.want)
		}
	}
}
