// Package repourl compares git repository URLs: NormalizeURL maps the forms of one
// repository's URL (https, ssh, scp-like, git://) to one key, and Matcher tests many
// repositories against the URLs a push names.
//
// Hand-written rather than github.com/chainguard-dev/git-urls: its scp-like parser
// refuses "git@host:~user/repo" and users such as "first.last+x@", and cuts
// "org/r+e.git" into the path "org/r" and a query, so a push would match other
// repositories than the Function's.
//
// It imports the standard library only (depguard rule floor): its fuzz target
// (FuzzNormalizeURL) compiles nothing else with the fuzzer's instrumentation.
package repourl
