package git

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/google/go-cmp/cmp"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/test/gitserver"
)

// failingStorer fails to read the objects of fail, as a clone's storage would on a
// file it cannot open.
type failingStorer struct {
	*memory.Storage
	fail map[plumbing.Hash]bool
}

func (f failingStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if f.fail[h] {
		return nil, errors.New("open objects/pack/pack-1.pack: too many open files")
	}
	return f.Storage.EncodedObject(t, h)
}

// memRepo writes objects into a go-git memory storage, the source keep copies from.
type memRepo struct {
	t  testing.TB
	st *memory.Storage
}

func newMemRepo(t testing.TB) *memRepo { return &memRepo{t: t, st: memory.NewStorage()} }

func (r *memRepo) put(typ plumbing.ObjectType, content []byte) plumbing.Hash {
	r.t.Helper()
	o := r.st.NewEncodedObject()
	o.SetType(typ)
	w, _ := o.Writer()
	_, _ = w.Write(content)
	_ = w.Close()
	h, err := r.st.SetEncodedObject(o)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// tree writes the tree of entries, sorted as git sorts them.
func (r *memRepo) tree(entries []object.TreeEntry) plumbing.Hash {
	r.t.Helper()
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	return r.put(plumbing.TreeObject, encodeTree(r.t, entries))
}

// dir writes files (slash paths) as trees and returns the root's id; extra are more
// entries of the root.
func (r *memRepo) dir(files map[string]string, extra ...object.TreeEntry) plumbing.Hash {
	r.t.Helper()
	sub := map[string]map[string]string{}
	entries := append([]object.TreeEntry{}, extra...)
	for name, content := range files {
		if first, rest, ok := strings.Cut(name, "/"); ok {
			if sub[first] == nil {
				sub[first] = map[string]string{}
			}
			sub[first][rest] = content
			continue
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: r.put(plumbing.BlobObject, []byte(content))})
	}
	for name, files := range sub {
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: r.dir(files)})
	}
	return r.tree(entries)
}

// wide writes a tree of n entries naming the empty blob, told apart by tag.
func (r *memRepo) wide(n int, tag string) object.TreeEntry {
	r.t.Helper()
	empty := r.put(plumbing.BlobObject, nil)
	entries := make([]object.TreeEntry, n)
	for i := range entries {
		entries[i] = object.TreeEntry{Name: fmt.Sprintf("e%07d", i), Mode: filemode.Regular, Hash: empty}
	}
	entries[n-1].Name = "z-" + tag
	return object.TreeEntry{Name: "wide-" + tag, Mode: filemode.Dir, Hash: r.tree(entries)}
}

func (r *memRepo) commit(root plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	o := r.st.NewEncodedObject()
	c := &object.Commit{TreeHash: root, Message: "test", Author: object.Signature{Name: "t", Email: "t@example.invalid"}}
	c.Committer = c.Author
	if err := c.Encode(o); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.st.SetEncodedObject(o)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// functions is a monorepo's function directories fns/f0 ... fns/f<n-1>, each with a
// func.yaml and a package.json kept for the source middleware.
func functions(n int) map[string]string {
	files := map[string]string{"README.md": "a monorepo\n"}
	for i := range n {
		files[fmt.Sprintf("fns/f%d/func.yaml", i)] = funcYAML(fmt.Sprintf("f%d", i), "node")
		files[fmt.Sprintf("fns/f%d/package.json", i)] = fmt.Sprintf("1.%d.0", i)
		files[fmt.Sprintf("fns/f%d/index.js", i)] = "module.exports = {}\n"
	}
	return files
}

var keptFiles = map[string]bool{"func.yaml": true, "package.json": true, "pom.xml": true}

// checkReads checks what the snapshot reads of fns/f<i>.
func checkReads(t *testing.T, s *snapshot, i int) {
	t.Helper()
	dir := fmt.Sprintf("fns/f%d", i)
	content, files, err := s.read(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	if diff := cmp.Diff(funcYAML(fmt.Sprintf("f%d", i), "node"), string(content)); diff != "" {
		t.Errorf("%s/func.yaml (-want +got):\n%s", dir, diff)
	}
	if got, ok := files("package.json"); !ok || string(got) != fmt.Sprintf("1.%d.0", i) {
		t.Errorf("%s/package.json: %q, %v", dir, got, ok)
	}
	if got, ok := files("index.js"); ok {
		t.Errorf("%s/index.js, a file no one reads, was kept: %q", dir, got)
	}
}

// TestKeep_Bound: a commit whose trees fit the bound is kept whole; one whose trees
// do not is kept only for the directory asked, never over the bound while it is
// copied, and a directory that is not there reads as before.
func TestKeep_Bound(t *testing.T) {
	r := newMemRepo(t)
	const wideEntries = 20000 // 36 bytes each: 720 KB a tree
	root := r.dir(functions(3), r.wide(wideEntries, "a"), r.wide(wideEntries, "b"), r.wide(wideEntries, "c"))
	commit := r.commit(root)
	keepAt := func(fnPath string, max int64) *snapshot {
		t.Helper()
		s, err := keep(r.st, commit, Head{Commit: commit.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, fnPath, max)
		if err != nil {
			t.Fatalf("keep(%q, %d): %v", fnPath, max, err)
		}
		return s
	}

	t.Run("within the bound: whole", func(t *testing.T) {
		s := keepAt("fns/f1", 64<<20)
		if s.partial {
			t.Fatalf("kept only %q of a commit within the bound", s.path)
		}
		for i := range 3 {
			checkReads(t, s, i)
		}
		if min := int64(3 * wideEntries * 36); s.size < min || s.size > 64<<20 {
			t.Errorf("size %d: want at least the wide trees' %d, within the bound", s.size, min)
		}
	})

	t.Run("over the bound: the asked directory alone", func(t *testing.T) {
		const max = 1 << 20 // one wide tree, not three
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		s := keepAt("fns/f1", max)
		runtime.ReadMemStats(&m1)
		if !s.partial || s.path != "fns/f1" {
			t.Fatalf("partial %v, path %q: want kept for fns/f1 alone", s.partial, s.path)
		}
		checkReads(t, s, 1)
		_, _, err := s.read("fns/f0")
		checkError(t, &wantError{reason: v1alpha1.ReasonGitCloneFailed, msgHas: []string{`was kept to read directory "fns/f1" only`}}, err)
		if s.size > 16<<10 {
			t.Errorf("size %d: want the trees on the way to fns/f1 and its files alone", s.size)
		}
		// The trees were measured as they streamed, and none of the wide ones copied:
		// keep allocated less than one of them (720 KB).
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 512<<10 {
			t.Errorf("keep allocated %d bytes: a wide tree was copied", alloc)
		}
		runtime.KeepAlive(s)
	})

	t.Run("over the bound: a directory that is not there", func(t *testing.T) {
		s := keepAt("fns/none", 1<<20)
		_, _, err := s.read("fns/none")
		checkError(t, &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true, msgHas: []string{`path "fns/none" does not exist`}}, err)
		s = keepAt("README.md/x", 1<<20)
		_, _, err = s.read("README.md/x")
		checkError(t, &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true, msgHas: []string{`path "README.md/x" does not exist`}}, err)
		s = keepAt("fns/f0/index.js", 1<<20)
		_, _, err = s.read("fns/f0/index.js")
		checkError(t, &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true, msgHas: []string{`path "fns/f0/index.js" is not a directory`}}, err)
	})

	t.Run("over the bound: a name the directory gives many times is kept once", func(t *testing.T) {
		// A tree git would refuse: package.json 40 times, each a different 100 KB blob.
		entries := make([]object.TreeEntry, 0, 41)
		entries = append(entries, object.TreeEntry{Name: "func.yaml", Mode: filemode.Regular, Hash: r.put(plumbing.BlobObject, []byte(funcYAML("dup", "node")))})
		for i := range 40 {
			content := fmt.Sprintf("1.%d.0\n%s", i, strings.Repeat("x", 100_000))
			entries = append(entries, object.TreeEntry{Name: "package.json", Mode: filemode.Regular, Hash: r.put(plumbing.BlobObject, []byte(content))})
		}
		dup := r.put(plumbing.TreeObject, encodeTree(t, entries))
		c := r.commit(r.dir(nil, object.TreeEntry{Name: "dup", Mode: filemode.Dir, Hash: dup}))
		s, err := keep(r.st, c, Head{Commit: c.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, "dup", 1<<20)
		if err != nil || !s.partial {
			t.Fatalf("keep: partial %v, %v; want the directory alone", s != nil && s.partial, err)
		}
		if s.size > 200<<10 {
			t.Errorf("size %d: want func.yaml and the first package.json, not all 40", s.size)
		}
		_, files, err := s.read("dup")
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := files("package.json"); !ok || !strings.HasPrefix(string(got), "1.0.0\n") {
			t.Errorf("package.json: %.10q, %v; want the first", got, ok)
		}
	})

	t.Run("a failure to read the clone: transient, not a missing path", func(t *testing.T) {
		failing := failingStorer{Storage: r.st, fail: map[plumbing.Hash]bool{}}
		s, err := keep(failing, commit, Head{Commit: commit.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, "fns/f1", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		checkReads(t, s, 1) // the control: nothing fails yet
		c, _ := object.GetCommit(r.st, commit)
		failing.fail[c.TreeHash] = true
		s, err = keep(failing, commit, Head{Commit: commit.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, "fns/f1", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = s.read("fns/f1")
		checkError(t, &wantError{reason: v1alpha1.ReasonGitCloneFailed, msgHas: []string{"too many open files"}}, err)
	})

	t.Run("a tree the walk cannot read: the asked directory alone", func(t *testing.T) {
		blob := r.put(plumbing.BlobObject, []byte("not a tree"))
		broken := r.commit(r.dir(functions(2), object.TreeEntry{Name: "broken", Mode: filemode.Dir, Hash: blob}))
		s, err := keep(r.st, broken, Head{Commit: broken.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, "fns/f1", 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !s.partial {
			t.Fatal("a commit with a directory naming a blob was kept whole")
		}
		checkReads(t, s, 1)
		s, _ = keep(r.st, broken, Head{Commit: broken.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, "broken", 64<<20)
		_, _, err = s.read("broken")
		checkError(t, &wantError{reason: v1alpha1.ReasonPathNotFound, stalling: true, msgHas: []string{`path "broken" cannot be read`}}, err)
	})
}

// TestSnapshot_CountsWhatItHolds: what a kept snapshot counts (size, against the
// store's bound) is at least the heap it holds, and what keeping it allocated is
// about that: trees are copied as they are, never decoded whole.
func TestSnapshot_CountsWhatItHolds(t *testing.T) {
	r := newMemRepo(t)
	files := functions(200)
	root := r.dir(files, r.wide(50000, "a"), r.wide(50000, "b"), r.wide(50000, "c"))
	commit := r.commit(root)
	var m0, m1, m2 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	s, err := keep(r.st, commit, Head{Commit: commit.String()}, "http://127.0.0.1/r.git", &Auth{}, keptFiles, "fns/f0", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	runtime.GC()
	runtime.ReadMemStats(&m2)
	held := int64(m2.HeapAlloc) - int64(m0.HeapAlloc)
	alloc := int64(m1.TotalAlloc - m0.TotalAlloc)
	t.Logf("snapshot of %d trees: counts %d bytes, holds %d, allocated %d", len(s.trees), s.size, held, alloc)
	if s.partial {
		t.Fatal("kept partially")
	}
	if held > s.size {
		t.Errorf("the snapshot holds %d bytes of heap, more than the %d it counts", held, s.size)
	}
	if held < s.size/2 {
		t.Errorf("the snapshot holds %d bytes of heap, under half the %d it counts: the count is off", held, s.size)
	}
	// go-git's object.Tree would decode 150,000 entries of the wide trees: over 12 MB.
	if alloc > 2*s.size {
		t.Errorf("keeping the snapshot allocated %d bytes, over twice the %d it holds", alloc, s.size)
	}
	checkReads(t, s, 199)
	runtime.KeepAlive(s)
	runtime.KeepAlive(r) // the source, live at the first reading
}

// TestFetcher_CommitOverTheStoreBound: a commit whose trees are more than the commit
// store may hold is read for each directory from a transfer of its own, every
// directory right, even when read at once; the store counts it as not kept.
func TestFetcher_CommitOverTheStoreBound(t *testing.T) {
	g := newHTTPGit(t)
	r := gitserver.CreateRepo(t, g.root, "wide")
	commit := r.CommitWideTrees(t, "main", functions(4), 3, 5000) // 180 KB a tree
	url := g.srv.URL("wide")
	head := Head{Branch: "main", Ref: "refs/heads/main", Commit: commit}
	auth := anonymous(t, url)

	f := NewFetcher(t.TempDir(), 0, manifests)
	f.CommitStoreBytes = func() int64 { return 256 << 10 }
	for i, want := range []int{1, 2, 2} {
		dir := fmt.Sprintf("fns/f%d", min(i, 1))
		got, err := f.Read(context.Background(), url, head, dir, auth, gitTimeout)
		if err != nil {
			t.Fatalf("Read %s: %v", dir, err)
		}
		if diff := cmp.Diff(Result{Head: head, Metadata: md(path.Base(dir), "node"), Cloned: got.Cloned,
			SourceMiddleware: SourceMiddleware{Version: fmt.Sprintf("1.%d.0", min(i, 1))}}, got, ignoreLayout); diff != "" {
			t.Errorf("Read %s (-want +got):\n%s", dir, diff)
		}
		if diff := cmp.Diff(want, g.srv.UploadPacks("wide")); diff != "" {
			t.Errorf("upload-packs after read %d (-want +got):\n%s", i, diff)
		}
	}
	if st := f.CommitStoreStats(); st.NotKept != 2 || st.Commits != 0 {
		t.Errorf("store: %+v, want 2 not kept, none kept", st)
	}

	// The positive control: with room for it, the commit is kept whole, one transfer.
	whole := NewFetcher(t.TempDir(), 0, manifests)
	readAllOf(t, whole, url, head, auth, 4)
	if st := whole.CommitStoreStats(); st.Commits != 1 || st.NotKept != 0 || st.Bytes < 3*5000*36 {
		t.Errorf("store with room: %+v, want the commit kept", st)
	}

	// Read at once, each directory is read right: a caller whose directory the shared
	// fetch did not keep fetches again.
	uploads := g.srv.UploadPacks("wide")
	at := NewFetcher(t.TempDir(), 0, manifests)
	at.CommitStoreBytes = func() int64 { return 256 << 10 }
	var wg sync.WaitGroup
	errs := make([]error, 4)
	results := make([]Result, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = at.Read(context.Background(), url, head, fmt.Sprintf("fns/f%d", i), auth, gitTimeout)
		}()
	}
	wg.Wait()
	for i := range 4 {
		if errs[i] != nil || results[i].Metadata.Name != fmt.Sprintf("f%d", i) {
			t.Errorf("fns/f%d read at once: %+v, %v", i, results[i].Metadata, errs[i])
		}
	}
	// One transfer a directory: those that shared the first fetch fetch again.
	if diff := cmp.Diff(4, g.srv.UploadPacks("wide")-uploads); diff != "" {
		t.Errorf("upload-packs for 4 directories read at once (-want +got):\n%s", diff)
	}
}

// readAllOf reads fns/f0 ... fns/f<n-1> of functions(n) at head.
func readAllOf(t *testing.T, f *Fetcher, url string, head Head, auth *Auth, n int) {
	t.Helper()
	for i := range n {
		got, err := f.Read(context.Background(), url, head, fmt.Sprintf("fns/f%d", i), auth, gitTimeout)
		if err != nil || got.Metadata.Name != fmt.Sprintf("f%d", i) {
			t.Errorf("Read fns/f%d: %+v, %v", i, got.Metadata, err)
		}
	}
}

// TestCommitStore_PartialKeepsWhole: a partial snapshot of a commit the store holds
// whole (a branch's read that found it over the bound a moment after a lower bound,
// or a failure to read the clone) is used, not kept, and leaves the whole one.
func TestCommitStore_PartialKeepsWhole(t *testing.T) {
	cs := newCommitStore()
	key := commitKey{url: "http://127.0.0.1/r.git", commit: "c1"}
	whole := &snapshot{commit: "c1", size: 1000}
	cs.add(key, key, whole, 1<<20)
	cs.add(key, key, &snapshot{commit: "c1", partial: true, path: "fns/f0", size: 100}, 1<<20)
	if got, ok := cs.get(key); !ok || got != whole {
		t.Errorf("after a partial snapshot of the same commit: %+v, %v; want the whole one kept", got, ok)
	}
	if cs.notKept != 1 || cs.kept.bytes != 1000 {
		t.Errorf("notKept %d, used %d: want the partial one counted as not kept, the whole one's bytes", cs.notKept, cs.kept.bytes)
	}
}

// TestCommitStore_RemembersDropped: a commit fetched again after it was dropped counts
// one refetch, by the key it is kept under or the one it was asked for, and is
// forgotten then; of the commits dropped, the store remembers the most recent
// evictedKeys.
func TestCommitStore_RemembersDropped(t *testing.T) {
	const n = evictedKeys
	cs := newCommitStore()
	key := func(i int) commitKey { return commitKey{url: "http://127.0.0.1/r.git", commit: fmt.Sprint("c", i)} }
	add := func(i, asked int) { cs.add(key(i), key(asked), &snapshot{commit: fmt.Sprint("c", i), size: 10}, 10) }
	stats := func() CommitStoreStats {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return CommitStoreStats{Bytes: cs.kept.bytes, Commits: cs.kept.len(), Evictions: cs.evicted, Refetches: cs.refetched, NotKept: cs.notKept}
	}
	// A bound of one snapshot: each add drops the one kept before. Commits 1 to n are
	// remembered, commit 0 no longer.
	for i := 0; i <= n+1; i++ {
		add(i, i)
	}
	want := CommitStoreStats{Bytes: 10, Commits: 1, Evictions: n + 1}
	if diff := cmp.Diff(want, stats()); diff != "" {
		t.Fatalf("after %d commits (-want +got):\n%s", n+2, diff)
	}
	steps := []struct {
		name      string
		i, asked  int
		refetches uint64
	}{
		{"asked for a dropped commit, the fetch found another (a tip moved on)", n + 10, n, 1},
		{"the commit counted is forgotten", n, n, 0},
		{"a commit past the most recent evictedKeys dropped is forgotten", 0, 0, 0},
		{"the positive control: one within them counts", n - 1, n - 1, 1},
		{"kept under one dropped key, asked for under another: one refetch", n - 3, n - 2, 1},
		{"and the key asked for is forgotten", n - 2, n - 2, 0},
	}
	for _, s := range steps {
		add(s.i, s.asked)
		want.Evictions++
		want.Refetches += s.refetches
		if diff := cmp.Diff(want, stats()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
}
