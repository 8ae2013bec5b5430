package git

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/testfs"
)

// monorepo is the files of a repository of m function directories fns/f<i>, named
// after tag.
func monorepo(m int, tag string) map[string]string {
	files := map[string]string{"README.md": "a monorepo\n"}
	for i := 0; i < m; i++ {
		files[fmt.Sprintf("fns/f%d/func.yaml", i)] = funcYAML(fmt.Sprintf("f%d-%s", i, tag), "go")
		files[fmt.Sprintf("fns/f%d/handle.go", i)] = "package function\n"
	}
	return files
}

// readAll reads every function directory of a monorepo of m at head, and checks
// what each says.
func readAll(t *testing.T, f *Fetcher, url string, head Head, auth *Auth, m int, tag string) {
	t.Helper()
	for i := 0; i < m; i++ {
		got, err := f.Read(context.Background(), url, head, fmt.Sprintf("fns/f%d", i), auth, gitTimeout)
		if err != nil {
			t.Fatalf("Read fns/f%d: %v", i, err)
		}
		if diff := cmp.Diff(md(fmt.Sprintf("f%d-%s", i, tag), "go"), got.Metadata); diff != "" {
			t.Errorf("Metadata of fns/f%d (-want +got):\n%s", i, diff)
		}
	}
}

// TestFetcher_OneTransferPerCommit counts, at the server, the upload-packs of
// reading every directory of a monorepo: one per commit, over HTTP and SSH (less the
// transfers made again after go-git's close race, which a loaded machine sees).
func TestFetcher_OneTransferPerCommit(t *testing.T) {
	const m = 10
	type server struct {
		url     string
		auth    *Auth
		uploads func() int
		commit  func(files map[string]string) string
	}
	servers := map[string]func(t *testing.T) server{
		"http": func(t *testing.T) server {
			g := newHTTPGit(t)
			r, _ := g.repo(t, "mono", map[string]string{"README.md": "empty\n"})
			url := g.srv.URL("mono")
			return server{url: url, auth: anonymous(t, url),
				uploads: func() int { return g.srv.UploadPacks("mono") },
				commit:  func(files map[string]string) string { return r.Commit(t, "main", files, "change") }}
		},
		"ssh": func(t *testing.T) server {
			srv := gitserver.StartSSH(t)
			r := gitserver.CreateRepo(t, gitserver.NewRepoRoot(t), "mono")
			url := srv.URL(r.Dir)
			auth := authFromBytes(t, url, map[string][]byte{KeySSHPrivateKey: srv.ClientPrivateKeyPEM(), KeyKnownHosts: srv.KnownHosts()})
			return server{url: url, auth: auth,
				uploads: func() int { return srv.UploadPacks(r.Dir) },
				commit:  func(files map[string]string) string { return r.Commit(t, "main", files, "change") }}
		},
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			tmp := t.TempDir()
			f := NewFetcher(tmp, 0, manifests)
			c1 := s.commit(monorepo(m, "one"))
			head := Head{Branch: "main", Ref: "refs/heads/main", Commit: c1}

			readAll(t, f, s.url, head, s.auth, m, "one")
			if diff := cmp.Diff(1, s.uploads()-int(f.TransferRetries())); diff != "" {
				t.Errorf("upload-packs after reading %d directories of one commit (-want +got):\n%s", m, diff)
			}
			readAll(t, f, s.url, head, s.auth, m, "one")
			if diff := cmp.Diff(1, s.uploads()-int(f.TransferRetries())); diff != "" {
				t.Errorf("upload-packs after reading them again (-want +got):\n%s", diff)
			}

			c2 := s.commit(monorepo(m, "two"))
			readAll(t, f, s.url, Head{Branch: "main", Ref: "refs/heads/main", Commit: c2}, s.auth, m, "two")
			if diff := cmp.Diff(2, s.uploads()-int(f.TransferRetries())); diff != "" {
				t.Errorf("upload-packs after a push that changes every directory (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(int64(2), f.clones.Load()); diff != "" {
				t.Errorf("clones (-want +got):\n%s", diff)
			}
			testfs.AssertEmptyDir(t, tmp)
		})
	}
}

func authFromBytes(t *testing.T, url string, data map[string][]byte) *Auth {
	t.Helper()
	a, err := AuthFromSecret(url, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds"}, Data: data})
	if err != nil {
		t.Fatalf("AuthFromSecret(%s): %v", url, err)
	}
	return a
}

// TestFetcher_OneTransferConcurrent: concurrent Reads of different directories of
// one commit share one transfer.
func TestFetcher_OneTransferConcurrent(t *testing.T) {
	const m = 10
	g := newHTTPGit(t)
	_, commit := g.repo(t, "mono", monorepo(m, "one"))
	url := g.srv.URL("mono")
	f := NewFetcher(t.TempDir(), 0, manifests)
	auth := anonymous(t, url)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	errs := make([]error, m)
	var wg sync.WaitGroup
	for i := 0; i < m; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = f.Read(context.Background(), url, head, fmt.Sprintf("fns/f%d", i), auth, gitTimeout)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Read fns/f%d: %v", i, err)
		}
	}
	if diff := cmp.Diff(1, g.srv.UploadPacks("mono")); diff != "" {
		t.Errorf("upload-packs (-want +got):\n%s", diff)
	}
}

// transferStep is one Read of a step table and the upload-packs the server has made
// in all after it.
type transferStep struct {
	name    string
	auth    *Auth
	path    string
	uploads int
	// clearCache empties the path cache first, so that the Read reaches the store.
	clearCache bool
}

// readSteps runs the steps in order against f, counting upload-packs with uploads.
func readSteps(t *testing.T, f *Fetcher, url string, head Head, uploads func() int, steps []transferStep) {
	t.Helper()
	for _, s := range steps {
		if s.clearCache {
			f.cache.Clear()
		}
		if _, err := f.Read(context.Background(), url, head, s.path, s.auth, gitTimeout); err != nil {
			t.Fatalf("%s: Read %s: %v", s.name, s.path, err)
		}
		if diff := cmp.Diff(s.uploads, uploads()); diff != "" {
			t.Errorf("%s: upload-packs (-want +got):\n%s", s.name, diff)
		}
	}
}

// TestFetcher_TransferPerIdentity is the positive control: what was fetched with
// one identity's credentials, or under one CA trust, is never read with another's.
func TestFetcher_TransferPerIdentity(t *testing.T) {
	const m = 4
	t.Run("credentials", func(t *testing.T) {
		g := newHTTPGit(t)
		_, commit := g.repo(t, "mono", monorepo(m, "one"))
		url := g.srv.URL("mono")
		f := NewFetcher(t.TempDir(), 0, manifests)
		head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
		anon := anonymous(t, url)
		token := authFrom(t, url, map[string]string{KeyToken: rightToken})
		other := authFrom(t, url, map[string]string{KeyToken: wrongToken})
		readSteps(t, f, url, head, func() int { return g.srv.UploadPacks("mono") }, []transferStep{
			{name: "anonymous", auth: anon, path: "fns/f0", uploads: 1},
			{name: "anonymous, another directory", auth: anon, path: "fns/f1", uploads: 1},
			{name: "a token", auth: token, path: "fns/f2", uploads: 2},
			{name: "the same token, another directory", auth: token, path: "fns/f3", uploads: 2},
			// Neither the path cache nor the store answers for another identity.
			{name: "another token", auth: other, path: "fns/f3", uploads: 3},
			{name: "another token, another directory", auth: other, path: "fns/f0", uploads: 3},
			{name: "the first token again, cache cleared", auth: token, path: "fns/f0", uploads: 3, clearCache: true},
		})
	})
	t.Run("CA trust", func(t *testing.T) {
		root := gitserver.NewRepoRoot(t)
		srv := gitserver.StartHTTPS(t, root)
		commit := gitserver.CreateRepo(t, root, "mono").Commit(t, "main", monorepo(m, "one"), "init")
		installTestGuard(t)
		url := srv.URL("mono")
		f := NewFetcher(t.TempDir(), 0, manifests)
		head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
		ca := srv.CertificatePEM()
		one := authFromBytes(t, url, map[string][]byte{KeyCACert: ca})
		two := authFromBytes(t, url, map[string][]byte{KeyCACert: append(append([]byte{}, ca...), otherCA(t)...)})
		readSteps(t, f, url, head, func() int { return srv.UploadPacks("mono") }, []transferStep{
			{name: "one CA", auth: one, path: "fns/f0", uploads: 1},
			{name: "one CA, another directory", auth: one, path: "fns/f1", uploads: 1},
			{name: "another CA bundle", auth: two, path: "fns/f0", uploads: 2},
			{name: "another CA bundle, another directory", auth: two, path: "fns/f2", uploads: 2},
		})
	})
}

// TestFetcher_LimitsRefuseTheCommit: a commit the limits refuse is refused for
// every directory, after one transfer; larger limits fetch it again.
func TestFetcher_LimitsRefuseTheCommit(t *testing.T) {
	const m = 5
	g := newHTTPGit(t)
	files := monorepo(m, "one")
	files["blob.txt"] = randomText(1, 3<<20)
	_, commit := g.repo(t, "big", files)
	url := g.srv.URL("big")
	tmp := t.TempDir()
	f := NewFetcher(tmp, 0, manifests)
	lim := Limits{MaxBytes: 1 << 20, MaxFiles: 1000}
	f.Limits = func() Limits { return lim }
	auth := anonymous(t, url)
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	for i := 0; i < m; i++ {
		_, err := f.Read(context.Background(), url, head, fmt.Sprintf("fns/f%d", i), auth, gitTimeout)
		checkError(t, &wantError{reason: v1alpha1.ReasonCloneTooLarge, stalling: true,
			msgHas: []string{"cloning " + url, "over the 1048576 bytes the operator transfers (ConfigMap key cloneMaxBytes)"}}, err)
	}
	if diff := cmp.Diff(1, g.srv.UploadPacks("big")); diff != "" {
		t.Errorf("upload-packs of a refused commit read for %d directories (-want +got):\n%s", m, diff)
	}
	lim = Limits{MaxBytes: 8 << 20, MaxFiles: 1000}
	readAll(t, f, url, head, auth, m, "one")
	if diff := cmp.Diff(2, g.srv.UploadPacks("big")); diff != "" {
		t.Errorf("upload-packs once the limits allow the commit (-want +got):\n%s", diff)
	}
	testfs.AssertEmptyDir(t, tmp)
}

// TestFetcher_CommitStoreBytes: the store keeps what fits its bound; a commit
// evicted is fetched again.
func TestFetcher_CommitStoreBytes(t *testing.T) {
	const m = 3
	g := newHTTPGit(t)
	r, c1 := g.repo(t, "mono", monorepo(m, "one"))
	url := g.srv.URL("mono")
	f := NewFetcher(t.TempDir(), 0, manifests)
	auth := anonymous(t, url)
	at := func(c string) Head { return Head{Branch: "main", Ref: "refs/heads/main", Commit: c} }
	read := func(c, path string) {
		t.Helper()
		if _, err := f.Read(context.Background(), url, at(c), path, auth, gitTimeout); err != nil {
			t.Fatalf("Read %s at %s: %v", path, short(c), err)
		}
	}
	read(c1, "fns/f0")
	one := f.commits.bytes()
	if one <= 0 {
		t.Fatalf("the store holds %d bytes after a fetch", one)
	}
	bound := 2*one + one/2 // two commits of this size
	f.CommitStoreBytes = func() int64 { return bound }
	c2 := r.Commit(t, "main", monorepo(m, "two"), "two")
	read(c2, "fns/f0")
	if diff := cmp.Diff(CommitStoreStats{Bytes: f.commits.bytes(), Commits: 2}, f.CommitStoreStats()); diff != "" {
		t.Errorf("stats of two commits within the bound (-want +got):\n%s", diff)
	}
	c3 := r.Commit(t, "main", monorepo(m, "six"), "three")
	read(c3, "fns/f0")
	if got := f.commits.bytes(); got > bound {
		t.Errorf("the store holds %d bytes, over its bound %d", got, bound)
	}
	if diff := cmp.Diff(CommitStoreStats{Bytes: f.commits.bytes(), Commits: 2, Evictions: 1}, f.CommitStoreStats()); diff != "" {
		t.Errorf("stats after the first commit was evicted (-want +got):\n%s", diff)
	}
	if got := f.CommitStoreStats().Refetches; got != 0 {
		t.Errorf("%d refetches before any dropped commit was read again, want 0", got)
	}
	if diff := cmp.Diff(3, g.srv.UploadPacks("mono")); diff != "" {
		t.Errorf("upload-packs of three commits (-want +got):\n%s", diff)
	}
	read(c3, "fns/f1")
	read(c2, "fns/f1")
	if diff := cmp.Diff(3, g.srv.UploadPacks("mono")); diff != "" {
		t.Errorf("upload-packs of the two kept commits (-want +got):\n%s", diff)
	}
	read(c1, "fns/f1") // the branch's tip is fetched, c3: one transfer all the same
	if diff := cmp.Diff(4, g.srv.UploadPacks("mono")); diff != "" {
		t.Errorf("upload-packs of the evicted commit (-want +got):\n%s", diff)
	}
	if got := f.CommitStoreStats().Refetches; got != 1 {
		t.Errorf("%d refetches after the dropped commit was read again, want 1", got)
	}

	// A lower bound: TrimCommitStore drops what no longer fits, at once.
	before := f.CommitStoreStats()
	bound = one + one/2
	f.TrimCommitStore()
	after := f.CommitStoreStats()
	if after.Bytes > bound || after.Commits != 1 || after.Evictions != before.Evictions+uint64(before.Commits-1) {
		t.Errorf("after the bound was lowered to one commit: %+v (before: %+v)", after, before)
	}
	// The commit kept is the most recently read (c3, the tip c1's read fetched): read
	// again without a transfer; c2 was dropped: one transfer.
	read(c3, "fns/f2")
	read(c2, "fns/f2")
	if diff := cmp.Diff(5, g.srv.UploadPacks("mono")); diff != "" {
		t.Errorf("upload-packs after the trim: c3 kept, c2 dropped (-want +got):\n%s", diff)
	}
	if st := f.CommitStoreStats(); st.Refetches != 2 || st.NotKept != 0 {
		t.Errorf("after the trimmed commit was read again: %+v, want 2 refetches, none not kept", st)
	}

	// A bound below one commit: what is read is used, not kept, and counted so; what
	// was kept goes.
	bound = 1
	c4 := r.Commit(t, "main", monorepo(m, "four"), "four")
	read(c4, "fns/f0")
	if st := f.CommitStoreStats(); st.NotKept != 1 || st.Commits != 0 || st.Bytes != 0 {
		t.Errorf("a commit over the bound: %+v, want 1 not kept and nothing kept", st)
	}
	read(c4, "fns/f1")
	if diff := cmp.Diff(7, g.srv.UploadPacks("mono")); diff != "" {
		t.Errorf("upload-packs of two directories of a commit not kept (-want +got):\n%s", diff)
	}
}
