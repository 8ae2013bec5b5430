package git

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

// gogitEntries decodes raw as go-git does.
func gogitEntries(raw []byte) ([]object.TreeEntry, error) {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.TreeObject)
	if _, err := o.Write(raw); err != nil {
		return nil, err
	}
	tree := &object.Tree{}
	if err := tree.Decode(o); err != nil {
		return nil, err
	}
	return tree.Entries, nil
}

// encodeTree is what go-git writes for entries.
func encodeTree(t testing.TB, entries []object.TreeEntry) []byte {
	t.Helper()
	b, err := encodedTree(entries)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// encodedTree is go-git's encoding of entries, or its refusal (entries not sorted).
func encodedTree(entries []object.TreeEntry) ([]byte, error) {
	o := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: entries}).Encode(o); err != nil {
		return nil, err
	}
	r, _ := o.Reader()
	var b bytes.Buffer
	_, _ = b.ReadFrom(r)
	return b.Bytes(), nil
}

// ourEntries is what eachEntry reads of raw, as go-git's entries; eachEntryFrom must
// read the same (of a tree it can hold whole in its buffer), or the test fails.
func ourEntries(t testing.TB, raw []byte) ([]object.TreeEntry, error) {
	t.Helper()
	read := func(each func(func(treeEntry) bool) error) ([]object.TreeEntry, error) {
		var got []object.TreeEntry
		err := each(func(e treeEntry) bool {
			got = append(got, object.TreeEntry{Name: string(e.name), Mode: e.mode, Hash: e.hash})
			return true
		})
		return got, err
	}
	got, err := read(func(fn func(treeEntry) bool) error { return eachEntry(raw, fn) })
	if len(raw) > treeReadBuffer {
		return got, err // a name may be longer than eachEntryFrom reads
	}
	streamed, streamErr := read(func(fn func(treeEntry) bool) error {
		return eachEntryFrom(bufio.NewReaderSize(bytes.NewReader(raw), treeReadBuffer), fn)
	})
	if diff := cmp.Diff(got, streamed); diff != "" || (err == nil) != (streamErr == nil) {
		t.Fatalf("eachEntry: %v; eachEntryFrom: %v; entries (-eachEntry +eachEntryFrom):\n%s", err, streamErr, diff)
	}
	return got, err
}

func TestEachEntry(t *testing.T) {
	h := func(b byte) plumbing.Hash { return plumbing.Hash{b, 1, 2, 3} }
	entries := []object.TreeEntry{
		{Name: ".gitignore", Mode: filemode.Regular, Hash: h(1)},
		{Name: "func.yaml", Mode: filemode.Executable, Hash: h(2)},
		{Name: "link", Mode: filemode.Symlink, Hash: h(3)},
		{Name: "old", Mode: filemode.Deprecated, Hash: h(4)},
		{Name: "src", Mode: filemode.Dir, Hash: h(5)},
		{Name: "sub module", Mode: filemode.Submodule, Hash: h(6)},
		{Name: "ünïcode \x01", Mode: filemode.Regular, Hash: h(7)},
	}
	raw := encodeTree(t, entries)
	got, err := ourEntries(t, raw)
	if err != nil {
		t.Fatalf("eachEntry: %v", err)
	}
	if diff := cmp.Diff(entries, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	for _, e := range entries {
		found, ok, err := findEntry(raw, e.Name)
		if err != nil || !ok || string(found.name) != e.Name || found.hash != e.Hash || found.mode != e.Mode {
			t.Errorf("findEntry(%q) = %+v, %v, %v", e.Name, found, ok, err)
		}
	}
	if _, ok, err := findEntry(raw, "func"); ok || err != nil {
		t.Errorf("findEntry of a name no entry has: found %v, %v", ok, err)
	}
	if got, err := ourEntries(t, nil); err != nil || len(got) != 0 {
		t.Errorf("the empty tree: %v, %v", got, err)
	}

	id := string(make([]byte, hashSize))
	for name, raw := range map[string]string{
		"a mode alone":             "100644",
		"no name's end":            "100644 name",
		"an id cut short":          "100644 name\x00" + id[:19],
		"a mode that is not octal": "100648 name\x00" + id,
		"an empty mode":            " name\x00" + id,
		"a mode over 32 bits":      "77777777777 name\x00" + id,
		"a second entry cut short": "100644 a\x00" + id + "100644 b\x00" + id[:3],
	} {
		if _, err := ourEntries(t, []byte(raw)); !errors.Is(err, errBadTree) {
			t.Errorf("%s: %v, want errBadTree", name, err)
		}
		if _, err := gogitEntries([]byte(raw)); err == nil && name != "a mode alone" {
			// The control: go-git refuses them too (a mode alone it reads as no entry).
			t.Errorf("%s: go-git decodes it", name)
		}
	}
}

// FuzzTreeEntries: whatever eachEntry reads of a tree's content, go-git reads the
// same; and what go-git reads, written back as git writes it, eachEntry reads the same.
func FuzzTreeEntries(f *testing.F) {
	f.Add(encodeTree(f, []object.TreeEntry{{Name: "func.yaml", Mode: filemode.Regular}, {Name: "src", Mode: filemode.Dir}}))
	f.Add([]byte("100644 a\x00"))
	f.Add([]byte("0 \x00aaaaaaaaaaaaaaaaaaaa40000 d\x00bbbbbbbbbbbbbbbbbbbb"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ours, ourErr := ourEntries(t, raw)
		theirs, theirErr := gogitEntries(raw)
		if ourErr == nil {
			if theirErr != nil {
				t.Fatalf("eachEntry read %d entries, go-git: %v", len(ours), theirErr)
			}
			if diff := cmp.Diff(theirs, ours); diff != "" {
				t.Fatalf("entries (-go-git +eachEntry):\n%s", diff)
			}
		}
		if theirErr == nil {
			// go-git decodes entries in any order but encodes only sorted ones, as git
			// writes them: a tree it will not write has no encoding to read back.
			encoded, err := encodedTree(theirs)
			if err != nil {
				return
			}
			again, err := ourEntries(t, encoded)
			if err != nil {
				t.Fatalf("eachEntry of go-git's encoding of %d entries: %v", len(theirs), err)
			}
			if diff := cmp.Diff(theirs, again); diff != "" {
				t.Fatalf("entries (-go-git +eachEntry):\n%s", diff)
			}
		}
	})
}
