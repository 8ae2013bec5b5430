// Package receiver receives git hosts' push webhooks (GitHub, GitLab, Gitea, Forgejo)
// on receiver Secrets and has the Functions of the pushed repository checked at once.
//
// It must not import pkg/reconciler or pkg/operator (depguard rule top): pkg/operator
// hands it the Secrets it reads and the Trigger that has Functions checked.
//
// Pushed repositories are compared with Functions' by pkg/repourl's keys.
package receiver
