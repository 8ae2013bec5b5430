package git

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib/funcyaml"
)

// objectOverhead is what a kept object costs besides its content (its id, its
// entries in the snapshot's maps and the walk's): an estimate, so that a commit of
// many empty files still counts. TestSnapshot_CountsWhatItHolds holds it to the heap.
const objectOverhead = 128

// snapshot is what a fetch of a commit kept, in memory: the raw content of every
// tree of the commit, and of every func.yaml and source-middleware file (those
// larger than a func.yaml may be as their size only). Or, when that is more than
// the commit store may hold, only what reading one directory needs (partial): the
// trees on the way to it and its files. Or, instead, the stalling error the fetch
// gave (the commit is too large, has too many files, ...), which holds for every
// path of it.
type snapshot struct {
	commit string
	root   plumbing.Hash
	trees  map[plumbing.Hash][]byte
	blobs  map[plumbing.Hash]keptBlob
	// partial is set when only directory path can be read.
	partial bool
	path    string
	err     error
	// readErr is why an object of the partial snapshot's directory could not be read
	// from the clone (see keep): read returns it.
	readErr error
	// size is what the snapshot holds: its objects' content and objectOverhead each.
	size int64
}

// keptBlob is a file kept: its content, or only its size when it is larger than a
// func.yaml may be (content nil).
type keptBlob struct {
	content []byte
	size    int64
}

func newSnapshot(commit string, root plumbing.Hash) *snapshot {
	return &snapshot{commit: commit, root: root, trees: map[plumbing.Hash][]byte{}, blobs: map[plumbing.Hash]keptBlob{}}
}

// reads is true when the snapshot can read directory fnPath.
func (s *snapshot) reads(fnPath string) bool { return !s.partial || s.path == fnPath }

// fileReader returns the content of a regular file of a function's directory, or
// false when there is none (or it is a link, or larger than a func.yaml may be).
type fileReader func(name string) ([]byte, bool)

// read returns what directory fnPath of the snapshot holds: its func.yaml and its
// other files.
func (s *snapshot) read(fnPath string) ([]byte, fileReader, error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	short := s.commit
	if len(short) > 12 {
		short = short[:12]
	}
	if !s.reads(fnPath) {
		return nil, nil, transient("commit %s was kept to read directory %q only", short, s.path)
	}
	if s.readErr != nil {
		return nil, nil, s.readErr
	}
	dir, err := s.dir(fnPath, short)
	if err != nil {
		return nil, nil, err
	}
	where := path.Join(fnPath, funcyaml.FuncYAML)
	entry, found, err := findEntry(dir, funcyaml.FuncYAML)
	switch {
	case err != nil:
		return nil, nil, stalling(v1alpha1.ReasonPathNotFound, "path %q cannot be read at commit %s: %s", fnPath, short, err)
	case !found:
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlNotFound, "%s does not exist at commit %s: the directory is not a function", where, short)
	}
	switch entry.mode {
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
	case filemode.Symlink:
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlInvalid, "%s is a symbolic link at commit %s: it must be a regular file", where, short)
	default:
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlNotFound, "%s is not a file at commit %s", where, short)
	}
	b, ok := s.blobs[entry.hash]
	switch {
	case !ok:
		return nil, nil, transient("reading %s at commit %s: it was not kept", where, short)
	case b.content == nil && b.size > maxFuncYAMLSize:
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlInvalid, "%s is %d bytes at commit %s: more than the %d a func.yaml may have",
			where, b.size, short, maxFuncYAMLSize)
	}
	return bytes.Clone(b.content), s.files(dir), nil
}

// layout is what a commit says of a function's directory besides its files: its tree
// id, which changes exactly when something in the directory does (a rebuild's input),
// and whether the repository root holds a Pipelines-as-Code .tekton/ directory.
type layout struct {
	tree            string
	pipelinesAsCode bool
}

// layoutOf returns the layout of directory fnPath; its tree is empty when the
// directory cannot be read.
func (s *snapshot) layoutOf(fnPath string) layout {
	var l layout
	if raw, ok := s.trees[s.root]; ok {
		e, found, err := findEntry(raw, PipelinesAsCodeDir)
		l.pipelinesAsCode = err == nil && found && e.mode == filemode.Dir
	}
	if h, err := s.dirHash(fnPath, ""); err == nil {
		l.tree = h.String()
	}
	return l
}

// PipelinesAsCodeDir is where Tekton Pipelines-as-Code keeps a repository's
// pipelines: a directory of that name at the root.
const PipelinesAsCodeDir = ".tekton"

// dir returns the content of the tree of directory fnPath ("" is the root).
func (s *snapshot) dir(fnPath, short string) ([]byte, error) {
	hash, err := s.dirHash(fnPath, short)
	if err != nil {
		return nil, err
	}
	raw, ok := s.trees[hash]
	if !ok {
		return nil, stalling(v1alpha1.ReasonPathNotFound, "path %q cannot be read at commit %s: tree %s is missing", fnPath, short, hash)
	}
	return raw, nil
}

// dirHash returns the id of the tree of directory fnPath ("" is the root).
func (s *snapshot) dirHash(fnPath, short string) (plumbing.Hash, error) {
	hash := s.root
	if fnPath != "" {
		parts := strings.Split(fnPath, "/")
		for i, part := range parts {
			raw, ok := s.trees[hash]
			if !ok {
				return plumbing.ZeroHash, stalling(v1alpha1.ReasonPathNotFound, "path %q cannot be read at commit %s: tree %s is missing", fnPath, short, hash)
			}
			e, found, err := findEntry(raw, part)
			last := i == len(parts)-1
			switch {
			case err != nil:
				return plumbing.ZeroHash, stalling(v1alpha1.ReasonPathNotFound, "path %q cannot be read at commit %s: %s", fnPath, short, err)
			case !found || (!last && e.mode != filemode.Dir):
				return plumbing.ZeroHash, stalling(v1alpha1.ReasonPathNotFound, "path %q does not exist at commit %s", fnPath, short)
			case e.mode != filemode.Dir:
				return plumbing.ZeroHash, stalling(v1alpha1.ReasonPathNotFound, "path %q is not a directory at commit %s", fnPath, short)
			}
			hash = e.hash
		}
	}
	return hash, nil
}

// files reads the regular files of the directory whose tree is dir.
func (s *snapshot) files(dir []byte) fileReader {
	return func(name string) ([]byte, bool) {
		e, found, err := findEntry(dir, name)
		if err != nil || !found || (e.mode != filemode.Regular && e.mode != filemode.Executable) {
			return nil, false
		}
		b, ok := s.blobs[e.hash]
		if !ok || (b.content == nil && b.size > maxFuncYAMLSize) {
			return nil, false
		}
		return bytes.Clone(b.content), true
	}
}

// keep copies out of a fetched repository's storage what reading any directory of
// commit hash needs, so that the clone can be removed: at most max bytes of it (see
// snapshot.size), which fits measures first, walking as keepAll then does. When that is more (or max < 0), it keeps
// only what reading fnPath needs: a partial snapshot, bounded by the depth of fnPath
// and the clone's limit of what one object may expand to. kept names the files whose
// content it keeps, in any directory (Fetcher.kept).
func keep(src storer.EncodedObjectStorer, hash plumbing.Hash, head Head, url string, auth *Auth, kept map[string]bool, fnPath string, max int64) (*snapshot, error) {
	root, err := rootTree(src, hash, head, url, auth)
	if err != nil {
		return nil, err
	}
	if max >= 0 && fits(src, root, kept, max) {
		if s := newSnapshot(hash.String(), root); s.keepAll(src, kept, max) {
			return s, nil
		}
	}
	s := newSnapshot(hash.String(), root)
	s.partial, s.path = true, fnPath
	s.keepDir(src, fnPath, kept)
	return s, nil
}

// rootTree returns the id of the tree of commit hash.
func rootTree(src storer.EncodedObjectStorer, hash plumbing.Hash, head Head, url string, auth *Auth) (plumbing.Hash, error) {
	c, err := object.GetCommit(src, hash)
	if err != nil {
		if head.fixed() {
			return plumbing.ZeroHash, repositoryStalling(v1alpha1.ReasonCommitNotFound, "%s of repository %s is not a commit", refText(head), scrub(url, auth.secrets))
		}
		return plumbing.ZeroHash, transient("reading commit %s of the clone: %s", hash, err)
	}
	return c.TreeHash, nil
}

// walkAll walks what keeping a whole commit keeps: each tree under root once, depth
// first, with only ids waiting their turn, and the kept files in them. entries gives
// a tree's entries to fn (false when it could not read them all); file is given each
// kept file's id and size. Every object is counted before it is read, by the size its
// pack header gives (objectOverhead each, a tree's content, a file's when a func.yaml
// may be that large), and the walk stops, false, once that is more than max.
func walkAll(src storer.EncodedObjectStorer, root plumbing.Hash, kept map[string]bool, max int64,
	entries func(hash plumbing.Hash, fn func(treeEntry) bool) bool, file func(hash plumbing.Hash, size int64) bool) bool {
	seen := map[plumbing.Hash]bool{root: true}
	pending := []plumbing.Hash{root}
	total := int64(objectOverhead)
	for len(pending) > 0 {
		hash := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		size, err := src.EncodedObjectSize(hash)
		if err != nil {
			return false
		}
		if total += size; total > max {
			return false
		}
		ok := true
		if !entries(hash, func(e treeEntry) bool {
			switch {
			case seen[e.hash] || e.mode == filemode.Submodule:
			case e.mode == filemode.Dir:
				seen[e.hash] = true
				pending = append(pending, e.hash)
				total += objectOverhead
			case kept[string(e.name)]:
				seen[e.hash] = true
				n, err := src.EncodedObjectSize(e.hash)
				if err != nil {
					ok = false
					break
				}
				total += objectOverhead
				if n <= maxFuncYAMLSize {
					total += n
				}
				ok = total <= max && file(e.hash, n)
			}
			return ok && total <= max
		}) || !ok || total > max {
			return false
		}
	}
	return true
}

// fits reports whether keepAll would keep the commit's trees within max bytes,
// holding none of them: each is read as it streams from the clone, so that a commit
// that is larger costs the operator an object at a time, never the bound.
func fits(src storer.EncodedObjectStorer, root plumbing.Hash, kept map[string]bool, max int64) bool {
	br := bufio.NewReaderSize(nil, treeReadBuffer)
	return walkAll(src, root, kept, max, func(hash plumbing.Hash, fn func(treeEntry) bool) bool {
		return walkTree(src, hash, br, fn)
	}, func(plumbing.Hash, int64) bool { return true })
}

// walkTree calls fn with the entries of tree hash of src as they stream through br,
// and reports whether the tree was read whole and fn never returned false.
func walkTree(src storer.EncodedObjectStorer, hash plumbing.Hash, br *bufio.Reader, fn func(treeEntry) bool) bool {
	o, err := src.EncodedObject(plumbing.TreeObject, hash)
	if err != nil {
		return false
	}
	r, err := o.Reader()
	if err != nil {
		return false
	}
	defer func() { _ = r.Close() }()
	br.Reset(r)
	all := true
	err = eachEntryFrom(br, func(e treeEntry) bool {
		all = fn(e)
		return all
	})
	return err == nil && all
}

// keepAll keeps every tree of the commit and the kept files in them (walkAll), or
// returns false once that would be more than max bytes, or at an object it cannot read.
func (s *snapshot) keepAll(src storer.EncodedObjectStorer, kept map[string]bool, max int64) bool {
	return walkAll(src, s.root, kept, max, func(hash plumbing.Hash, fn func(treeEntry) bool) bool {
		raw, err := s.keepTree(src, hash)
		all := true
		return err == nil && eachEntry(raw, func(e treeEntry) bool {
			all = fn(e)
			return all
		}) == nil && all
	}, func(hash plumbing.Hash, size int64) bool {
		return s.keepBlob(src, hash, size) == nil
	})
}

// keepDir keeps the trees on the way to directory fnPath, that directory's, and its
// kept files: what read(fnPath) needs. It stops where fnPath is not a directory or an
// object cannot be read, for read to say why.
func (s *snapshot) keepDir(src storer.EncodedObjectStorer, fnPath string, kept map[string]bool) {
	hash := s.root
	var parts []string
	if fnPath != "" {
		parts = strings.Split(fnPath, "/")
	}
	for _, part := range parts {
		raw, err := s.keepTree(src, hash)
		if err != nil {
			s.noteReadErr(err)
			return
		}
		e, found, err := findEntry(raw, part)
		if err != nil || !found || e.mode != filemode.Dir {
			return
		}
		hash = e.hash
	}
	raw, err := s.keepTree(src, hash)
	if err != nil {
		s.noteReadErr(err)
		return
	}
	// The first entry of each name, what read finds: a tree git would refuse may name a
	// file many times, each a different 1 MiB blob.
	found := map[string]bool{}
	_ = eachEntry(raw, func(e treeEntry) bool {
		if !kept[string(e.name)] || found[string(e.name)] {
			return true
		}
		found[string(e.name)] = true
		if _, done := s.blobs[e.hash]; done || e.mode == filemode.Dir || e.mode == filemode.Submodule {
			return true
		}
		size, err := src.EncodedObjectSize(e.hash)
		if err == nil {
			err = s.keepBlob(src, e.hash, size)
		}
		s.noteReadErr(err) // a file not kept reads as none
		return true
	})
}

// noteReadErr records the first failure to read an object of the clone that is there:
// read then fails as that did, transiently, rather than as a path that is not there.
func (s *snapshot) noteReadErr(err error) {
	if err != nil && s.readErr == nil && !errors.Is(err, plumbing.ErrObjectNotFound) {
		s.readErr = err
	}
}

// keepTree keeps tree hash, counting it, and returns its content.
func (s *snapshot) keepTree(src storer.EncodedObjectStorer, hash plumbing.Hash) ([]byte, error) {
	if raw, ok := s.trees[hash]; ok {
		return raw, nil
	}
	raw, err := readObject(src, plumbing.TreeObject, hash)
	if err != nil {
		return nil, err
	}
	s.trees[hash] = raw
	s.size += objectOverhead + int64(len(raw))
	return raw, nil
}

// keepBlob keeps file hash of size bytes, counting it: its content, or its size alone
// when that is more than a func.yaml may be.
func (s *snapshot) keepBlob(src storer.EncodedObjectStorer, hash plumbing.Hash, size int64) error {
	if size > maxFuncYAMLSize {
		s.blobs[hash] = keptBlob{size: size}
		s.size += objectOverhead
		return nil
	}
	content, err := readObject(src, plumbing.BlobObject, hash)
	if err != nil {
		return err
	}
	s.blobs[hash] = keptBlob{content: content, size: int64(len(content))}
	s.size += objectOverhead + int64(len(content))
	return nil
}

// readObject reads object hash of type t whole, into a slice of its size exactly
// (go-git's MemoryObject grows by appending: up to twice what it holds), and checks
// it against its id.
func readObject(src storer.EncodedObjectStorer, t plumbing.ObjectType, hash plumbing.Hash) ([]byte, error) {
	o, err := src.EncodedObject(t, hash)
	if err != nil {
		return nil, transient("reading %s %s of the clone: %w", t, hash, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, transient("reading %s %s of the clone: %w", t, hash, err)
	}
	defer func() { _ = r.Close() }()
	content := make([]byte, o.Size())
	if _, err := io.ReadFull(r, content); err != nil {
		return nil, transient("reading %s %s of the clone: %w", t, hash, err)
	}
	if plumbing.ComputeHash(t, content) != hash {
		return nil, transient("%s %s of the clone does not match its id", t, hash)
	}
	return content, nil
}
