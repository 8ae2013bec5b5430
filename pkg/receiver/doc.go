// Package receiver receives git hosts' push webhooks (GitHub, GitLab, Gitea, Forgejo)
// on receiver Secrets and has the Functions of the pushed repository checked at once.
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top): pkg/operator
// hands it the Secrets it reads and the Trigger that has Functions checked.
//
// Repository URLs are parsed by NormalizeURL (normalize.go), not
// github.com/chainguard-dev/git-urls: its scp-like parser refuses "git@host:~user/repo"
// and users such as "first.last+x@", and cuts "org/r+e.git" into the path "org/r" and a
// query, so a push would match other repositories than the Function's.
package receiver
