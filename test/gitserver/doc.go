// Package gitserver runs real git servers (smart HTTP and SSH) on 127.0.0.1 for tests.
//
// Repositories are bare repositories on disk (see CreateRepo); tests write
// commits into them with Repo.Commit. StartHTTP serves every repository under
// a root directory through `git http-backend`, optionally behind basic or
// token authentication; StartSSH runs the real OpenSSH daemon so clients can
// clone with public-key authentication and host-key verification.
package gitserver
