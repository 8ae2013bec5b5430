package git

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/netguard/netguardtest"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/test/gitserver"
)

// TestInstallGuard_Proxy lists an HTTPS repository through HTTPS_PROXY: the target
// is named example.com (the test server's certificate is valid for it), which the
// proxy, and only it, takes to the server on 127.0.0.1.
func TestInstallGuard_Proxy(t *testing.T) {
	root := gitserver.NewRepoRoot(t)
	srv := gitserver.StartHTTPS(t, root)
	gitserver.CreateRepo(t, root, "fn").Commit(t, "main", map[string]string{"func.yaml": "name: fn\n"}, "init")
	loopbackURL := srv.URL("fn")
	hostPort := strings.SplitN(strings.TrimPrefix(loopbackURL, "https://"), "/", 2)[0]
	port := hostPort[strings.LastIndex(hostPort, ":")+1:]
	url := strings.Replace(loopbackURL, hostPort, "example.com:"+port, 1)

	tests := []struct {
		name        string
		deny        []string
		wantConnect int64
		wantRefs    int
		wantRule    string // the rule refusing the target; "" for success
	}{
		{name: "through the proxy", wantConnect: 1, wantRefs: 1},
		{name: "a denied target is refused before the proxy sees it", deny: []string{"example.com"}, wantRule: "example.com"},
		{name: "a denied domain", deny: []string{"*.com"}, wantRule: "*.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := netguardtest.StartConnectProxy(t, hostPort)
			t.Setenv("HTTPS_PROXY", proxy.URL)
			t.Setenv("NO_PROXY", "")
			t.Setenv("REQUEST_METHOD", "")
			g := installTestGuard(t, tt.deny...)
			g.SetProxy(netguard.ProxyFromEnvironment())
			auth := secretAuth(t, url, map[string][]byte{KeyCACert: srv.CertificatePEM()})
			before := srv.RefAdvertisements("fn")

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := listRefs(ctx, url, auth)
			var d *netguard.DeniedError
			switch {
			case tt.wantRule == "" && err != nil:
				t.Fatalf("listing %s: %v", url, err)
			case tt.wantRule != "" && !errors.As(err, &d):
				t.Fatalf("listing %s: got %v, want a refusal", url, err)
			case tt.wantRule != "" && d.Rule != tt.wantRule:
				t.Errorf("refused by %q, want %q", d.Rule, tt.wantRule)
			case tt.wantRule != "":
				// What the Fetcher makes of it: HostNotAllowed, stalling.
				got := remoteError(ctx, v1alpha1.ReasonBranchListFailed, "listing the branches of", url, auth, err)
				if diff := cmp.Diff([]any{v1alpha1.ReasonHostNotAllowed, true}, []any{rerror.Reason(got), rerror.IsStalling(got)}); diff != "" {
					t.Errorf("reason and stalling (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.wantConnect, proxy.Connects()); diff != "" {
				t.Errorf("CONNECTs the proxy received (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRefs, srv.RefAdvertisements("fn")-before); diff != "" {
				t.Errorf("ref advertisements served (-want +got):\n%s", diff)
			}
		})
	}
}
