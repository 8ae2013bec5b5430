package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/netguard"
)

// maxFuncYAMLSize bounds what is read of a func.yaml.
const maxFuncYAMLSize = 1 << 20

// Head is a branch of a remote repository and the commit at its tip.
type Head struct {
	Branch string
	Commit string
}

// remoteHead asks the remote for its references (one round trip, what `git ls-remote`
// does) and returns the tip of branch, or of the default branch when branch is empty.
func remoteHead(ctx context.Context, url, branch string, auth *Auth, opts netOptions) (Head, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(opts.context(ctx), &git.ListOptions{Auth: auth.Method, ProxyOptions: opts.proxy})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return Head{}, stalling(v1alpha1.ReasonBranchNotFound, "repository %s is empty: it has no branches", scrub(url, auth.secrets))
		}
		return Head{}, remoteError(ctx, v1alpha1.ReasonBranchListFailed, "listing the branches of", url, auth, err)
	}
	heads := map[string]string{}
	defaultBranch := ""
	for _, r := range refs {
		switch {
		// Not Short(): it scans the name with fmt's %s, which stops at a Unicode
		// space and mangles invalid UTF-8, so "main\u00a0evil" would pass for main.
		case r.Name().IsBranch():
			heads[strings.TrimPrefix(r.Name().String(), "refs/heads/")] = r.Hash().String()
		case r.Name() == plumbing.HEAD && r.Type() == plumbing.SymbolicReference && r.Target().IsBranch():
			defaultBranch = strings.TrimPrefix(r.Target().String(), "refs/heads/")
		}
	}
	if branch == "" {
		if defaultBranch == "" {
			return Head{}, stalling(v1alpha1.ReasonBranchNotFound,
				"repository %s does not advertise a default branch: set spec.repository.branch", scrub(url, auth.secrets))
		}
		branch = defaultBranch
	}
	commit, ok := heads[branch]
	if !ok {
		return Head{}, stalling(v1alpha1.ReasonBranchNotFound, "branch %q not found in repository %s (branches: %s)",
			branch, scrub(url, auth.secrets), listSome(heads, 10))
	}
	return Head{Branch: branch, Commit: commit}, nil
}

// readFuncYAML clones branch shallowly, single-branch and bare into dir (no work tree
// is written) and returns the commit it got and the content of dir/func.yaml in it.
func readFuncYAML(ctx context.Context, url, branch, dir, fnPath string, auth *Auth, opts netOptions) (string, []byte, *object.Tree, error) {
	b := &budget{limits: opts.limits}
	storage := filesystem.NewStorage(limitedFS{Filesystem: osfs.New(dir), b: b, done: ctx.Done()}, cache.NewObjectLRU(cloneObjectCache))
	repo, err := git.CloneContext(opts.context(ctx), storage, nil, &git.CloneOptions{
		URL:           url,
		Auth:          auth.Method,
		ReferenceName: plumbing.NewBranchReferenceName(branch),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
		ProxyOptions:  opts.proxy,
	})
	if err != nil {
		if over := b.exceeded(); over != nil {
			reason := v1alpha1.ReasonCloneTooLarge
			if b.objects > 0 && opts.limits.MaxFiles > 0 && b.objects > opts.limits.MaxFiles {
				reason = v1alpha1.ReasonCloneTooManyFiles
			}
			return "", nil, nil, stalling(reason, "cloning %s: %s", scrub(url, auth.secrets), over)
		}
		if errors.Is(err, plumbing.ErrReferenceNotFound) || isNoMatchingRef(err) {
			return "", nil, nil, stalling(v1alpha1.ReasonBranchNotFound, "branch %q not found in repository %s", branch, scrub(url, auth.secrets))
		}
		return "", nil, nil, remoteError(ctx, v1alpha1.ReasonGitCloneFailed, "cloning", url, auth, err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return "", nil, nil, transient("reading branch %q of the clone: %s", branch, err)
	}
	commit, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return "", nil, nil, transient("reading commit %s of the clone: %s", ref.Hash(), err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return "", nil, nil, transient("reading the tree of commit %s: %s", ref.Hash(), err)
	}
	fnDir, content, err := fileIn(tree, fnPath, ref.Hash().String())
	return ref.Hash().String(), content, fnDir, err
}

// readOptional returns the regular file name of the function's directory, or false
// when there is none (or it is a link, or larger than a func.yaml may be).
func readOptional(dir *object.Tree, name string) ([]byte, bool) {
	entry, err := dir.FindEntry(name)
	if err != nil || (entry.Mode != filemode.Regular && entry.Mode != filemode.Executable) {
		return nil, false
	}
	f, err := dir.TreeEntryFile(entry)
	if err != nil || f.Size > maxFuncYAMLSize {
		return nil, false
	}
	content, err := f.Contents()
	if err != nil {
		return nil, false
	}
	return []byte(content), true
}

// fileIn returns directory fnPath ("" is the root) of tree and its func.yaml.
func fileIn(tree *object.Tree, fnPath, commit string) (*object.Tree, []byte, error) {
	short := commit
	if len(short) > 12 {
		short = short[:12]
	}
	dir := tree
	if fnPath != "" {
		entry, err := tree.FindEntry(fnPath)
		if err != nil {
			return nil, nil, stalling(v1alpha1.ReasonPathNotFound, "path %q does not exist at commit %s", fnPath, short)
		}
		if entry.Mode != filemode.Dir {
			return nil, nil, stalling(v1alpha1.ReasonPathNotFound, "path %q is not a directory at commit %s", fnPath, short)
		}
		if dir, err = tree.Tree(fnPath); err != nil {
			return nil, nil, stalling(v1alpha1.ReasonPathNotFound, "path %q cannot be read at commit %s: %s", fnPath, short, err)
		}
	}
	where := path.Join(fnPath, funclib.FuncYAML)
	entry, err := dir.FindEntry(funclib.FuncYAML)
	if err != nil {
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlNotFound, "%s does not exist at commit %s: the directory is not a function", where, short)
	}
	switch entry.Mode {
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
	case filemode.Symlink:
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlInvalid, "%s is a symbolic link at commit %s: it must be a regular file", where, short)
	default:
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlNotFound, "%s is not a file at commit %s", where, short)
	}
	f, err := dir.TreeEntryFile(entry)
	if err != nil {
		return nil, nil, transient("reading %s at commit %s: %s", where, short, err)
	}
	if f.Size > maxFuncYAMLSize {
		return nil, nil, stalling(v1alpha1.ReasonFuncYamlInvalid, "%s is %d bytes at commit %s: more than the %d a func.yaml may have",
			where, f.Size, short, maxFuncYAMLSize)
	}
	r, err := f.Reader()
	if err != nil {
		return nil, nil, transient("reading %s at commit %s: %s", where, short, err)
	}
	defer func() { _ = r.Close() }()
	content, err := io.ReadAll(io.LimitReader(r, maxFuncYAMLSize+1))
	if err != nil {
		return nil, nil, transient("reading %s at commit %s: %s", where, short, err)
	}
	return dir, content, nil
}

// remoteError turns a go-git transport error into an error with reason (what failed:
// BranchListFailed or GitCloneFailed) that carries the real git message, without
// credentials.
func remoteError(ctx context.Context, reason, doing, url string, auth *Auth, err error) error {
	u := scrub(url, auth.secrets)
	if netguard.IsDenied(err) {
		return stalling(v1alpha1.ReasonHostNotAllowed, "%s %s: %s", doing, u, firstLine(scrub(netguard.DeniedText(err), auth.secrets)))
	}
	if netguard.IsTooLarge(err) {
		return stalling(v1alpha1.ReasonCloneTooLarge, "%s %s: %s: the server sent more than the operator reads (a branch listing: %d MiB; a clone: ConfigMap key cloneMaxBytes)",
			doing, u, netguard.TooLargeMarker, maxListing>>20)
	}
	// Servers put their own text into errors, newlines and all: keep one line.
	msg := strings.TrimSuffix(strings.Join(strings.Fields(scrub(err.Error(), auth.secrets)), " "), ":")
	msg = netguard.ServerText(msg)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || isTimeout(err):
		return transientAs(v1alpha1.ReasonGitTimedOut, "%s %s timed out (ConfigMap key gitTimeout): %s", doing, u, msg)
	case errors.Is(err, transport.ErrAuthenticationRequired) && auth.Method == nil:
		return stalling(reason,
			"%s %s: %s: the repository is private, set spec.repository.authSecretRef", doing, u, msg)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return stalling(reason,
			"%s %s: %s: the credentials in spec.repository.authSecretRef were refused", doing, u, msg)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return stalling(reason, "%s %s: %s", doing, u, msg)
	case strings.Contains(msg, "knownhosts:") || strings.Contains(msg, "host key"):
		return stalling(reason,
			"%s %s: %s: the server's host key does not match key %q of the auth Secret", doing, u, msg, KeyKnownHosts)
	case strings.Contains(msg, "unable to authenticate"):
		return stalling(reason,
			"%s %s: %s: the SSH key in spec.repository.authSecretRef was refused", doing, u, msg)
	default:
		return transientAs(reason, "%s %s: %s", doing, u, msg)
	}
}

func isNoMatchingRef(err error) bool {
	var e git.NoMatchingRefSpecError
	return errors.As(err, &e) || strings.Contains(err.Error(), "couldn't find remote ref")
}

func listSome(m map[string]string, n int) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

// timeoutContext bounds one remote operation.
func timeoutContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// isTimeout is true for a connection's deadline passing (the guard's SSH
// deadline, which may fire a moment before the operation's context does).
func isTimeout(err error) bool {
	var ne net.Error
	return (errors.As(err, &ne) && ne.Timeout()) || strings.Contains(err.Error(), "i/o timeout")
}
