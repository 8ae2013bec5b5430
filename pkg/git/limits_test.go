package git

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/testfs"
)

// randomText is n bytes that do not compress.
func randomText(seed int64, n int) string {
	r := rand.New(rand.NewSource(seed))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.Intn(len(letters))]
	}
	return string(b)
}

func TestFetcher_CloneLimits(t *testing.T) {
	g := newHTTPGit(t)
	_, bigCommit := g.repo(t, "big", map[string]string{"func.yaml": funcYAML("big", "go"), "blob.txt": randomText(1, 3<<20)})
	many := map[string]string{"func.yaml": funcYAML("many", "go")}
	for i := 0; i < 300; i++ {
		many[fmt.Sprintf("f/%03d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	_, manyCommit := g.repo(t, "many", many)

	tests := []struct {
		name    string
		repo    string
		commit  string
		limits  Limits
		wantErr *wantError
	}{{
		name: "a repository over cloneMaxBytes", repo: "big", commit: bigCommit, limits: Limits{MaxBytes: 1 << 20, MaxFiles: 1000},
		wantErr: &wantError{reason: v1alpha1.ReasonCloneTooLarge, stalling: true,
			msgHas: []string{"cloning " + g.srv.URL("big"), "over the 1048576 bytes the operator transfers (ConfigMap key cloneMaxBytes)"}},
	}, {
		name: "the same repository within the limit (positive control)", repo: "big", commit: bigCommit, limits: Limits{MaxBytes: 8 << 20, MaxFiles: 1000},
	}, {
		name: "a repository over cloneMaxFiles", repo: "many", commit: manyCommit, limits: Limits{MaxBytes: 8 << 20, MaxFiles: 100},
		wantErr: &wantError{reason: v1alpha1.ReasonCloneTooManyFiles, stalling: true,
			msgHas: []string{"the clone holds 304 objects (files and directories), more than the 100 the operator reads (ConfigMap key cloneMaxFiles)"}},
	}, {
		name: "the same repository within the limit (positive control)", repo: "many", commit: manyCommit, limits: Limits{MaxBytes: 8 << 20, MaxFiles: 1000},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			f := NewFetcher(work, 0, manifests)
			f.Limits = func() Limits { return tt.limits }
			url := g.srv.URL(tt.repo)
			res, err := f.Read(context.Background(), url, Head{Branch: "main", Commit: tt.commit}, "", anonymous(t, url), gitTimeout)
			checkError(t, tt.wantErr, err)
			if tt.wantErr == nil && res.Metadata.Name != tt.repo {
				t.Errorf("read func.yaml of %q, want %q", res.Metadata.Name, tt.repo)
			}
			testfs.AssertEmptyDir(t, work)
		})
	}
}

func TestBudget_StopsThePackWhileItStreams(t *testing.T) {
	b := &budget{limits: Limits{MaxBytes: 100, MaxFiles: 10}}
	header := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x05")
	if err := b.add(12, header); err != nil {
		t.Fatalf("the header: %v", err)
	}
	if err := b.add(88, header); err != nil {
		t.Fatalf("up to the limit: %v", err)
	}
	if err := b.add(1, header); err == nil || !strings.Contains(err.Error(), "cloneMaxBytes") {
		t.Fatalf("past the limit: got %v, want a refusal", err)
	}
	if err := b.add(1, header); err == nil {
		t.Fatalf("after a refusal, a write went through")
	}
	many := &budget{limits: Limits{MaxBytes: 100, MaxFiles: 4}}
	if err := many.add(12, header); err == nil || !strings.Contains(err.Error(), "holds 5 objects") {
		t.Fatalf("a pack declaring 5 objects over a limit of 4: got %v", err)
	}
}

// guarded installs a Guard with policy deny in go-git for the test.
func guarded(t *testing.T, deny ...string) *netguard.Guard {
	t.Helper()
	p, err := netguard.NewPolicy(nil, deny, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := netguard.New(p)
	InstallGuard(g)
	t.Cleanup(func() {
		client.InstallProtocol("http", githttp.DefaultClient)
		client.InstallProtocol("https", githttp.DefaultClient)
	})
	return g
}

func TestFetcher_HostNotAllowed(t *testing.T) {
	g := newHTTPGit(t)
	_, commit := g.repo(t, "fn", map[string]string{"func.yaml": funcYAML("fn", "go")})
	url := g.srv.URL("fn")
	host := strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(url, "http://"), "/", 2)[0], "")
	guard := guarded(t, host)
	f := NewFetcher(t.TempDir(), 0, manifests)
	f.Guard = guard

	_, err := f.Head(context.Background(), url, "main", anonymous(t, url), gitTimeout)
	checkError(t, &wantError{reason: v1alpha1.ReasonHostNotAllowed, stalling: true,
		msgHas: []string{"listing the branches of " + url, "host not allowed: 127.0.0.1 (" + host + ") is refused by the operator's network policy (" + host + ")"}}, err)
	_, err = f.Read(context.Background(), url, Head{Branch: "main", Commit: commit}, "", anonymous(t, url), gitTimeout)
	checkError(t, &wantError{reason: v1alpha1.ReasonHostNotAllowed, stalling: true, msgHas: []string{"cloning " + url, "host not allowed"}}, err)
	if got := g.counts("fn"); got != [2]int{0, 0} {
		t.Errorf("the refused server served %v (ref advertisements, upload-packs), want nothing", got)
	}

	// Positive control: the same server, allowed.
	p, _ := netguard.NewPolicy([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}, nil, nil)
	guard.SetPolicy(p)
	if _, err := f.Head(context.Background(), url, "main", anonymous(t, url), gitTimeout); err != nil {
		t.Fatalf("allowed again: %v", err)
	}
	if dials, denials := guard.Counts(); dials == 0 || denials != 2 {
		t.Errorf("the guard counted %d dials, %d denials; want some, and 2", dials, denials)
	}
}

func TestFetcher_SSHHostNotAllowed(t *testing.T) {
	srv := gitserver.StartSSH(t)
	root := gitserver.NewRepoRoot(t)
	repo := gitserver.CreateRepo(t, root, "fns")
	commit := repo.Commit(t, "main", map[string]string{"func.yaml": funcYAML("fn", "go"), "blob.txt": randomText(2, 3<<20)}, "init")
	url := srv.URL(repo.Dir)
	auth := authFrom(t, url, map[string]string{KeySSHPrivateKey: string(srv.ClientPrivateKeyPEM()), KeyKnownHosts: string(srv.KnownHosts())})
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port())
	p, err := netguard.NewPolicy([]netip.AddrPort{netip.MustParseAddrPort(addr)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	guard := netguard.New(p)
	f := NewFetcher(t.TempDir(), 0, manifests)
	f.Guard = guard
	_, err = f.Head(context.Background(), url, "main", auth, gitTimeout)
	checkError(t, &wantError{reason: v1alpha1.ReasonHostNotAllowed, stalling: true,
		msgHas: []string{"the Kubernetes API server " + addr}}, err)

	// Positive control, and the byte cap over SSH.
	p, _ = netguard.NewPolicy(nil, nil, nil)
	guard.SetPolicy(p)
	head, err := f.Head(context.Background(), url, "main", auth, gitTimeout)
	if err != nil || head.Commit != commit {
		t.Fatalf("allowed: got %v, %v; want commit %s", head, err, commit)
	}
	f.Limits = func() Limits { return Limits{MaxBytes: 1 << 20, MaxFiles: 100} }
	_, err = f.Read(context.Background(), url, head, "", auth, gitTimeout)
	checkError(t, &wantError{reason: v1alpha1.ReasonCloneTooLarge, stalling: true, msgHas: []string{"cloneMaxBytes"}}, err)
	var d *netguard.DeniedError
	if errors.As(err, &d) {
		t.Errorf("the byte cap came back as a refusal: %v", err)
	}
}

// TestFetcher_SSHServerThatSaysNothing: go-git dials SSH and shakes hands without
// the operation's context; the guard's deadline ends a server that accepts and
// says nothing, within gitTimeout.
func TestFetcher_SSHServerThatSaysNothing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() }) // silent, until the test ends
		}
	}()
	srv := gitserver.StartSSH(t) // for a key and a known_hosts line; not dialed
	url := fmt.Sprintf("ssh://git@%s/repo.git", l.Addr())
	auth := authFrom(t, url, map[string]string{KeySSHPrivateKey: string(srv.ClientPrivateKeyPEM()), KeyKnownHosts: string(srv.KnownHosts())})
	p, _ := netguard.NewPolicy(nil, nil, nil)
	f := NewFetcher(t.TempDir(), 0, manifests)
	f.Guard = netguard.New(p)
	start := time.Now()
	_, err = f.Head(context.Background(), url, "main", auth, time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Head took %s against a silent server, with gitTimeout 1s", took)
	}
	checkError(t, &wantError{reason: v1alpha1.ReasonGitTimedOut, stalling: false, msgHas: []string{"timed out"}}, err)
}
