package operator

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/monitoring"
)

// TestOperator_MetricsReviewsBounded: scrapes with tokens the API server did not
// issue, each new, cause at most metricsReviewBurst TokenReviews and
// metricsReviewRate a second more (counted on the operator's own connection to the
// API server); the rest are refused with 429 before any review. Prometheus's token,
// once reviewed, still scrapes through the flood. The metrics are served with the
// certificate of --metrics-cert-dir, for the name config/monitoring's Certificate
// asks, and scraped as its ServiceMonitor does: the certificate verified against the
// CA and serverName it names. Positive controls: the good token is reviewed, the
// first bad tokens are too, and a client that does not trust the CA is refused.
func TestOperator_MetricsReviewsBounded(t *testing.T) {
	ctx := context.Background()
	serverName, dnsNames := shippedMetricsTLS(t)
	caPool, certDir := metricsCertificate(t, dnsNames)

	var reviews atomic.Int64
	counting := rest.CopyConfig(operatorConfig)
	counting.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tokenreviews") {
				reviews.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	ns, system, addr := newNamespace(t), newNamespace(t), freeAddr(t)
	ownNamespaceRBAC(t, system)
	store := config.NewStore()
	store.Set(config.Defaults())
	runManager(t, counting, Options{WatchNamespaces: []string{ns}, SystemNamespace: system, MetricsAddr: addr, MetricsSecure: true,
		MetricsCertDir: certDir, ProbeAddr: "0", WorkDir: t.TempDir(), Config: store, SkipControllerNameValidation: true})

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	if err := k8sClient.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	if err := k8sClient.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), binding) })
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := k8sClient.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}

	// As the ServiceMonitor: its serverName, against the CA of the Secret.
	verified := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: caPool, ServerName: serverName, MinVersion: tls.VersionTLS12},
		DialContext:     dialTo(addr),
	}}
	get := func(hc *http.Client, token string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+serverName+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	// The binding reaches the filter's cache of denials within 30 s.
	eventually(t, 60*time.Second, func() string {
		code, err := get(verified, tr.Status.Token)
		if err != nil || code != http.StatusOK {
			return fmt.Sprintf("Prometheus's scrape: %d, %v", code, err)
		}
		return ""
	})
	if reviews.Load() == 0 {
		t.Fatal("no TokenReview counted for Prometheus's token: the count does not see the filter's client")
	}
	untrusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}, DialContext: dialTo(addr),
	}}
	var unknownCA x509.UnknownAuthorityError
	if _, err := get(untrusting, tr.Status.Token); !errors.As(err, &unknownCA) {
		t.Errorf("a client without the CA: %v, want x509: unknown authority", err)
	}

	const flood = 200
	before, start := reviews.Load(), time.Now()
	answers := map[int]int{}
	for i := range flood {
		code, err := get(verified, fmt.Sprintf("not-a-token-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		answers[code]++
	}
	elapsed := time.Since(start)
	got := reviews.Load() - before
	bound := int64(metricsReviewBurst) + int64(math.Ceil(elapsed.Seconds()*float64(metricsReviewRate)))
	t.Logf("%d bad tokens in %s: %d TokenReviews (bound %d), answers %v", flood, elapsed.Round(time.Millisecond), got, bound, answers)
	if got > bound {
		t.Errorf("%d TokenReviews for %d bad tokens in %s, want at most %d", got, flood, elapsed, bound)
	}
	if answers[http.StatusInternalServerError] == 0 || answers[http.StatusTooManyRequests] < flood-int(bound) ||
		answers[http.StatusInternalServerError]+answers[http.StatusTooManyRequests] != flood {
		t.Errorf("answers %v: want some reviewed and refused (500), the rest 429", answers)
	}
	// Prometheus's token is known: it scrapes with the limiter empty.
	for range 3 {
		if code, err := get(verified, tr.Status.Token); err != nil || code != http.StatusOK {
			t.Errorf("Prometheus's scrape after the flood: %d, %v", code, err)
		}
	}
}

// dialTo dials addr whatever the URL's host, as a Service name resolves to its pod.
func dialTo(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// shippedMetricsTLS returns the serverName config/monitoring's ServiceMonitor
// verifies, and the DNS names its Certificate for the metrics asks for.
func shippedMetricsTLS(t *testing.T) (serverName string, dnsNames []string) {
	t.Helper()
	read := func(file string) [][]byte {
		data, err := os.ReadFile(filepath.Join(monitoring.Dir(), file))
		if err != nil {
			t.Fatal(err)
		}
		return monitoring.Documents(data)
	}
	var sm monitoring.ServiceMonitor
	if err := yaml.UnmarshalStrict(read(monitoring.ServiceMonitorFile)[0], &sm); err != nil {
		t.Fatal(err)
	}
	tc := sm.Spec.Endpoints[0].TLSConfig
	if tc == nil || tc.ServerName == "" || tc.CA == nil || tc.CA.Secret == nil {
		t.Fatalf("the ServiceMonitor's tlsConfig %+v verifies no certificate", tc)
	}
	for _, doc := range read(monitoring.CertificateFile) {
		var c monitoring.Certificate
		if kind, _ := monitoring.Kind(doc); kind != "Certificate" || yaml.UnmarshalStrict(doc, &c) != nil {
			continue
		}
		if c.Spec.SecretName == tc.CA.Secret.Name {
			return tc.ServerName, c.Spec.DNSNames
		}
	}
	t.Fatalf("no Certificate of %s issues Secret %s", monitoring.CertificateFile, tc.CA.Secret.Name)
	return "", nil
}

// metricsCertificate makes a CA and a serving certificate it signs for dnsNames, as
// cert-manager's CA issuer does, and writes the latter as --metrics-cert-dir reads it
// (tls.crt, tls.key). It returns the CA and the directory.
func metricsCertificate(t *testing.T, dnsNames []string) (*x509.CertPool, string) {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey, key := newKey(), newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "func-operator-metrics-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), DNSNames: dnsNames, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, dir
}
