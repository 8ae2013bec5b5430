package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/reconciler/function/resources"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/tekton"
)

// TestOperator_RebuildPrivateRepository rebuilds a function whose repository needs
// credentials, over HTTPS (a token, on a private CA) and over SSH (a key protected by
// a passphrase), on the real Tekton controller. The clone task's pod, and only it, gets
// the build's credentials Secret; the files it holds clone the repository with the
// real git and ssh clients (what the clone step would do: no container runs here),
// and do not without them; no credential is in the Pipeline or the PipelineRun; the
// Secret is gone once the build ended.
func TestOperator_RebuildPrivateRepository(t *testing.T) {
	const token = "tok-private-5b7c1d"
	const passphrase = "pass-phrase-9e2a"
	sshd := gitserver.StartSSH(t)
	for _, tt := range []struct {
		name string
		// set points the Function at the private repository and returns its Secret's data.
		set func(t *testing.T, f *rebuildFixture) (url string, data map[string][]byte)
		// clone clones url with the files of the credentials Secret, as the clone
		// step would, and returns git's error.
		clone func(t *testing.T, url string, files map[string][]byte) error
		// spoil returns the files with what authenticates the clone taken out.
		spoil func(files map[string][]byte) map[string][]byte
	}{{
		name: "HTTPS token, on a private CA",
		set: func(t *testing.T, f *rebuildFixture) (string, map[string][]byte) {
			https := gitserver.StartHTTPS(t, f.root)
			https.RequireToken("fleet", token)
			return https.URL("fleet"), map[string][]byte{"token": []byte(token), "ca.crt": https.CertificatePEM()}
		},
		clone: func(t *testing.T, url string, files map[string][]byte) error {
			home := t.TempDir()
			for _, name := range []string{".git-credentials", ".gitconfig"} {
				if content, ok := files[name]; ok {
					writeFile(t, filepath.Join(home, name), content, 0o400)
				}
			}
			// As the task does with its ssl-ca-directory workspace.
			ca := filepath.Join(t.TempDir(), "ca-bundle.crt")
			writeFile(t, ca, files["ca-bundle.crt"], 0o400)
			return gitClone(t, home, url, []string{"GIT_SSL_CAINFO=" + ca})
		},
		spoil: func(files map[string][]byte) map[string][]byte {
			out := maps.Clone(files)
			delete(out, ".git-credentials")
			return out
		},
	}, {
		name: "SSH key with a passphrase",
		set: func(_ *testing.T, f *rebuildFixture) (string, map[string][]byte) {
			return sshd.URL(f.repo.Dir), map[string][]byte{
				"ssh-privatekey": sshd.EncryptedClientPrivateKeyPEM(passphrase),
				"passphrase":     []byte(passphrase),
				"known_hosts":    sshd.KnownHosts(),
			}
		},
		clone: func(t *testing.T, url string, files map[string][]byte) error {
			home := t.TempDir()
			dir := filepath.Join(home, ".ssh")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			for name, content := range files {
				writeFile(t, filepath.Join(dir, name), content, 0o400)
			}
			// ssh reads ~ from the passwd entry, not $HOME: name the files of this home.
			cmd := fmt.Sprintf("ssh -F %s/config -o UserKnownHostsFile=%s/known_hosts -i %s/id_ed25519", dir, dir, dir)
			return gitClone(t, home, url, []string{"GIT_SSH_COMMAND=" + cmd})
		},
		spoil: func(files map[string][]byte) map[string][]byte {
			out := maps.Clone(files)
			out["known_hosts"] = sshd.OtherKnownHosts() // the host key is checked
			return out
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t)
			f := newRebuildFixture(t, ns, "hello")
			url, data := tt.set(t, f)
			mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-auth"}, Data: data})
			var captured atomic.Bool
			kubelet := tekton.StartKubelet(t, restConfig, tekton.Options{
				Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t),
				// The run ends once the test has read its credentials Secret.
				Hold: func(*pipelinev1.PipelineRun) bool { return captured.Load() },
			})
			startOperatorWith(t, rebuildConfig(2), ns)
			f.createFunctionSpec(t, "hello", func(fn *v1alpha1.Function) {
				fn.Spec.Repository.URL = url
				fn.Spec.Repository.AuthSecretRef = &corev1.LocalObjectReference{Name: "git-auth"}
			})

			var run pipelinev1.PipelineRun
			eventually(t, 60*time.Second, func() string {
				fn := getFunction(t, ns, "hello")
				b := fn.Status.Build
				if b == nil || b.PipelineRun == "" {
					return fmt.Sprintf("status.build = %+v, want a PipelineRun", b)
				}
				if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: b.PipelineRun}, &run); err != nil {
					return err.Error()
				}
				return ""
			})
			id := run.Labels[resources.LabelBuildID]
			secretName := funclib.GitSecretName("hello", id)
			var creds corev1.Secret
			if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: secretName}, &creds); err != nil {
				t.Fatalf("the build's credentials Secret: %v", err)
			}
			// Its files clone the repository with git itself; without them, git cannot.
			if err := tt.clone(t, url, creds.Data); err != nil {
				t.Errorf("cloning with the clone step's files: %v", err)
			}
			if err := tt.clone(t, url, tt.spoil(creds.Data)); err == nil {
				t.Error("cloning with the files spoiled worked: the check above proves nothing")
			}
			// No credential in what a tenant without Secret access can read.
			var pipeline pipelinev1.Pipeline
			if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: run.Spec.PipelineRef.Name}, &pipeline); err != nil {
				t.Fatal(err)
			}
			for name, obj := range map[string]any{"PipelineRun": run, "Pipeline": pipeline} {
				b, err := json.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				for _, secret := range []string{token, passphrase, "PRIVATE KEY"} {
					if strings.Contains(string(b), secret) {
						t.Errorf("the %s holds a credential (%q)", name, secret)
					}
				}
			}

			captured.Store(true)
			eventually(t, 90*time.Second, rebuilt(t, ns, "hello"))
			// Every pod of the run has the build identity.
			var pods corev1.PodList
			if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"tekton.dev/pipelineRun": run.Name}); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) < len(tekton.Tasks) {
				t.Errorf("%d pods of run %s, want one per task (%d)", len(pods.Items), run.Name, len(tekton.Tasks))
			}
			for _, pod := range pods.Items {
				if pod.Spec.ServiceAccountName != "func-operator-builder" {
					t.Errorf("pod %s runs as %q, want func-operator-builder", pod.Name, pod.Spec.ServiceAccountName)
				}
			}
			// Only the clone task's pod mounts it.
			eventually(t, 10*time.Second, func() string {
				got := kubelet.PodSecrets(ns, run.Name)
				if len(got) < len(tekton.Tasks) {
					return fmt.Sprintf("pods of %d tasks seen (%v), want %d", len(got), got, len(tekton.Tasks))
				}
				for task, secrets := range got {
					if has := slices.Contains(secrets, secretName); has != (task == "fetch-sources") {
						return fmt.Sprintf("task %s mounts %v: the credentials Secret %s goes to fetch-sources only", task, secrets, secretName)
					}
				}
				return ""
			})
			eventually(t, 30*time.Second, func() string {
				err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: secretName}, &corev1.Secret{})
				if !apierrors.IsNotFound(err) {
					return fmt.Sprintf("the credentials Secret of the ended build: %v, want NotFound", err)
				}
				return ""
			})
		})
	}
}

// gitClone clones url with git, HOME set to home and env added, and returns git's error.
func gitClone(t *testing.T, home, url string, env []string) error {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	cmd := exec.Command("git", "clone", "--quiet", "--depth=1", url, dir)
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes -F /dev/null -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/dev/null"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "fns", "hello", "func.yaml")); err != nil {
		return fmt.Errorf("the clone has no func.yaml: %w", err)
	}
	return nil
}

func writeFile(t *testing.T, path string, content []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, content, mode); err != nil {
		t.Fatal(err)
	}
}

// TestOperator_BuildObjectsGoWithTheFunction deletes a rebuilt Function while the
// operator is stopped: the cluster's garbage collector (kube-controller-manager's,
// run against the test's API server) removes everything its builds created, since
// the Function owns it; what it does not own stays.
func TestOperator_BuildObjectsGoWithTheFunction(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	tekton.StartKubelet(t, restConfig, tekton.Options{Namespaces: []string{ns}, Registry: f.reg, Decide: succeed(t)})
	_, _, stop := startOperatorWith(t, rebuildConfig(2), ns)
	f.createFunction(t, "hello", nil)
	eventually(t, 90*time.Second, rebuilt(t, ns, "hello"))
	fn := getFunction(t, ns, "hello")
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-a-build-object"}})

	// What the build left: func's PVC, registry Secret, Pipeline and PipelineRun,
	// and Tekton's TaskRuns and pods; each owned by the Function or by its run.
	left := func() map[string][]string {
		out := map[string][]string{}
		lists := map[string]client.ObjectList{
			"PipelineRun": &pipelinev1.PipelineRunList{}, "Pipeline": &pipelinev1.PipelineList{}, "TaskRun": &pipelinev1.TaskRunList{},
			"PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{}, "Secret": &corev1.SecretList{}, "Pod": &corev1.PodList{},
		}
		for kind, l := range lists {
			if err := k8sClient.List(context.Background(), l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			items, err := metaItems(l)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range items {
				if kind == "Secret" && o.GetName() == "not-a-build-object" {
					continue
				}
				if kind == "Pod" && o.GetLabels()["serving.knative.dev/revision"] != "" {
					continue // Knative's, for the Service the Function does not own
				}
				out[kind] = append(out[kind], o.GetName())
			}
		}
		return out
	}
	before := left()
	for _, kind := range []string{"PipelineRun", "Pipeline", "TaskRun", "PersistentVolumeClaim", "Secret", "Pod"} {
		if len(before[kind]) == 0 {
			t.Errorf("no %s after the build: the deletion below would prove nothing (%v)", kind, before)
		}
	}
	var owned []string
	for _, l := range []client.ObjectList{&pipelinev1.PipelineRunList{}, &pipelinev1.PipelineList{}, &corev1.PersistentVolumeClaimList{}, &corev1.SecretList{}} {
		if err := k8sClient.List(context.Background(), l, client.InNamespace(ns), client.MatchingLabels{resources.LabelFunction: "hello"}); err != nil {
			t.Fatal(err)
		}
		items, _ := metaItems(l)
		for _, o := range items {
			refs := o.GetOwnerReferences()
			if len(refs) != 1 || refs[0].UID != fn.UID || refs[0].Kind != "Function" {
				t.Errorf("%T %s: owners %+v, want the Function (UID %s)", o, o.GetName(), refs, fn.UID)
			}
			owned = append(owned, o.GetName())
		}
	}
	if len(owned) < 4 {
		t.Errorf("objects labelled as the Function's: %v, want its PVC, Secret, Pipeline and PipelineRun", owned)
	}

	stop()
	testEnv.StartGarbageCollectorT(t)
	if err := k8sClient.Delete(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() string {
		if l := left(); len(l) > 0 {
			return fmt.Sprintf("left after the Function was deleted: %v", l)
		}
		return ""
	})
	// The garbage collector removed only what the Function owned.
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "not-a-build-object"}, &corev1.Secret{}); err != nil {
		t.Errorf("a Secret the Function did not own: %v", err)
	}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "hello"}, &servingv1.Service{}); err != nil {
		t.Errorf("the Knative Service: %v", err)
	}
}

// metaItems returns the items of an object list.
func metaItems(l client.ObjectList) ([]metav1.Object, error) {
	objs, err := apimeta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, 0, len(objs))
	for _, o := range objs {
		m, err := apimeta.Accessor(o)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// TestOperator_BuildHistoryLimit keeps at most spec.buildHistoryLimit finished runs of
// a function whose builds keep failing, besides the one its status records.
func TestOperator_BuildHistoryLimit(t *testing.T) {
	ns := newNamespace(t)
	f := newRebuildFixture(t, ns, "hello")
	kubelet := tekton.StartKubelet(t, restConfig, tekton.Options{
		Namespaces: []string{ns}, Registry: f.reg,
		Decide: func(*pipelinev1.PipelineRun) tekton.Outcome {
			return tekton.Outcome{Fail: true, FailedTask: "build", FailedStep: "create"}
		},
	})
	cfg := rebuildConfig(2)
	cfg.BuildBackoff, cfg.BuildBackoffMax = time.Second, time.Second
	startOperatorWith(t, cfg, ns)
	f.createFunctionSpec(t, "hello", func(fn *v1alpha1.Function) { fn.Spec.BuildHistoryLimit = ptr.To[int32](1) })

	eventually(t, 120*time.Second, func() string {
		if b := getFunction(t, ns, "hello").Status.Build; b == nil || b.Failures < 4 {
			return fmt.Sprintf("status.build = %+v, want 4 failures", b)
		}
		return ""
	})
	// Positive control: at least 4 runs ran, so at least 2 were deleted.
	if n := len(kubelet.Started()); n < 4 {
		t.Fatalf("%d runs started, want at least 4", n)
	}
	eventually(t, 30*time.Second, func() string {
		current := getFunction(t, ns, "hello").Status.Build.ID
		var finished []string
		for _, pr := range pipelineRuns(t, ns) {
			if pr.IsDone() && pr.DeletionTimestamp.IsZero() && pr.Labels[resources.LabelBuildID] != current {
				finished = append(finished, pr.Name)
			}
		}
		if len(finished) > 1 {
			return fmt.Sprintf("finished runs besides the current build's: %v, want at most 1", finished)
		}
		return ""
	})
}

func mustCreate(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8sClient.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}
