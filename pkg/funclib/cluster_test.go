package funclib

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"knative.dev/func/pkg/k8s"

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
		name: "auth-provider plugin: stops at start, saying what to use instead",
		cfg: func() *rest.Config {
			c := server()
			c.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
			return c
		},
		wantErr: `"oidc" auth-provider plugin, which the func library's kubeconfig cannot carry`,
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
			path, err := UseCluster(ctx, tt.cfg(), dir)
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
			if path != filepath.Join(dir, KubeconfigFile) || os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != path {
				t.Errorf("kubeconfig at %s, KUBECONFIG=%s", path, os.Getenv(clientcmd.RecommendedConfigPathEnvVar))
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("kubeconfig mode = %v, %v; want 0600", fi.Mode(), err)
			}
			if b, err := os.ReadFile(path); err != nil || strings.Contains(string(b), tr.Status.Token) {
				t.Errorf("the kubeconfig holds the token itself (%v); it names the token file at most", err)
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
