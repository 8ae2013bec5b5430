package devenv

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Repo is a git repository served read-only over smart HTTP on 127.0.0.1 by git
// http-backend (one CGI process per request, ended with it).
type Repo struct {
	// URL is the repository's clone URL.
	URL string
	// Commit is the commit of its branch main.
	Commit string
	srv    *http.Server
}

// ServeRepo creates, under dir, a git repository whose branch main holds files (path
// to content) in one commit, and serves it as functions.git. Errors of the server
// (a client gone mid-answer) go to errs.
func ServeRepo(dir string, files map[string]string, errs io.Writer) (*Repo, error) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("the repository needs git: %w", err)
	}
	work := filepath.Join(dir, "work")
	for name, content := range files {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("writing the repository: %w", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("writing the repository: %w", err)
		}
	}
	bare := filepath.Join(dir, "repos", "functions.git")
	git := func(wd string, args ...string) (string, error) {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=func-operator", "GIT_AUTHOR_EMAIL=run@fnops.invalid",
			"GIT_COMMITTER_NAME=func-operator", "GIT_COMMITTER_EMAIL=run@fnops.invalid", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	for _, step := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "a function"},
		{"clone", "-q", "--bare", work, bare},
	} {
		if _, err := git(work, step...); err != nil {
			return nil, err
		}
	}
	commit, err := git(work, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serving the repository: %w", err)
	}
	srv := &http.Server{
		Handler: &cgi.Handler{
			Path:   gitBin,
			Args:   []string{"http-backend"},
			Env:    []string{"GIT_PROJECT_ROOT=" + filepath.Join(dir, "repos"), "GIT_HTTP_EXPORT_ALL=1"},
			Stderr: errs,
			Logger: log.New(errs, "git http-backend: ", 0),
		},
		ErrorLog: log.New(errs, "git server: ", 0),
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_, _ = fmt.Fprintln(errs, "git server:", err)
		}
	}()
	return &Repo{URL: "http://" + l.Addr().String() + "/functions.git", Commit: commit, srv: srv}, nil
}

// Close stops serving the repository; a git http-backend still answering is ended
// with its request.
func (r *Repo) Close() { _ = r.srv.Close() }
