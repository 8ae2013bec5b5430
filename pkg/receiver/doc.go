// Package receiver receives git hosts' push webhooks (GitHub, GitLab, Gitea, Forgejo) on receiver Secrets and has the Functions of the pushed repository checked at once.
//
// Repository URLs are parsed by NormalizeURL (normalize.go), not github.com/chainguard-dev/git-urls: its scp-like parser refuses "git@host:~user/repo" and users such as "first.last+x@", and cuts "org/r+e.git" into the path "org/r" and a query, so a push would match other repositories than the Function's.
package receiver
