package repourl

import (
	"strings"
	"testing"
)

func TestNormalizeURL(t *testing.T) {
	const key = "github.com/org/repo"
	for _, tc := range []struct {
		in, want string
	}{
		// Every form of one repository gives one key.
		{"https://github.com/org/repo", key},
		{"https://github.com/org/repo.git", key},
		{"https://github.com/org/repo/", key},
		{"https://github.com/org/repo.git/", key},
		{"http://github.com/org/repo", key},
		{"HTTPS://GitHub.COM/Org/Repo.git", key},
		{"https://github.com:443/org/repo", key},
		{"http://github.com:80/org/repo", key},
		{"https://user@github.com/org/repo", key},
		{"https://user:s3cret@github.com/org/repo.git", key},
		{"https://x-access-token:ghp_abc@github.com/org/repo", key},
		{"https://github.com/org/repo?ref=main#readme", key},
		{"https://github.com//org//repo", key},
		{"https://github.com./org/repo", key},
		{"  https://github.com/org/repo  ", key},
		{"ssh://git@github.com/org/repo.git", key},
		{"ssh://git@github.com:22/org/repo.git", key},
		{"ssh://github.com/org/repo", key},
		{"git+ssh://git@github.com/org/repo.git", key},
		{"ssh+git://git@github.com/org/repo.git", key},
		{"git://github.com/org/repo.git", key},
		{"git://github.com:9418/org/repo.git", key},
		{"git@github.com:org/repo.git", key},
		{"git@github.com:org/repo", key},
		{"git@github.com:/org/repo.git", key},
		{"github.com:org/repo.git", key},
		{"GIT@GitHub.com:Org/Repo.git", key},
		// Ports that are not the scheme's default stay.
		{"https://git.example.com:8443/org/repo.git", "git.example.com:8443/org/repo"},
		{"http://git.example.com:443/org/repo", "git.example.com:443/org/repo"},
		{"https://git.example.com:22/org/repo", "git.example.com:22/org/repo"},
		{"ssh://git@git.example.com:2222/org/repo.git", "git.example.com:2222/org/repo"},
		// Subgroups and IP addresses.
		{"https://gitlab.com/group/sub/repo.git", "gitlab.com/group/sub/repo"},
		{"git@gitlab.com:group/sub/repo.git", "gitlab.com/group/sub/repo"},
		{"http://10.0.0.1:3000/org/repo.git", "10.0.0.1:3000/org/repo"},
		{"http://[::1]:3000/org/repo.git", "[::1]:3000/org/repo"},
		{"https://[2001:db8::1]/org/repo", "[2001:db8::1]/org/repo"},
		// Only the last ".git" goes, and only as a suffix.
		{"https://example.com/org.git/repo.git", "example.com/org.git/repo"},
		{"https://example.com/org/repo.github", "example.com/org/repo.github"},
		{"https://example.com/org/.git", "example.com/org"},
		{"https://example.com/org/repo.git.git", "example.com/org/repo.git"},
		// Not remote repositories: no key.
		{"", ""},
		{"   ", ""},
		{"https://github.com", ""},
		{"https://github.com/", ""},
		{"https:///org/repo", ""},
		{"file:///srv/git/repo.git", ""},
		{"ftp://example.com/org/repo", ""},
		{"/srv/git/repo.git", ""},
		{"./repo", ""},
		{"../a:b", ""},
		{"repo", ""},
		{"github.com/org/repo", ""},
		{"git@github.com:", ""},
		{"https://github.com/%zz", ""},
		{"http://[::1/org/repo", ""},
	} {
		if got := NormalizeURL(tc.in); got != tc.want {
			t.Errorf("NormalizeURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMatchURL(t *testing.T) {
	github := []string{"https://github.com/org/repo.git", "https://h/o/r.git.git", "git@github.com:org/repo.git", "git://github.com/org/repo.git", "https://github.com/org/repo"}
	for _, tc := range []struct {
		name       string
		repository string
		pushed     []string
		want       bool
	}{
		{"https form", "https://github.com/org/repo", github, true},
		{"ssh form", "ssh://git@github.com/Org/Repo.git", github, true},
		{"scp form", "git@github.com:org/repo", github, true},
		{"another repository", "https://github.com/org/repo2", github, false},
		{"another owner", "https://github.com/other/repo", github, false},
		{"another host", "https://gitlab.com/org/repo", github, false},
		{"a prefix is not a match", "https://github.com/org", github, false},
		{"no key matches nothing", "", []string{"", "not a url"}, false},
		{"a pushed URL without key matches nothing", "/srv/repo", []string{"/srv/repo"}, false},
		{"nothing pushed", "https://github.com/org/repo", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchURL(tc.repository, tc.pushed); got != tc.want {
				t.Errorf("MatchURL(%q, %q) = %v, want %v", tc.repository, tc.pushed, got, tc.want)
			}
		})
	}
}

// FuzzNormalizeURL: no input panics, and a key is lower case, scheme-less, without
// empty segments or trailing slash, and matches itself.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"https://github.com/org/repo.git", "https://h/o/r.git.git", "git@github.com:org/repo.git", "ssh://git@h:2222/o/r", "http://[::1]:80/a/", "", ":", "@:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := NormalizeURL(s)
		if k == "" {
			return
		}
		if k != strings.ToLower(k) || strings.Contains(k, "://") || strings.HasSuffix(k, "/") ||
			strings.Contains(k, "//") || !strings.Contains(k, "/") {
			t.Errorf("NormalizeURL(%q) = %q", s, k)
		}
		if !MatchURL(s, []string{s}) {
			t.Errorf("%q does not match itself", s)
		}
	})
}
