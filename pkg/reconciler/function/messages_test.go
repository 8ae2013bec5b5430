package function

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/fnops/func-operator/api/v1alpha1"
)

func TestCapMessages_StatusAndEvents(t *testing.T) {
	fn := &v1alpha1.Function{}
	fn.Status.InitializeConditions()
	body := strings.Repeat("<html>error</html>", 600000) // ~10 MB, as a hostile server's error page
	fn.Status.MarkSourceFailed(v1alpha1.ReasonGitCloneFailed, "cloning: %s", body)
	fn.Status.Build = &v1alpha1.BuildStatus{Message: body}
	capMessages(fn, 1024)
	for _, c := range fn.Status.Conditions {
		if len(c.Message) > 1024 {
			t.Errorf("condition %s has a message of %d bytes, want at most 1024", c.Type, len(c.Message))
		}
	}
	if c := fn.Status.GetCondition(v1alpha1.FunctionConditionSourceReady); c == nil || !strings.HasPrefix(c.Message, "cloning: <html>") || c.Reason != v1alpha1.ReasonGitCloneFailed {
		t.Errorf("SourceReady = %+v, want its reason kept and its message's start", c)
	}
	if len(fn.Status.Build.Message) > 1024 {
		t.Errorf("status.build.message has %d bytes", len(fn.Status.Build.Message))
	}

	rec := record.NewFakeRecorder(1)
	CappedRecorder(rec, func() int { return 256 }).Eventf(fn, "Warning", "BuildFailed", "the build printed %s", body)
	e := <-rec.Events
	if len(e) > 256+len("Warning BuildFailed ") || !strings.HasPrefix(e, "Warning BuildFailed the build printed <html>") {
		t.Errorf("event of %d bytes: %.100s", len(e), e)
	}
}
