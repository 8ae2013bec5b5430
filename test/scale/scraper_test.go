//go:build scale

package scale

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"

	"github.com/fnops/func-operator/pkg/operator"
)

// scrapesForCost is how many scrapes, back to back, measure what one costs the operator.
const scrapesForCost = 20

// newScraper returns a client that scrapes the operator's metrics as the shipped
// ServiceMonitor has Prometheus do: over HTTPS (the operator's self-signed
// certificate, on loopback), with the token of a ServiceAccount bound to config/'s
// func-operator-metrics-reader. The operator authenticates (TokenReview) and
// authorizes (SubjectAccessReview) it, with the caches of controller-runtime's filter.
func (b *bench) newScraper(t *testing.T) *http.Client {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: b.dep.systemNamespace, Name: "prometheus"}}
	if err := b.admin.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if err := b.admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-prometheus"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: operator.MetricsReaderClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(readyBound.Seconds()) * 3)}}
	if err := b.admin.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s/%s: %v", sa.Namespace, sa.Name, err)
	}
	return &http.Client{Timeout: time.Minute, Transport: transport.NewBearerAuthRoundTripper(tr.Status.Token, &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the operator's self-signed certificate, on loopback
	})}
}

func (b *bench) metricsURL() string { return "https://" + b.dep.metrics + "/metrics" }

// scrapeCost scrapes the operator's metrics scrapesForCost times back to back and
// returns the operator's CPU per scrape, less what it spends meanwhile regardless
// (background: its CPU per second in the steady state), and the size of one.
func (b *bench) scrapeCost(t *testing.T, background float64) (time.Duration, int) {
	t.Helper()
	cpu0, err := cpuTime(b.op.pid())
	if err != nil {
		t.Fatal(err)
	}
	start, series := time.Now(), 0
	for i := 0; i < scrapesForCost; i++ {
		f, err := scrape(b.scraper, b.metricsURL())
		if err != nil {
			t.Fatalf("scraping the operator's metrics: %v", err)
		}
		series = f.series()
	}
	elapsed := time.Since(start)
	cpu1, err := cpuTime(b.op.pid())
	if err != nil {
		t.Fatal(err)
	}
	spent := (cpu1 - cpu0) - time.Duration(background*float64(elapsed))
	return max(spent, 0) / scrapesForCost, series
}

func (r result) scrapeString() string {
	return fmt.Sprintf("%s (%d series; a Prometheus scraping every 15 s: %.4f cores)", r.scrapeCPU.Round(10*time.Microsecond), r.scrapeSeries, r.scrapeCPU.Seconds()/15)
}
