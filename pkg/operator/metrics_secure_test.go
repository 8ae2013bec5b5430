package operator

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/envtest"
)

// TestOperator_MetricsSecure: with MetricsSecure (the binary's default) the metrics
// are served over HTTPS to whom the API server authenticates and authorizes, the
// operator asking it with only the RBAC of config/. No token: 401; a token the API
// server did not issue: 500. A ServiceAccount's token without the reader role: 403.
// The same ServiceAccount bound to config/'s func-operator-metrics-reader: served.
func TestOperator_MetricsSecure(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	addr := freeAddr(t)
	startOperatorOptions(t, config.Defaults(), nil, func(o *Options) { o.MetricsAddr, o.MetricsSecure = addr, true }, ns)

	// The reader role as config/ ships it (TestMain applied envtest.RBACFiles, of
	// which it is one): its name and rules from the file, not a copy.
	objs, err := envtest.Read(envtest.MetricsReaderFile)
	if err != nil {
		t.Fatal(err)
	}
	reader := &rbacv1.ClusterRole{}
	if len(objs) != 1 || runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, reader) != nil || reader.Name != MetricsReaderClusterRole {
		t.Fatalf("%s holds %d objects, want ClusterRole %s", envtest.MetricsReaderFile, len(objs), MetricsReaderClusterRole)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	if err := k8sClient.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := k8sClient.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s/%s: %v", ns, sa.Name, err)
	}

	// The certificate is self-signed, made when the operator starts: nothing to
	// verify it against. Loopback only.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a self-signed certificate on loopback
	}}
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// want waits for the status (the server starts with the manager; a binding reaches
	// the filter's cache of denials within 30 s) and returns the body.
	want := func(what, token string, status int, timeout time.Duration) string {
		t.Helper()
		var body string
		eventually(t, timeout, func() string {
			code, b, err := get(token)
			if err != nil {
				return fmt.Sprintf("%s: %v", what, err)
			}
			if code != status {
				return fmt.Sprintf("%s: status %d, want %d", what, code, status)
			}
			body = b
			return ""
		})
		return body
	}

	want("no token", "", http.StatusUnauthorized, 30*time.Second)
	// controller-runtime v0.23's filter answers a token the TokenReview rejects with 500
	// "Authentication failed" (k8s.io/apiserver's bearer token authenticator reports it
	// as an error, not as "not authenticated"): refused all the same.
	want("a token the API server did not issue", "not-a-token", http.StatusInternalServerError, 10*time.Second)
	want("a ServiceAccount without the reader role", tr.Status.Token, http.StatusForbidden, 10*time.Second)
	// Plain HTTP is not served beside HTTPS.
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the metrics are served over plain HTTP too")
		}
	}

	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	if err := k8sClient.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), binding) })
	// The filter caches a denial for 30 s.
	body := want("the ServiceAccount bound to "+reader.Name, tr.Status.Token, http.StatusOK, 60*time.Second)
	if !strings.Contains(body, "func_operator_build_queue_length ") {
		t.Errorf("the metrics served lack func_operator_build_queue_length:\n%.2000s", body)
	}
}
