package git

import (
	"context"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// What the CRD admits of spec.repository, as its CEL rules (api/v1alpha1,
// function_types.go) say it: the Go side is only ever handed what passes them.
// CEL's matches() is RE2, as Go's regexp, and searches as MatchString does.
// TestCRDRulesMirrored keeps these in step with the markers.
var (
	crdURLForms = []string{`^(https?|ssh)://[^/ ]+(/.*)?$`, `^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^ ]+$`}
	// A user part may hold an '@': url.Parse, as go-git, splits at the last one.
	crdURLNoCredentials = []string{`^[a-z]+://[^/]*:[^/]*@`, `^https?://[^/]*@`}
	crdURLNoControl     = `[[:cntrl:]]`
	crdPathNoDotDot     = `(^|/)[.][.](/|$)`
	// crdBranchRule is checked in Go by crdAdmitsBranch.
	crdBranchRule = `!self.startsWith('-') && !self.startsWith('refs/') && !self.contains(' ') && !self.contains('..')`
	crdMaxLengths = map[string]int{"url": 2048, "branch": 255, "path": 1024}
)

var (
	crdURLFormRes        = crdCompile(crdURLForms)
	crdURLCredentialsRes = crdCompile(crdURLNoCredentials)
	crdURLNoControlRe    = regexp.MustCompile(crdURLNoControl)
	crdPathNoDotDotRe    = regexp.MustCompile(crdPathNoDotDot)
)

func crdCompile(exprs []string) []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		res[i] = regexp.MustCompile(e)
	}
	return res
}

// crdString is whether s can be a string field of an object the API server
// stores: JSON decoding replaces invalid UTF-8, and maxLength counts characters.
func crdString(s, field string) bool {
	return utf8.ValidString(s) && utf8.RuneCountInString(s) <= crdMaxLengths[field]
}

// urlLike is how go-git tells a URL from the scp-like form.
var urlLike = regexp.MustCompile(`^[^:]+://`)

func crdAdmitsURL(u string) bool {
	if !crdString(u, "url") || u == "" {
		return false
	}
	if !crdURLFormRes[0].MatchString(u) && !crdURLFormRes[1].MatchString(u) {
		return false
	}
	return !crdURLCredentialsRes[0].MatchString(u) && !crdURLCredentialsRes[1].MatchString(u) && !crdURLNoControlRe.MatchString(u)
}

func crdAdmitsBranch(b string) bool {
	return crdString(b, "branch") &&
		!strings.HasPrefix(b, "-") && !strings.HasPrefix(b, "refs/") && !strings.Contains(b, " ") && !strings.Contains(b, "..")
}

func crdAdmitsPath(p string) bool {
	return crdString(p, "path") && !strings.HasPrefix(p, "/") && !crdPathNoDotDotRe.MatchString(p)
}

func TestCRDRulesMirrored(t *testing.T) {
	src, err := os.ReadFile("../../api/v1alpha1/function_types.go")
	if err != nil {
		t.Fatal(err)
	}
	types := string(src)
	rules := make([]string, 0, 3+len(crdURLForms)+len(crdURLNoCredentials))
	rules = append(rules, crdBranchRule, "!self.matches('"+crdPathNoDotDot+"')", "!self.matches('"+crdURLNoControl+"')")
	for _, r := range crdURLForms {
		rules = append(rules, "self.matches('"+r+"')")
	}
	for _, r := range crdURLNoCredentials {
		rules = append(rules, "!self.matches('"+r+"')")
	}
	for _, r := range rules {
		if !strings.Contains(types, r) {
			t.Errorf("function_types.go has no CEL rule %s: update the rules this file mirrors", r)
		}
	}
	for field, n := range crdMaxLengths {
		marker := "+kubebuilder:validation:MaxLength=" + strconv.Itoa(n)
		i := strings.Index(types, marker)
		j := strings.Index(types, "json:\""+field)
		if i < 0 || j < i || strings.Contains(types[i:j], "json:\"") {
			t.Errorf("spec.repository.%s has no %s: update crdMaxLengths", field, marker)
		}
	}
}

// FuzzRepositoryURL checks how the operator reads spec.repository.url: the
// protocol it goes by, and what its errors say.
func FuzzRepositoryURL(f *testing.F) {
	for _, u := range []string{
		"https://github.com/org/repo.git",
		"HTTPS://github.com/org/repo.git",
		"http://git.example.com:8080/org/repo.git",
		"ssh://git@github.com/org/repo.git",
		"ssh://alice@git.example.com:2222/srv/repo.git",
		"git@github.com:org/repo.git",
		"deploy@git.example.com:/srv/git/repo.git",
		"https://[::1]:8443/repo",
		"https://host",
		"https:///path",
		"ftp://x/y",
		"file:///tmp/x",
		"/tmp/x",
		"git://github.com/org/repo.git",
		"",
		"https://%zz/x",
		"https://user:tok3n-value@[::1",
		"https://tok3n-value@github.com/org/repo",
		"ssh://git:pa55word@host/repo",
		"git@host:\\repo",
		"host:org/repo",
		"a@b:c:d",
		"https://exa mple.com/x",
		"https://example.com/\x00\n",
		"ssh://-oProxyCommand=touch$IFS/tmp/pwned/repo",
		"-oProxyCommand=x@host:repo",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		admitted := crdAdmitsURL(raw)
		proto, err := Protocol(raw)
		if err != nil {
			if proto != "" || !rerror.IsStalling(err) || rerror.Reason(err) != v1alpha1.ReasonGitCloneFailed {
				t.Fatalf("Protocol(%q) = %q, %v: want no protocol and a stalling %s error", raw, proto, err, v1alpha1.ReasonGitCloneFailed)
			}
			checkURLMessage(t, raw, err)
			return
		}
		if proto != "http" && proto != "https" && proto != protocolSSH {
			t.Fatalf("Protocol(%q) = %q, not one the operator supports", raw, proto)
		}
		ep, err := transport.NewEndpoint(raw)
		if err != nil || ep.Protocol != proto {
			t.Fatalf("go-git reads %q as %v (%v), Protocol as %q", raw, ep, err, proto)
		}
		if urlLike.MatchString(raw) {
			u, err := url.Parse(raw)
			if err != nil || strings.ToLower(u.Scheme) != proto {
				t.Fatalf("Protocol(%q) = %q, but net/url reads it as %v (%v)", raw, proto, u, err)
			}
		} else if proto != protocolSSH || ep.Host == "" || strings.ContainsAny(ep.Host, " \t\n:") {
			t.Fatalf("Protocol(%q) = %q for an scp-like URL of host %q", raw, proto, ep.Host)
		}
		if !admitted {
			return
		}
		// What the API server admits is never a URL without a host: Go dials an
		// empty host as the local system.
		if ep.Host == "" {
			t.Errorf("Protocol(%q) = %q for a URL without a host", raw, proto)
		}
		auth, err := AuthFromSecret(raw, nil)
		switch {
		case proto == protocolSSH && (err == nil || rerror.Reason(err) != v1alpha1.ReasonAuthSecretNotFound):
			t.Errorf("AuthFromSecret(%q, nil) = %v, want %s: SSH needs a key", raw, err, v1alpha1.ReasonAuthSecretNotFound)
		case proto != protocolSSH && (err != nil || auth == nil || auth.Method != nil):
			t.Errorf("AuthFromSecret(%q, nil) = %+v, %v, want anonymous access", raw, auth, err)
		}
		if err != nil {
			checkURLMessage(t, raw, err)
		}
	})
}

// checkURLMessage checks what an error about raw says: no password of its user, and,
// for a URL the CRD admits, one line without credentials that scrub would remove.
func checkURLMessage(t *testing.T, raw string, err error) {
	t.Helper()
	msg := err.Error()
	// go-git quotes some URLs as they are: the CRD admits none with a line break
	// where go-git would.
	if strings.ContainsAny(msg, "\n\r") && crdAdmitsURL(raw) {
		t.Errorf("error about %q is not one line: %q", raw, msg)
	}
	if scrubbed := scrub(msg, nil); scrubbed != msg && crdAdmitsURL(raw) {
		t.Errorf("error about %q holds credentials: %q", raw, msg)
	}
	if u, perr := url.Parse(raw); perr == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && len(p) >= 3 && strings.Count(raw, p) == 1 && strings.Contains(msg, p) {
			t.Errorf("error about %q reveals the password of its user: %q", raw, msg)
		}
	}
}

// FuzzRepositoryPath checks spec.repository.path as the operator uses it: cleaned,
// relative to the root of the repository and never outside it.
func FuzzRepositoryPath(f *testing.F) {
	for _, p := range []string{"", ".", "/", "fn", "fn/", "./fn", "a/b/c", "a//b", "a/./b", "a/../b", "../x", "a/..", "..", "...", "..a", "a..",
		"/abs", "a\\..\\b", "a/\x00/b", "é/ü", "a/ b", " "} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := v1alpha1.Repository{Path: p}.CleanPath()
		if dir := (v1alpha1.Repository{Dir: p}).CleanPath(); dir != got {
			t.Errorf("CleanPath of dir %q = %q, of path %q", p, dir, got)
		}
		if got != "" && (path.Clean(got) != got || strings.HasPrefix(got, "/") || strings.HasSuffix(got, "/") || got == ".") {
			t.Errorf("CleanPath(%q) = %q, not a clean relative path", p, got)
		}
		if !crdAdmitsPath(p) {
			return
		}
		if got == ".." || strings.HasPrefix(got, "../") {
			t.Errorf("CleanPath(%q) = %q, outside the repository", p, got)
		}
		// Without ".." segments, cleaning p is resolving it under the root.
		if want := strings.TrimPrefix(path.Clean("/"+p), "/"); got != want {
			t.Errorf("CleanPath(%q) = %q, want %q", p, got, want)
		}
	})
}

// An in-process git server for FuzzRemoteHead: go-git's own upload-pack, over a
// protocol of its own, serving the repository fuzzRepo holds.
const fuzzScheme = "fuzzgit"

var (
	fuzzServerOnce sync.Once
	fuzzRepoMu     sync.Mutex
	fuzzRepo       storer.Storer
)

type fuzzLoader struct{}

func (fuzzLoader) Load(*transport.Endpoint) (storer.Storer, error) {
	fuzzRepoMu.Lock()
	defer fuzzRepoMu.Unlock()
	return fuzzRepo, nil
}

// Commits of the branches of the fuzzed repository.
const (
	fuzzMainCommit  = "1111111111111111111111111111111111111111"
	fuzzOtherCommit = "2222222222222222222222222222222222222222"
)

// FuzzRemoteHead checks that the branch the operator follows is the branch it asks
// for, with the commit the remote holds for it: the remote has "main" and another
// branch, either of which HEAD points at.
func FuzzRemoteHead(f *testing.F) {
	fuzzServerOnce.Do(func() { client.InstallProtocol(fuzzScheme, server.NewClient(fuzzLoader{})) })
	for _, s := range []struct {
		other, requested string
		headToOther      bool
	}{
		{"feature/x", "feature/x", false},
		{"feature/x", "", true},
		{"feature/x", "", false},
		{"feature/x", "main", true},
		{"release-1.0", "release-1.0", false},
		{"main", "main", false},
		{"heads/main", "main", false},
		{"heads/main", "heads/main", false},
		{"tags/v1", "tags/v1", false},
		{"remotes/origin/main", "remotes/origin/main", false},
		{"remotes/origin/HEAD", "origin/HEAD", false},
		{"HEAD", "HEAD", false},
		{"mainx", "main", false},
		{"feature/x", "feature/y", false},
		{"feature/x", "FEATURE/X", false},
		{"feature/x", "feature/x/", false},
		{"feature/x", "-main", false},
		{"feature/x", "refs/heads/feature/x", false},
		{"feature/x", "feature\x00x", false},
		{"feature/x", "feature\nx", false},
		{"café", "café", false},
		{"a@b", "a@b", false},
	} {
		f.Add(s.other, s.requested, s.headToOther)
	}
	fetcher := &Fetcher{}
	f.Fuzz(func(t *testing.T, other, requested string, headToOther bool) {
		// A real server holds only refs git accepts (git check-ref-format), and the
		// API server only branches the CRD admits.
		otherRef := plumbing.NewBranchReferenceName(other)
		if otherRef.Validate() != nil || !crdAdmitsBranch(requested) {
			return
		}
		repo := memory.NewStorage()
		refs := map[string]string{"main": fuzzMainCommit}
		refs[other] = fuzzOtherCommit
		for name, commit := range refs {
			if err := repo.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), plumbing.NewHash(commit))); err != nil {
				t.Fatal(err)
			}
		}
		head := plumbing.NewBranchReferenceName("main")
		if headToOther {
			head = otherRef
		}
		if err := repo.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, head)); err != nil {
			t.Fatal(err)
		}
		fuzzRepoMu.Lock()
		fuzzRepo = repo
		fuzzRepoMu.Unlock()

		want := requested
		if want == "" {
			want = strings.TrimPrefix(head.String(), "refs/heads/")
		}
		wantCommit, exists := refs[want]

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := fetcher.Head(ctx, fuzzScheme+"://server/repo", requested, nil, 0)
		switch {
		case exists && err != nil:
			t.Fatalf("Head(%q) on a remote with branches %q: %v, want branch %q at %s", requested, []string{"main", other}, err, want, wantCommit)
		case exists && (got.Branch != want || got.Commit != wantCommit):
			t.Fatalf("Head(%q) on a remote with branches %q = %+v, want branch %q at %s", requested, []string{"main", other}, got, want, wantCommit)
		case !exists && (err == nil || rerror.Reason(err) != v1alpha1.ReasonBranchNotFound):
			t.Fatalf("Head(%q) on a remote with branches %q = %+v, %v, want %s", requested, []string{"main", other}, got, err, v1alpha1.ReasonBranchNotFound)
		case err != nil && strings.ContainsAny(err.Error(), "\n\r"):
			t.Errorf("error is not one line: %q", err)
		}
	})
}
