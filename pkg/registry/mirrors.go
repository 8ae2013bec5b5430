package registry

import (
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Candidates returns the references to resolve for base b, in order, without
// repeats (as go-containerregistry names them): the rewrites of b.Image, then of
// each of b.Mirrors, by mirrors; b.Image; b.Mirrors. None when b names no image.
//
// mirrors maps a repository prefix to the one that stands in for it, as an
// operator's ConfigMap would ("docker.io/paketobuildpacks" to
// "127.0.0.1:5000/paketo"); the longest prefix that matches whole path
// components wins. Prefixes are compared as go-containerregistry names them:
// "docker.io", "index.docker.io" and Docker Hub's "library/" are one. A prefix of
// one component is a registry when it has a dot or a port, or is localhost (as
// Docker reads a reference), else a repository of Docker Hub.
func Candidates(b Base, mirrors map[string]string) []string {
	if b.Image == "" {
		return nil
	}
	prefixes := make([]mirrorPrefix, 0, len(mirrors))
	for from, to := range mirrors {
		for _, p := range normalizePrefix(from) {
			prefixes = append(prefixes, mirrorPrefix{from: p, to: strings.TrimSuffix(strings.TrimSpace(to), "/")})
		}
	}

	// Longest first; ties (two spellings of one prefix) in a stable order.
	sort.Slice(prefixes, func(x, y int) bool {
		px, py := prefixes[x], prefixes[y]
		if len(px.from) != len(py.from) {
			return len(px.from) > len(py.from)
		}
		if px.from != py.from {
			return px.from < py.from
		}
		return px.to < py.to
	})

	names := append([]string{b.Image}, b.Mirrors...)
	var out []string
	seen := map[string]bool{}
	add := func(ref string) {
		r, err := name.ParseReference(ref)
		if err != nil || seen[r.Name()] {
			return
		}
		seen[r.Name()] = true
		out = append(out, ref)
	}
	for _, n := range names {
		if rw, ok := rewrite(n, prefixes); ok {
			add(rw)
		}
	}
	for _, n := range names {
		add(n)
	}
	return out
}

type mirrorPrefix struct{ from, to string }

// normalizePrefix names a repository prefix as go-containerregistry names the
// repositories under it. One component under Docker Hub ("docker.io/paketobuildpacks",
// "ubuntu") names both an organization and an official image (library/ubuntu).
func normalizePrefix(p string) []string {
	p = strings.TrimSuffix(strings.TrimSpace(p), "/")
	if p == "" {
		return nil
	}
	if !strings.Contains(p, "/") && (strings.ContainsAny(p, ".:") || p == "localhost") {
		reg, err := name.NewRegistry(p)
		if err != nil {
			return nil
		}
		return []string{reg.Name()}
	}
	repo, err := name.NewRepository(p)
	if err != nil {
		return nil
	}
	if path := repo.RepositoryStr(); strings.HasPrefix(path, "library/") && !strings.Contains(p, "library/") {
		return []string{repo.Name(), repo.Registry.Name() + "/" + strings.TrimPrefix(path, "library/")}
	}
	return []string{repo.Name()}
}

// rewrite returns ref with the first of prefixes (sorted longest first) that
// matches whole path components of its repository replaced.
func rewrite(ref string, prefixes []mirrorPrefix) (string, bool) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", false
	}
	repo := r.Context().Name()
	for _, p := range prefixes {
		if repo != p.from && !strings.HasPrefix(repo, p.from+"/") {
			continue
		}
		sep := ":"
		if _, ok := r.(name.Digest); ok {
			sep = "@"
		}
		out := p.to + strings.TrimPrefix(repo, p.from) + sep + r.Identifier()
		if _, err := name.ParseReference(out); err != nil {
			return "", false
		}
		return out, true
	}
	return "", false
}
