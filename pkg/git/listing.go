package git

import (
	"crypto/sha256"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Listing is what a remote advertised in one round trip (what `git ls-remote`
// prints): its branches and tags, with annotated tags peeled to their commits, and
// its default branch.
type Listing struct {
	// Branches maps branch names to their tip commits.
	Branches map[string]string
	// Tags maps tag names to the commits they point at (peeled).
	Tags map[string]string
	// Default is the branch the remote's HEAD points at; empty when not advertised.
	Default string
	// At is when the remote answered.
	At time.Time

	versionsOnce   sync.Once
	sortedVersions []versionTag
}

// newListing reads a listing from the references a remote advertised.
func newListing(refs []*plumbing.Reference, at time.Time) *Listing {
	l := &Listing{Branches: map[string]string{}, Tags: map[string]string{}, At: at}
	peeled := map[string]string{}
	for _, r := range refs {
		// Not Short(): it scans the name with fmt's %s, which stops at a Unicode
		// space and mangles invalid UTF-8, so "main\u00a0evil" would pass for main.
		name := r.Name().String()
		switch {
		case r.Name().IsBranch():
			l.Branches[strings.TrimPrefix(name, "refs/heads/")] = r.Hash().String()
		case r.Name().IsTag() && strings.HasSuffix(name, "^{}"):
			peeled[strings.TrimSuffix(strings.TrimPrefix(name, "refs/tags/"), "^{}")] = r.Hash().String()
		case r.Name().IsTag():
			l.Tags[strings.TrimPrefix(name, "refs/tags/")] = r.Hash().String()
		case r.Name() == plumbing.HEAD && r.Type() == plumbing.SymbolicReference && r.Target().IsBranch():
			l.Default = strings.TrimPrefix(r.Target().String(), "refs/heads/")
		}
	}
	for tag, commit := range peeled {
		if _, ok := l.Tags[tag]; ok {
			l.Tags[tag] = commit
		}
	}
	return l
}

// size is about how many bytes the listing holds in memory.
func (l *Listing) size() int64 {
	const perEntry = 48 + 40 // map entry and string headers, and the commit
	n := int64(256)
	for name := range l.Branches {
		n += perEntry + int64(len(name))
	}
	for name := range l.Tags {
		n += perEntry + int64(len(name))
	}
	return n
}

// digest identifies what the listing says, to tell a changed repository.
func (l *Listing) digest() [sha256.Size]byte {
	h := sha256.New()
	write := func(kind string, m map[string]string) {
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			_, _ = h.Write([]byte(kind + name + "\x00" + m[name] + "\x00"))
		}
	}
	write("b:", l.Branches)
	write("t:", l.Tags)
	_, _ = h.Write([]byte("d:" + l.Default))
	var d [sha256.Size]byte
	copy(d[:], h.Sum(nil))
	return d
}
