package funclib

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"knative.dev/func/pkg/k8s"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/test/envtest"
)

// TestUseCluster points the func library at a real API server with each kind of
// credentials the operator can have, and checks that func's own clients then act as
// the operator, or that UseCluster stops with a message that says why not.
func TestUseCluster(t *testing.T) {
	env := envtest.StartT(t)
	ctx := context.Background()
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	// The operator's ServiceAccount, and a token for it, as a pod would have.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "func-operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ServiceAccounts("func-operator").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "func-operator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("func-operator").CreateToken(ctx, "func-operator", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const sa = "system:serviceaccount:func-operator:func-operator"
	files := t.TempDir()
	tokenFile := filepath.Join(files, "token")
	writeFile(t, tokenFile, tr.Status.Token, 0o600)
	plugin := filepath.Join(files, "credential-plugin")
	writeFile(t, plugin, fmt.Sprintf("#!/bin/sh\ncat <<'EOF'\n"+
		`{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":%q}}`+"\nEOF\n", tr.Status.Token), 0o700)

	server := func() *rest.Config {
		return &rest.Config{Host: env.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	}
	tests := []struct {
		name     string
		cfg      func() *rest.Config
		dirMode  os.FileMode
		owner    int // of the directory, when not 0
		wantUser string
		wantErr  string
	}{{
		name: "token file, as in a pod",
		cfg: func() *rest.Config {
			c := server()
			c.BearerTokenFile = tokenFile
			return c
		},
		wantUser: sa,
	}, {
		name: "token and token file, as rest.InClusterConfig gives them: the kubeconfig names the file only",
		cfg: func() *rest.Config {
			c := server()
			c.BearerToken, c.BearerTokenFile = tr.Status.Token, tokenFile
			return c
		},
		wantUser: sa,
	}, {
		name: "exec plugin",
		cfg: func() *rest.Config {
			c := server()
			c.ExecProvider = &clientcmdapi.ExecConfig{Command: plugin, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			return c
		},
		wantUser: sa,
	}, {
		name:     "client certificate, impersonating the ServiceAccount (as the operator tests run)",
		cfg:      func() *rest.Config { c := rest.CopyConfig(env.Config); c.Impersonate.UserName = sa; return c },
		wantUser: sa,
	}, {
		name: "an auth-provider plugin that cannot authenticate: stops at start",
		cfg: func() *rest.Config {
			c := server()
			c.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
			return c
		},
		wantErr: "asking the API server who the operator is: Must provide idp-issuer-url",
	}, {
		name:    "a directory others may read: stops at start",
		cfg:     func() *rest.Config { c := server(); c.BearerTokenFile = tokenFile; return c },
		dirMode: 0o755,
		wantErr: "goes only into a private directory (0700)",
	}, {
		name:    "a directory of another user: stops at start",
		cfg:     func() *rest.Config { c := server(); c.BearerTokenFile = tokenFile; return c },
		owner:   12345,
		wantErr: "belongs to user 12345",
	}, {
		name:    "credentials the API server refuses: stops at start",
		cfg:     func() *rest.Config { c := server(); c.BearerToken = "not-a-token"; return c },
		wantErr: "asking the API server who the operator is: Unauthorized",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "/nonexistent/kubeconfig")
			dir, err := os.MkdirTemp(t.TempDir(), "func-library-")
			if err != nil {
				t.Fatal(err)
			}
			if tt.dirMode != 0 {
				if err := os.Chmod(dir, tt.dirMode); err != nil {
					t.Fatal(err)
				}
			}
			if tt.owner != 0 {
				if err := os.Chown(dir, tt.owner, tt.owner); err != nil {
					t.Skipf("cannot give the directory to another user here: %v", err)
				}
			}
			c, err := UseCluster(ctx, tt.cfg(), dir, func() string { return "builder" })
			if err == nil {
				t.Cleanup(func() { _ = c.Close() })
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("UseCluster error = %v, want one with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), tr.Status.Token) {
					t.Error("the error holds the token")
				}
				return
			}
			if err != nil {
				t.Fatalf("UseCluster: %v", err)
			}
			path := c.Kubeconfig
			if path != filepath.Join(dir, KubeconfigFile) || os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != path {
				t.Errorf("kubeconfig at %s, KUBECONFIG=%s", path, os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("kubeconfig mode = %v, %v; want 0600", fi.Mode(), err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Only the proxy's token and address: none of the operator's credentials,
			// not even the path to them.
			for _, secret := range []string{tr.Status.Token, tokenFile, plugin, "client-key", "client-certificate", "exec:", "as:"} {
				if strings.Contains(string(b), secret) {
					t.Errorf("the kubeconfig holds the operator's credentials (%.20q...)", secret)
				}
			}
			if !strings.Contains(string(b), "server: https://127.0.0.1:") {
				t.Errorf("the kubeconfig points elsewhere than at the loopback proxy:\n%s", b)
			}
			// func's own client, built from KUBECONFIG as func builds it, acts as the operator.
			funcCfg, err := k8s.GetClientConfig().ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			user, err := whoAmI(ctx, funcCfg)
			if err != nil {
				t.Fatalf("the func library's client: %v", err)
			}
			if !strings.HasPrefix(user, fmt.Sprintf("%q ", tt.wantUser)) {
				t.Errorf("the func library acts as %q, want %q", user, tt.wantUser)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestUseCluster_Proxy checks what the func library's proxy lets through: only
// requests with its token, never an identity the caller asks for, and PipelineRuns
// only with the build ServiceAccount, whatever func's PipelineRun says.
func TestUseCluster_Proxy(t *testing.T) {
	env := envtest.StartT(t, envtest.TektonCRDs)
	ctx := context.Background()
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, "/nonexistent/kubeconfig")
	dir, err := os.MkdirTemp(t.TempDir(), "func-library-")
	if err != nil {
		t.Fatal(err)
	}
	const sa = "system:serviceaccount:func-operator:func-operator"
	opCfg := rest.CopyConfig(env.Config)
	opCfg.Impersonate.UserName = sa
	c, err := UseCluster(ctx, opCfg, dir, func() string { return "func-operator-builder" })
	if err != nil {
		t.Fatal(err)
	}
	funcCfg, err := k8s.GetClientConfig().ClientConfig()
	if err != nil {
		t.Fatal(err)
	}

	// Positive control: func's client, with the proxy's token, is the operator.
	if user, err := whoAmI(ctx, funcCfg); err != nil || !strings.HasPrefix(user, fmt.Sprintf("%q ", sa)) {
		t.Fatalf("through the proxy: %s, %v; want %s", user, err, sa)
	}
	// Builds start only while func's clients go through the proxy.
	if _, err := throughProxy(); err != nil {
		t.Errorf("through the proxy: %v", err)
	}
	path := os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, filepath.Join(dir, "gone.kubeconfig"))
	err = RunPipeline(ctx, BuildRequest{Namespace: "builds", Function: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/fns"},
		GitURL: "http://127.0.0.1:1/x.git", Revision: "main", WorkDir: t.TempDir(), ID: "b0",
		Owner: metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "hello", UID: "u0"}})
	if err == nil || !strings.Contains(err.Error(), "no build is started") {
		t.Errorf("RunPipeline with KUBECONFIG gone: %v, want no build started", err)
	}
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, path)
	// An identity asked for through the proxy is dropped, not granted.
	asAdmin := rest.CopyConfig(funcCfg)
	asAdmin.Impersonate = rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}
	if user, err := whoAmI(ctx, asAdmin); err != nil || !strings.HasPrefix(user, fmt.Sprintf("%q ", sa)) {
		t.Errorf("asking the proxy for system:masters: %s, %v; want the operator's identity %s", user, err, sa)
	}
	// Another token, or none, is refused.
	for name, token := range map[string]string{"a wrong token": "x" + funcCfg.BearerToken[1:], "no token": ""} {
		wrong := rest.CopyConfig(funcCfg)
		wrong.BearerToken = token
		if _, err := whoAmI(ctx, wrong); !apierrors.IsUnauthorized(err) {
			t.Errorf("%s: %v, want Unauthorized", name, err)
		}
	}

	// PipelineRuns, in both API versions, get the build ServiceAccount, and lose any
	// per-task ServiceAccount. The proxy runs as the impersonated ServiceAccount, which
	// may do nothing here: create them as admin through a second proxy.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := whoAmI(ctx, funcCfg); err == nil {
		t.Error("the proxy still answers after Close")
	}
	if _, err := throughProxy(); err == nil {
		t.Error("builds could start after Close")
	}
	c, err = UseCluster(ctx, env.Config, dir, func() string { return "func-operator-builder" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	funcCfg, err = k8s.GetClientConfig().ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(funcCfg)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "builds"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The objects of build b1 of Function fn (UID u1), which the operator runs.
	owner := metav1.OwnerReference{APIVersion: "functions.dev/v1alpha1", Kind: "Function", Name: "fn", UID: "u1"}
	t.Cleanup(register("builds", "b1", &registration{owner: owner}))
	for _, tt := range []struct {
		version, manifest  string
		saPath, taskSAPath []string
	}{{
		version: "v1",
		manifest: `
apiVersion: tekton.dev/v1
kind: PipelineRun
metadata: {generateName: fn-run-, labels: {functions.dev/build-id: b1}}
spec:
  pipelineRef: {name: fn-pipeline}
  taskRunSpecs:
  - pipelineTaskName: build
    serviceAccountName: admin
`,
		saPath:     []string{"spec", "taskRunTemplate", "serviceAccountName"},
		taskSAPath: []string{"serviceAccountName"},
	}} {
		t.Run(tt.version, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tt.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			gvr := schema.GroupVersionResource{Group: "tekton.dev", Version: tt.version, Resource: "pipelineruns"}
			got, err := dyn.Resource(gvr).Namespace("builds").Create(ctx, u, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating a PipelineRun through the proxy: %v", err)
			}
			// Read back straight from the API server, not through the proxy.
			direct, err := dynamic.NewForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			// Stored as tekton.dev/v1, whichever version func sent.
			v1 := schema.GroupVersionResource{Group: "tekton.dev", Version: "v1", Resource: "pipelineruns"}
			got, err = direct.Resource(v1).Namespace("builds").Get(ctx, got.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]metav1.OwnerReference{owner}, got.GetOwnerReferences()); diff != "" {
				t.Errorf("owner references (-want +got):\n%s", diff)
			}
			if sa, _, _ := unstructured.NestedString(got.Object, tt.saPath...); sa != "func-operator-builder" {
				t.Errorf("%v = %q, want func-operator-builder", tt.saPath, sa)
			}
			specs, _, _ := unstructured.NestedSlice(got.Object, "spec", "taskRunSpecs")
			if len(specs) != 1 {
				t.Fatalf("taskRunSpecs = %v, want the one sent", specs)
			}
			if sa, ok := specs[0].(map[string]any)[tt.taskSAPath[0]]; ok {
				t.Errorf("a task still runs as %v", sa)
			}

			// An apply, which may create, or an update could set another
			// ServiceAccount: refused. Deletes pass (the positive control).
			u.SetName("applied")
			u.SetGenerateName("")
			_, err = dyn.Resource(gvr).Namespace("builds").Apply(ctx, "applied", u, metav1.ApplyOptions{FieldManager: "func"})
			if !apierrors.IsForbidden(err) {
				t.Errorf("applying a PipelineRun through the proxy: %v, want Forbidden", err)
			}
			got.Object["spec"].(map[string]any)["serviceAccountName"] = "default"
			if _, err := dyn.Resource(gvr).Namespace("builds").Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("updating a PipelineRun through the proxy: %v, want Forbidden", err)
			}
			if err := dyn.Resource(gvr).Namespace("builds").Delete(ctx, got.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting a PipelineRun through the proxy: %v", err)
			}
		})
	}

	rt, err := rest.TransportFor(funcCfg)
	if err != nil {
		t.Fatal(err)
	}
	// A PipelineRun spelled so that the rewrite would miss its ServiceAccount (Tekton's
	// decoder folds case), created through a named path, or with a pod template is
	// refused; a plain one passes (the positive control).
	for _, tt := range []struct {
		name, path, body string
		want             int
	}{{
		name: "plain", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusCreated,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"ok-","labels":{"functions.dev/build-id":"b1"}},"spec":{"pipelineRef":{"name":"p"}}}`,
	}, {
		name: "a v1beta1 PipelineRun (func v0.50 writes v1)", path: "/apis/tekton.dev/v1beta1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1beta1","kind":"PipelineRun","metadata":{"generateName":"ok-","labels":{"functions.dev/build-id":"b1"}},"spec":{"pipelineRef":{"name":"p"}}}`,
	}, {
		name: "a build the operator does not run", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"ok-","labels":{"functions.dev/build-id":"b2"}},"spec":{"pipelineRef":{"name":"p"}}}`,
	}, {
		name: "no build label", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"ok-"},"spec":{"pipelineRef":{"name":"p"}}}`,
	}, {
		name: "a build's Secret", path: "/api/v1/namespaces/builds/secrets", want: http.StatusCreated,
		body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"fn-creds","labels":{"functions.dev/build-id":"b1"}},"stringData":{"a":"b"}}`,
	}, {
		name: "a token Secret of the build", path: "/api/v1/namespaces/builds/secrets", want: http.StatusBadRequest,
		body: `{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"tok","labels":{"functions.dev/build-id":"b1"},"annotations":{"kubernetes.io/service-account.name":"default"}}}`,
	}, {
		name: "a Secret of no build", path: "/api/v1/namespaces/builds/secrets", want: http.StatusBadRequest,
		body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"other"},"stringData":{"a":"b"}}`,
	}, {
		name: "a ConfigMap", path: "/api/v1/namespaces/builds/configmaps", want: http.StatusForbidden,
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"functions.dev/build-id":"b1"}}}`,
	}, {
		name: "a RoleBinding", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/builds/rolebindings", want: http.StatusForbidden,
		body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"rb"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},"subjects":[]}`,
	}, {
		name: "a key in another case", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"x-","labels":{"functions.dev/build-id":"b1"}},"spec":{"pipelineRef":{"name":"p"},"ServiceAccountName":"admin"}}`,
	}, {
		name: "a key with a long s", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"x-"},"spec":{"pipelineRef":{"name":"p"},"ſerviceAccountName":"admin"}}`,
	}, {
		name: "a key twice", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"x-"},"spec":{"pipelineRef":{"name":"p"}},"spec":{"pipelineRef":{"name":"q"}}}`,
	}, {
		name: "a pod template", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns", want: http.StatusBadRequest,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"generateName":"x-"},"spec":{"pipelineRef":{"name":"p"},"taskRunTemplate":{"podTemplate":{"hostNetwork":true}}}}`,
	}, {
		name: "a POST to a named path", path: "/apis/tekton.dev/v1/namespaces/builds/pipelineruns/named", want: http.StatusForbidden,
		body: `{"apiVersion":"tekton.dev/v1","kind":"PipelineRun","metadata":{"name":"named"},"spec":{"pipelineRef":{"name":"p"}}}`,
	}} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, funcCfg.Host+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}

	// client-go 0.35 sends built-in types as protobuf: a Secret of the build passes
	// (func's own PVC and registry Secret in TestRunPipeline_BuildObjects are too),
	// and its owner is set; another kind in a Secret's envelope is refused.
	for _, tt := range []struct {
		name string
		obj  runtime.Object
		want int
	}{
		{name: "a protobuf Secret of the build", want: http.StatusCreated,
			obj: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "proto-creds", Labels: map[string]string{LabelBuildID: "b1"}}, StringData: map[string]string{"a": "b"}}},
		{name: "a protobuf ConfigMap sent as a Secret", want: http.StatusBadRequest,
			obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "proto-cm", Labels: map[string]string{LabelBuildID: "b1"}}}},
	} {
		var buf bytes.Buffer
		gvks, _, err := clientgoscheme.Scheme.ObjectKinds(tt.obj)
		if err != nil {
			t.Fatal(err)
		}
		tt.obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		if err := protobufCodec.Encode(tt.obj, &buf); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, funcCfg.Host+"/api/v1/namespaces/builds/secrets", &buf)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", runtime.ContentTypeProtobuf)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	if sec, err := admin.CoreV1().Secrets("builds").Get(ctx, "proto-creds", metav1.GetOptions{}); err != nil {
		t.Errorf("the protobuf Secret: %v", err)
	} else if diff := cmp.Diff([]metav1.OwnerReference{owner}, sec.OwnerReferences); diff != "" {
		t.Errorf("the protobuf Secret's owners (-want +got):\n%s", diff)
	}

	// func may delete only a run of a build the operator runs: one created straight
	// at the API server, of no build, stays.
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
		"metadata": map[string]any{"name": "not-a-build"}, "spec": map[string]any{"pipelineRef": map[string]any{"name": "p"}}}}
	runs := schema.GroupVersionResource{Group: "tekton.dev", Version: "v1", Resource: "pipelineruns"}
	direct, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Resource(runs).Namespace("builds").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(runs).Namespace("builds").Delete(ctx, "not-a-build", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a PipelineRun of no build through the proxy: %v, want Forbidden", err)
	}

	// A path the API server would read differently from the proxy is refused; the
	// same request on the clean path passes (the positive control).
	for p, want := range map[string]int{
		"/apis/tekton.dev/v1/namespaces/builds/pipelineruns":      http.StatusOK,
		"/apis//tekton.dev/v1/namespaces/builds/pipelineruns":     http.StatusBadRequest,
		"/apis/tekton.dev/v1/namespaces/x/../builds/pipelineruns": http.StatusBadRequest,
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, funcCfg.Host+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // as sent, not cleaned by the client
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s through the proxy: %d, want %d", p, resp.StatusCode, want)
		}
	}
}
