package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Repo is a bare repository on disk that tests write commits into.
type Repo struct {
	// Name is the repository name without the ".git" suffix.
	Name string
	// Dir is the absolute path of the bare repository; it ends in ".git".
	Dir string

	mu sync.Mutex // serialises Commit so concurrent pushes never race
}

// NewRepoRoot returns a fresh directory to hold bare repositories.
func NewRepoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(t.TempDir())
	if err != nil {
		t.Fatalf("gitserver: resolve repo root: %v", err)
	}
	return root
}

// CreateRepo creates the bare repository root/name.git with "main" as its
// default branch. name must not carry the ".git" suffix.
func CreateRepo(t testing.TB, root, name string) *Repo {
	t.Helper()
	if name == "" || strings.HasSuffix(name, ".git") {
		t.Fatalf("gitserver: repo name %q must be non-empty and have no .git suffix", name)
	}
	dir, err := filepath.Abs(filepath.Join(root, name+".git"))
	if err != nil {
		t.Fatalf("gitserver: resolve repo dir: %v", err)
	}
	newGitCLI(t).run("", "init", "--quiet", "--bare", "--initial-branch=main", dir)
	return &Repo{Name: name, Dir: dir}
}

// Commit writes files on top of branch's current tip (or onto a new orphan
// branch when branch does not exist yet), commits them with message msg,
// pushes the commit to the bare repository and returns its full SHA.
//
// Keys of files are slash-separated paths relative to the repository root and
// may contain sub-directories; an empty value deletes that file.
func (r *Repo) Commit(t testing.TB, branch string, files map[string]string, msg string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()

	git := newGitCLI(t)
	work := t.TempDir()
	git.run(work, "init", "--quiet", "--initial-branch="+branch)
	ref := "refs/heads/" + branch
	if r.hasRef(git, ref) {
		git.run(work, "fetch", "--quiet", "--no-tags", r.Dir, ref)
		git.run(work, "reset", "--quiet", "--hard", "FETCH_HEAD")
	}
	for name, content := range files {
		if err := writeWorktreeFile(work, name, content); err != nil {
			t.Fatalf("gitserver: commit to %s@%s: %v", r.Name, branch, err)
		}
	}
	git.run(work, "add", "--all")
	git.run(work, "commit", "--quiet", "--allow-empty", "--message", msg)
	git.run(work, "push", "--quiet", r.Dir, "HEAD:"+ref)
	return git.run(work, "rev-parse", "HEAD")
}

// SetHEAD makes branch the repository's default branch.
func (r *Repo) SetHEAD(t testing.TB, branch string) {
	t.Helper()
	newGitCLI(t).run(r.Dir, "symbolic-ref", "HEAD", "refs/heads/"+branch)
}

// Head returns the commit SHA that branch points to.
func (r *Repo) Head(t testing.TB, branch string) string {
	t.Helper()
	return newGitCLI(t).run(r.Dir, "rev-parse", "--verify", "refs/heads/"+branch+"^{commit}")
}

// Tag points tag at commit: an annotated tag (a tag object, which a listing shows
// peeled) when annotated is true, else a lightweight one. An existing tag moves.
func (r *Repo) Tag(t testing.TB, tag, commit string, annotated bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	args := []string{"tag", "--force"}
	if annotated {
		args = append(args, "--annotate", "--message", "tag "+tag)
	}
	newGitCLI(t).run(r.Dir, append(args, tag, commit)...)
}

// SetConfig sets a git configuration key of the repository, such as
// uploadpack.allowReachableSHA1InWant.
func (r *Repo) SetConfig(t testing.TB, key, value string) {
	t.Helper()
	newGitCLI(t).run(r.Dir, "config", key, value)
}

// DeleteBranch removes branch from the repository.
func (r *Repo) DeleteBranch(t testing.TB, branch string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	newGitCLI(t).run(r.Dir, "update-ref", "-d", "refs/heads/"+branch)
}

// hasRef reports whether the bare repository holds ref.
func (r *Repo) hasRef(git *gitCLI, ref string) bool {
	git.t.Helper()
	_, err := git.output(r.Dir, "show-ref", "--verify", "--quiet", ref)
	var exitErr *exec.ExitError
	if err == nil {
		return true
	}
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return false
	}
	git.t.Fatalf("gitserver: %v", err)
	return false
}

// writeWorktreeFile writes (or, for empty content, deletes) the slash path
// name below dir, refusing paths that would escape dir.
func writeWorktreeFile(dir, name, content string) error {
	clean := filepath.Clean(filepath.FromSlash(name))
	if name == "" || filepath.IsAbs(clean) || clean == "." || clean == ".." ||
		strings.HasPrefix(clean, ".."+string(filepath.Separator)) || clean == ".git" ||
		strings.HasPrefix(clean, ".git"+string(filepath.Separator)) {
		return fmt.Errorf("invalid file path %q", name)
	}
	path := filepath.Join(dir, clean)
	if content == "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("delete %s: %w", name, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create parent of %s: %w", name, err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// gitCLI runs the git CLI with an isolated environment: no GIT_* variables
// from the caller, a fixed identity and a throw-away HOME, so the user's
// configuration never leaks in.
type gitCLI struct {
	t   testing.TB
	env []string
}

func newGitCLI(t testing.TB) *gitCLI {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") ||
			strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=gitserver",
		"GIT_AUTHOR_EMAIL=gitserver@example.invalid",
		"GIT_COMMITTER_NAME=gitserver",
		"GIT_COMMITTER_EMAIL=gitserver@example.invalid",
	)
	return &gitCLI{t: t, env: env}
}

// run runs git in dir and returns its trimmed standard output; any failure
// ends the test.
func (g *gitCLI) run(dir string, args ...string) string {
	g.t.Helper()
	out, err := g.output(dir, args...)
	if err != nil {
		g.t.Fatalf("gitserver: %v", err)
	}
	return out
}

// output runs git in dir and returns its trimmed standard output.
func (g *gitCLI) output(dir string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = g.env
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s (in %q): %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
