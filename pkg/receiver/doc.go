// Package receiver receives git hosts' push webhooks (GitHub, GitLab, Gitea, Forgejo) on receiver Secrets and has the Functions of the pushed repository checked at once.
package receiver
