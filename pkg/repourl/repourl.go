package repourl

import (
	"net/url"
	"regexp"
	"strings"
)

// defaultPorts are the ports left out of a key, by scheme.
var defaultPorts = map[string]string{
	"http": "80", "https": "443", "ssh": "22", "git+ssh": "22", "ssh+git": "22", "git": "9418",
}

// scpLike matches git's [user@]host:path, where no slash comes before the colon.
var scpLike = regexp.MustCompile(`^(?:[^@/]+@)?([^@/:\[\]]+):(.*)$`)

// NormalizeURL maps the forms of a repository's URL to one key to compare them:
// https://github.com/Org/Repo.git, http://github.com/org/repo/,
// ssh://git@github.com:22/org/repo.git, git@github.com:org/repo.git and
// git://github.com/org/repo all give "github.com/org/repo".
//
// The key is host[:port]/path, lower case: without scheme, user or password,
// default port (80, 443, 22, 9418 by scheme), query, fragment, empty path
// segments, trailing ".git" and slashes. The path is lower-cased too: the common
// hosts ignore its case, and a key that matches too much only costs a check.
//
// It returns "" for what is not a remote repository URL (no host or no path, a
// local path, another scheme): never match "" with "" (MatchURL does not).
func NormalizeURL(s string) string {
	s = strings.TrimSpace(s)
	var host, path string
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return ""
		}
		scheme := strings.ToLower(u.Scheme)
		def, ok := defaultPorts[scheme]
		if !ok {
			return ""
		}
		host = hostKey(u.Hostname())
		if port := u.Port(); port != "" && port != def {
			host += ":" + port
		}
		path = u.Path
	} else {
		m := scpLike.FindStringSubmatch(s)
		if m == nil {
			return ""
		}
		host, path = hostKey(m[1]), m[2]
	}
	path = pathKey(path)
	if host == "" || path == "" {
		return ""
	}
	return host + "/" + path
}

// hostKey lower-cases host, drops the dot of a fully qualified name and brackets an
// IPv6 address.
func hostKey(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// pathKey lower-cases path and drops its empty segments and a trailing ".git".
func pathKey(path string) string {
	var segs []string
	for _, s := range strings.Split(strings.ToLower(path), "/") {
		if s != "" {
			segs = append(segs, s)
		}
	}
	if n := len(segs); n > 0 {
		segs[n-1] = strings.TrimSuffix(segs[n-1], ".git")
		if segs[n-1] == "" {
			segs = segs[:n-1]
		}
	}
	return strings.Join(segs, "/")
}

// MatchURL is true when repository, a Function's spec.repository.url, is one of
// pushed (as NormalizeURL sees them). A repository without a key matches nothing.
func MatchURL(repository string, pushed []string) bool {
	return Matcher(pushed)(repository)
}

// Matcher returns MatchURL for pushed, normalized once: to test many Functions'
// repositories against one push.
func Matcher(pushed []string) func(repository string) bool {
	keys := make(map[string]bool, len(pushed))
	for _, p := range pushed {
		if k := NormalizeURL(p); k != "" {
			keys[k] = true
		}
	}
	return func(repository string) bool {
		k := NormalizeURL(repository)
		return k != "" && keys[k]
	}
}
