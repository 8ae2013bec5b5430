package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/operator"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
)

// tenantUser is the attacker: a user of one namespace, with what Kubernetes' edit
// role and Tekton's tekton-aggregate-edit give on Functions and PipelineRuns.
const tenantUser = "tenant-of-slots"

// TestAttack_BuildSlots: a tenant who may create PipelineRuns (the usual edit role)
// makes unfinished look-alikes of the operator's build runs, labelled as the
// operator labels its own (managed-by, function, a build ID) and even controlled by
// the tenant's Functions, kept Pending so that they never end. None of them may be
// adopted as a build or hold a slot of the fleet budget (maxConcurrentBuilds 2): an
// outdated Function of another namespace is rebuilt at once (the positive control),
// and after a SIGKILL the next process does not seed them either, while it does count
// the legitimate build that runs across the kill (the other positive control: with it,
// one more build is admitted and a second waits).
func TestAttack_BuildSlots(t *testing.T) {
	s := setUpWithBuilds(t, map[string]string{config.KeyMaxConcurrentBuilds: "2"}, nil)
	ctx := context.Background()

	// The tenant's namespace: two up-to-date Functions, then two look-alike runs.
	tenant := s.newFleet(t, "slots-tenant", 2, 0, false)
	for _, name := range tenant.healthy {
		until(t, 2*time.Minute, name+" Ready", func() string { return s.ready(tenant.ns, name) })
	}
	tc := s.tenantClient(t, tenant.ns)
	lookalikes := make([]string, 0, len(tenant.healthy))
	for _, name := range tenant.healthy {
		fn := s.function(tenant.ns, name)
		pr := &pipelinev1.PipelineRun{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant.ns, GenerateName: name + "-lookalike-",
				Labels: map[string]string{resources.LabelManagedBy: resources.ManagedBy, resources.LabelFunction: name, resources.LabelBuildID: "forged" + name},
				// Everything the operator's runs carry but the build ID its status recorded.
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Function",
					Name: fn.Name, UID: fn.UID, Controller: ptr.To(true)}}},
			Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "never"}, Status: pipelinev1.PipelineRunSpecStatusPending},
		}
		if err := tc.Create(ctx, pr); err != nil {
			t.Fatalf("the tenant creating a look-alike PipelineRun: %v", err)
		}
		lookalikes = append(lookalikes, pr.Name)
	}
	// The operator has seen each look-alike: it names it in its log as not its own, or
	// (what the attack is after) it records it as the Function's build.
	until(t, time.Minute, "the operator seeing the look-alikes", func() string {
		for i, name := range tenant.healthy {
			fn := s.function(tenant.ns, name)
			if fn == nil {
				return "not read"
			}
			if !strings.Contains(s.kubelet.Logs.String(), lookalikes[i]) && fn.Status.Build == nil {
				return fmt.Sprintf("PipelineRun %s neither in the operator's log nor in %s's status", lookalikes[i], name)
			}
		}
		return ""
	})
	notAdopted := func(t *testing.T) {
		t.Helper()
		for _, name := range tenant.healthy {
			if b := s.function(tenant.ns, name).Status.Build; b != nil {
				t.Errorf("%s/%s: status.build %+v, want none: a tenant's PipelineRun was taken for a build", tenant.ns, name, b)
			}
		}
	}
	notAdopted(t)

	// Another namespace's outdated Function is admitted at once (held running, for
	// the restart below).
	victim := s.newFleet(t, "slots-victim", 0, 1, true)
	v := victim.outdated[0]
	until(t, time.Minute, "the other namespace's build admitted beside the look-alikes",
		func() string { return s.buildRunning(victim.ns, v) })
	run := s.function(victim.ns, v).Status.Build.PipelineRun

	// SIGKILL, with the look-alikes still there and the victim's build running.
	leader := s.leader()
	if s.kubelet.kill() == 0 {
		t.Fatal("no operator process to kill")
	}
	s.nextLeader(t, leader)
	// Two more outdated Functions: one slot is the victim's (counted across the
	// kill), so one is admitted and one waits; the look-alikes count for nothing.
	more := s.newFleet(t, "slots-after", 0, 2, true)
	until(t, time.Minute, "one build admitted and one queued after the restart", func() string {
		phases := map[string]int{}
		var queued *v1alpha1.BuildStatus
		for _, name := range more.outdated {
			fn := s.function(more.ns, name)
			if fn == nil || fn.Status.Build == nil {
				return name + ": no build yet"
			}
			phases[fn.Status.Build.Phase]++
			if fn.Status.Build.Phase == v1alpha1.BuildPhaseQueued {
				queued = fn.Status.Build
			}
		}
		if phases[v1alpha1.BuildPhaseStarting]+phases[v1alpha1.BuildPhaseRunning] != 1 || queued == nil || queued.QueuePosition != 1 {
			return fmt.Sprintf("phases %v, queued %+v; want one running and one queued at position 1", phases, queued)
		}
		return ""
	})
	if b := s.function(victim.ns, v).Status.Build; b == nil || b.PipelineRun != run || b.Phase != v1alpha1.BuildPhaseRunning {
		t.Errorf("the victim's build after the restart: %+v, want still Running in PipelineRun %s", b, run)
	}
	notAdopted(t)

	victim.hold.Store(false)
	more.hold.Store(false)
	if lost := s.lostBuilds(t, 2*time.Minute, []*fleet{victim, more}); lost != 0 {
		t.Errorf("%d builds lost", lost)
	}
	if n := s.obs.runsOf(victim.key(v)); n != 1 {
		t.Errorf("%s: %d PipelineRuns, want the 1 followed across the kill", victim.key(v), n)
	}
	// The tenant's objects are the tenant's: reported, not deleted.
	for _, name := range lookalikes {
		pr := &pipelinev1.PipelineRun{}
		if err := s.admin.Get(ctx, types.NamespacedName{Namespace: tenant.ns, Name: name}, pr); err != nil || !pr.DeletionTimestamp.IsZero() {
			t.Errorf("the tenant's PipelineRun %s: %v (deleting: %t), want it left alone", name, err, err == nil && !pr.DeletionTimestamp.IsZero())
		}
	}
	notAdopted(t)
	s.checkCounters(t)
}

// tenantClient returns a client of tenantUser, who may create Functions and
// PipelineRuns in ns: what the edit role and Tekton's aggregated edit role grant.
func (s *suite) tenantClient(t *testing.T, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-edit"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"tekton.dev"}, Resources: []string{"pipelineruns", "pipelines", "taskruns", "tasks"},
				Verbs: []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"functions"},
				Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenantUser}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := s.admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(s.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: tenantUser, Groups: []string{"system:authenticated"}}
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
