package function

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
)

func TestReconcile_Source(t *testing.T) {
	t.Setenv("FUNC_OPERATOR_TEST_SECRET", envSecret)
	g := newGitFixture(t)
	ssh := gitserver.StartSSH(t)
	sshRepo := gitserver.CreateRepo(t, gitserver.NewRepoRoot(t), "over-ssh")
	sshRepo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("sshfn", "springboot")}, "ssh function")

	secret := func(name string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	sshSecret := func(knownHosts []byte) *corev1.Secret {
		return secret("ssh-auth", map[string]string{
			"ssh-privatekey": string(ssh.ClientPrivateKeyPEM()),
			"known_hosts":    string(knownHosts),
		})
	}

	type want struct {
		status   corev1.ConditionStatus
		reason   string
		message  string // a substring of the SourceReady message
		stalling bool   // no error, requeued at the check interval
		runtime  string
		name     string
		branch   string
		tag      string // the tag followed, instead of a branch
		commit   string
	}
	tests := []struct {
		name   string
		repo   v1alpha1.Repository
		secret *corev1.Secret
		want   want
	}{{
		name: "public repository, default branch",
		repo: v1alpha1.Repository{URL: g.http.URL("public")},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "branch main",
			runtime: "go", name: "hello", branch: "main", commit: g.public.Head(t, "main")},
	}, {
		name: "monorepo path",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Branch: "main", Path: "fns/echo"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead,
			runtime: "node", name: "echo", branch: "main", commit: g.public.Head(t, "main")},
	}, {
		// Upstream's newer names: revision (a branch, a tag or a full ref) and dir.
		name: "revision: a branch by name, with dir",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "main", Dir: "fns/dir"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "branch main",
			runtime: "node", name: "in-dir", branch: "main", commit: g.revs.Head(t, "main")},
	}, {
		name: "revision: a tag by name",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "only-tag"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "tag only-tag",
			runtime: "rust", name: "tagged", tag: "only-tag", commit: g.revs.Head(t, "tagsrc")},
	}, {
		name: "revision: a name both a tag and a branch is the tag",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "both"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "tag both",
			runtime: "rust", name: "tagged", tag: "both", commit: g.revs.Head(t, "tagsrc")},
	}, {
		name: "revision: a full branch ref",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "refs/heads/both"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "branch both",
			runtime: "python", name: "branch-both", branch: "both", commit: g.revs.Head(t, "both")},
	}, {
		name: "revision: a full tag ref",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "refs/tags/both"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "tag both",
			runtime: "rust", name: "tagged", tag: "both", commit: g.revs.Head(t, "tagsrc")},
	}, {
		name: "branch, the older name, also a tag's name: the branch",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Branch: "both"},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "branch both",
			runtime: "python", name: "branch-both", branch: "both", commit: g.revs.Head(t, "both")},
	}, {
		name: "RevisionNotFound",
		repo: v1alpha1.Repository{URL: g.http.URL("revs"), Revision: "nope"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonRevisionNotFound,
			message: `revision "nope" is neither a tag nor a branch`, stalling: true},
	}, {
		name: "default branch other than main is resolved",
		repo: v1alpha1.Repository{URL: g.http.URL("trunk")},
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead, message: "branch trunk",
			runtime: "rust", name: "trunky", branch: "trunk", commit: g.trunk.Head(t, "trunk")},
	}, {
		name:   "private repository with token",
		repo:   v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("git-token")},
		secret: secret("git-token", map[string]string{"token": testToken}),
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead,
			runtime: "python", name: "private", branch: "main", commit: g.private.Head(t, "main")},
	}, {
		name:   "private repository with username and password",
		repo:   v1alpha1.Repository{URL: g.http.URL("basic"), AuthSecretRef: secretRef("git-basic")},
		secret: secret("git-basic", map[string]string{"username": testUser, "password": testPassword}),
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead,
			runtime: "quarkus", name: "basic", branch: "main", commit: g.basic.Head(t, "main")},
	}, {
		name:   "ssh with key and known_hosts",
		repo:   v1alpha1.Repository{URL: ssh.URL(sshRepo.Dir), AuthSecretRef: secretRef("ssh-auth")},
		secret: sshSecret(ssh.KnownHosts()),
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead,
			runtime: "springboot", name: "sshfn", branch: "main", commit: sshRepo.Head(t, "main")},
	}, {
		name: "ssh with the upstream operator's key names, encrypted key",
		repo: v1alpha1.Repository{URL: ssh.URL(sshRepo.Dir), AuthSecretRef: secretRef("ssh-upstream")},
		secret: secret("ssh-upstream", map[string]string{"sshPrivateKey": string(ssh.EncryptedClientPrivateKeyPEM(testPassword)),
			"sshPrivateKeyPassword": testPassword, "known_hosts": string(ssh.KnownHosts())}),
		want: want{status: corev1.ConditionTrue, reason: v1alpha1.ReasonFuncYamlRead,
			runtime: "springboot", name: "sshfn", branch: "main", commit: sshRepo.Head(t, "main")},
	}, {
		name: "AuthSecretNotFound",
		repo: v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("missing")},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonAuthSecretNotFound,
			message: `Secret "missing" named by spec.repository.authSecretRef does not exist`, stalling: true},
	}, {
		name: "AuthSecretNotFound: ssh without a Secret",
		repo: v1alpha1.Repository{URL: ssh.URL(sshRepo.Dir)},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonAuthSecretNotFound,
			message: "needs spec.repository.authSecretRef", stalling: true},
	}, {
		name:   "AuthSecretInvalid: no usable key",
		repo:   v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("git-empty")},
		secret: secret("git-empty", map[string]string{"tokn": testToken}),
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonAuthSecretInvalid,
			message: `has neither a non-empty key "token" nor keys "username" and "password"`, stalling: true},
	}, {
		name:   "AuthSecretInvalid: ssh without known_hosts",
		repo:   v1alpha1.Repository{URL: ssh.URL(sshRepo.Dir), AuthSecretRef: secretRef("ssh-no-kh")},
		secret: secret("ssh-no-kh", map[string]string{"ssh-privatekey": string(ssh.ClientPrivateKeyPEM())}),
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonAuthSecretInvalid,
			message: "known_hosts is required", stalling: true},
	}, {
		name: "BranchListFailed: private repository without credentials",
		repo: v1alpha1.Repository{URL: g.http.URL("private")},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonBranchListFailed,
			message: "authentication required", stalling: true},
	}, {
		name:   "BranchListFailed: wrong token",
		repo:   v1alpha1.Repository{URL: g.http.URL("private"), AuthSecretRef: secretRef("git-wrong")},
		secret: secret("git-wrong", map[string]string{"token": "wrong-" + testToken}),
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonBranchListFailed,
			message: "were refused", stalling: true},
	}, {
		name:   "BranchListFailed: ssh host key mismatch",
		repo:   v1alpha1.Repository{URL: ssh.URL(sshRepo.Dir), AuthSecretRef: secretRef("ssh-auth")},
		secret: sshSecret(ssh.OtherKnownHosts()),
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonBranchListFailed,
			message: "host key", stalling: true},
	}, {
		name: "BranchListFailed: server unreachable is retried with backoff",
		repo: v1alpha1.Repository{URL: "http://127.0.0.1:1/nothing.git"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonBranchListFailed, message: "127.0.0.1:1"},
	}, {
		name: "BranchNotFound",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Branch: "release-9"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonBranchNotFound,
			message: `branch "release-9" not found`, stalling: true},
	}, {
		name: "PathNotFound",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Path: "fns/nope"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonPathNotFound,
			message: `path "fns/nope" does not exist`, stalling: true},
	}, {
		name: "FuncYamlNotFound",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Path: "notafunction"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonFuncYamlNotFound,
			message: "notafunction/func.yaml does not exist", stalling: true},
	}, {
		name: "FuncYamlInvalid",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Path: "fns/bad"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonFuncYamlInvalid,
			message: "func.yaml", stalling: true},
	}, {
		name: "UnsafeFuncYaml",
		repo: v1alpha1.Repository{URL: g.http.URL("public"), Path: "fns/unsafe"},
		want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonUnsafeFuncYaml,
			message: "run.envs[0].value", stalling: true},
	}}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			if tc.secret != nil {
				tc.secret.Namespace = ns
				mustCreate(t, tc.secret)
			}
			fn := newFunction(ns, "fn", tc.repo)
			mustCreate(t, fn)
			r, events := newTestReconciler(t, 10)

			res, err := reconcileOnce(t, r, ns, "fn")
			got := getFunction(t, ns, "fn")
			cond := got.Status.GetCondition(v1alpha1.FunctionConditionSourceReady)
			if cond == nil {
				t.Fatalf("no SourceReady condition; status: %+v", got.Status)
			}
			t.Logf("SourceReady %s/%s: %s", cond.Status, cond.Reason, cond.Message)
			if cond.Status != tc.want.status || cond.Reason != tc.want.reason {
				t.Fatalf("SourceReady = %s/%s (%q), want %s/%s", cond.Status, cond.Reason, cond.Message, tc.want.status, tc.want.reason)
			}
			if !strings.Contains(cond.Message, tc.want.message) {
				t.Errorf("SourceReady message %q does not contain %q", cond.Message, tc.want.message)
			}
			if got.Status.ObservedGeneration != got.Generation {
				t.Errorf("observedGeneration = %d, want %d", got.Status.ObservedGeneration, got.Generation)
			}
			ready := got.Status.GetCondition(apis.ConditionReady)
			switch tc.want.status {
			case corev1.ConditionTrue:
				if err != nil || res.RequeueAfter <= 0 {
					t.Errorf("Reconcile = (%+v, %v), want a requeue after the check interval and no error", res, err)
				}
				if ready == nil || ready.Status != corev1.ConditionFalse || ready.Reason != v1alpha1.ReasonNotDeployed {
					t.Errorf("Ready = %+v, want False/%s: the function has no Knative Service", ready, v1alpha1.ReasonNotDeployed)
				}
				// Both names of what is followed: resolvedBranch and upstream's newer resolvedRevision.
				wantGit := &v1alpha1.GitStatus{ResolvedBranch: tc.want.branch, ResolvedRevision: tc.want.branch, ResolvedRef: "refs/heads/" + tc.want.branch,
					ObservedCommit: tc.want.commit}
				if tc.want.tag != "" {
					wantGit = &v1alpha1.GitStatus{ResolvedRevision: "refs/tags/" + tc.want.tag, ResolvedRef: "refs/tags/" + tc.want.tag, ObservedCommit: tc.want.commit}
				}
				gotGit := got.Status.Git.DeepCopy()
				if gotGit == nil || gotGit.LastChecked == nil {
					t.Fatalf("status.git = %+v, want lastChecked set", got.Status.Git)
				}
				gotGit.LastChecked = nil
				if diff := cmp.Diff(wantGit, gotGit); diff != "" {
					t.Errorf("status.git (-want +got):\n%s", diff)
				}
				if got.Status.Deployment == nil || got.Status.Deployment.Runtime != tc.want.runtime {
					t.Errorf("status.deployment = %+v, want runtime %q", got.Status.Deployment, tc.want.runtime)
				}
				if got.Status.Name != tc.want.name {
					t.Errorf("status.name = %q, want %q", got.Status.Name, tc.want.name)
				}
			case corev1.ConditionFalse:
				if ready == nil || ready.Status != corev1.ConditionFalse || ready.Reason != tc.want.reason {
					t.Errorf("Ready = %+v, want False/%s", ready, tc.want.reason)
				}
				if tc.want.stalling && (err != nil || res.RequeueAfter <= 0) {
					t.Errorf("Reconcile = (%+v, %v), want a stalling result: no error, requeue after the check interval", res, err)
				}
				if !tc.want.stalling && err == nil {
					t.Errorf("Reconcile error = nil, want a transient error retried with backoff")
				}
				for _, c := range []v1alpha1.FunctionStatus{got.Status} {
					for _, ty := range []apis.ConditionType{v1alpha1.FunctionConditionDeployed, v1alpha1.FunctionConditionServiceReady} {
						if d := c.GetCondition(ty); d == nil || d.Reason != v1alpha1.ReasonSourceNotReady {
							t.Errorf("%s = %+v, want reason %s", ty, d, v1alpha1.ReasonSourceNotReady)
						}
					}
				}
				select {
				case e := <-events.Events:
					if !strings.HasPrefix(e, "Warning "+tc.want.reason+" ") {
						t.Errorf("event %q, want a Warning with reason %s", e, tc.want.reason)
					}
				default:
					t.Errorf("no event recorded for the failure")
				}
			}
			assertNoSecrets(t, got, err)
		})
	}
}

// assertNoSecrets fails when a credential or the operator's environment shows up in
// the status or the reconcile error.
func assertNoSecrets(t *testing.T, fn *v1alpha1.Function, err error) {
	t.Helper()
	b, _ := json.Marshal(fn.Status)
	text := string(b)
	if err != nil {
		text += err.Error()
	}
	for _, s := range []string{testToken, testPassword, envSecret, "PRIVATE KEY"} {
		if strings.Contains(text, s) {
			t.Errorf("status or error contains a secret value %q: %s", s, text)
		}
	}
}
