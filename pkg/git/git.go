package git

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
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/funclib/funcyaml"
	"github.com/fnops/func-operator/pkg/netguard"
	"github.com/fnops/func-operator/pkg/rerror"
)

// maxFuncYAMLSize bounds what is read of a func.yaml.
const maxFuncYAMLSize = 1 << 20

// remoteListing asks the remote for its references, one round trip (what `git
// ls-remote` does).
func remoteListing(ctx context.Context, url string, auth *Auth, opts netOptions, now time.Time) (*Listing, error) {
	remote := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(opts.context(ctx), &gogit.ListOptions{Auth: auth.Method, CABundle: auth.CABundle, ProxyOptions: opts.proxy, PeelingOption: gogit.AppendPeeled})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return nil, repositoryStalling(v1alpha1.ReasonBranchNotFound, "repository %s is empty: it has no branches", scrub(url, auth.secrets))
		}
		return nil, remoteError(ctx, v1alpha1.ReasonBranchListFailed, "listing the branches of", url, auth, err)
	}
	return newListing(refs, now), nil
}

// shallowFetch fetches the last depth commits of head (no tags, no work tree) into
// dir, within opts' limits.
func shallowFetch(ctx context.Context, url string, head Head, depth int, dir string, auth *Auth, opts netOptions) (*gogit.Repository, error) {
	b := &budget{limits: opts.limits}
	storage := filesystem.NewStorage(limitedFS{Filesystem: osfs.New(dir), b: b, done: ctx.Done()}, cache.NewObjectLRU(cloneObjectCache))
	repo, err := fetchHead(opts.context(ctx), storage, url, head, depth, auth, opts)
	if err == nil {
		return repo, nil
	}
	if over := b.exceeded(); over != nil {
		reason := v1alpha1.ReasonCloneTooLarge
		if b.objects > 0 && opts.limits.MaxFiles > 0 && b.objects > opts.limits.MaxFiles {
			reason = v1alpha1.ReasonCloneTooManyFiles
		}
		return nil, stalling(reason, "cloning %s: %s", scrub(url, auth.secrets), over)
	}
	switch {
	case head.fixed() && errors.Is(err, gogit.ErrExactSHA1NotSupported):
		return nil, repositoryStalling(v1alpha1.ReasonCommitNotFound,
			"commit %s of repository %s is not the tip of a branch or tag, and the server does not allow fetching a commit by its id (git config uploadpack.allowReachableSHA1InWant)",
			head.Commit, scrub(url, auth.secrets))
	case head.fixed() && isNotOurRef(err):
		return nil, repositoryStalling(v1alpha1.ReasonCommitNotFound, "commit %s not found in repository %s", head.Commit, scrub(url, auth.secrets))
	case errors.Is(err, plumbing.ErrReferenceNotFound) || isNoMatchingRef(err):
		return nil, repositoryStalling(notFoundReason(head), "%s not found in repository %s", refText(head), scrub(url, auth.secrets))
	}
	return nil, remoteError(ctx, v1alpha1.ReasonGitCloneFailed, "cloning", url, auth, err)
}

// readCommit returns the commit hash of repo and the content of func.yaml in its
// directory fnPath, with that directory.
func readCommit(repo *gogit.Repository, hash plumbing.Hash, head Head, fnPath, url string, auth *Auth) (string, []byte, *object.Tree, error) {
	commit, err := repo.CommitObject(hash)
	if err != nil {
		if head.fixed() {
			return "", nil, nil, repositoryStalling(v1alpha1.ReasonCommitNotFound, "%s of repository %s is not a commit", refText(head), scrub(url, auth.secrets))
		}
		return "", nil, nil, transient("reading commit %s of the clone: %s", hash, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return "", nil, nil, transient("reading the tree of commit %s: %s", hash, err)
	}
	fnDir, content, err := fileIn(tree, fnPath, hash.String())
	return hash.String(), content, fnDir, err
}

// fixedRef is where a commit fetched by its id is kept in the clone.
const fixedRef = "refs/heads/func-operator-fixed"

// fetchHead fetches the last depth commits of what head names into storage: the tip
// of a branch or tag, or a commit by its id (via the ref whose tip it is, when there
// is one).
func fetchHead(ctx context.Context, storage *filesystem.Storage, url string, head Head, depth int, auth *Auth, opts netOptions) (*gogit.Repository, error) {
	if ref := head.fetchRef(); ref != "" {
		return gogit.CloneContext(ctx, storage, nil, &gogit.CloneOptions{
			URL:           url,
			Auth:          auth.Method,
			CABundle:      auth.CABundle,
			ReferenceName: plumbing.ReferenceName(ref),
			SingleBranch:  true,
			Depth:         depth,
			Tags:          gogit.NoTags,
			ProxyOptions:  opts.proxy,
		})
	}
	repo, err := gogit.Init(storage, nil)
	if err != nil {
		return nil, transient("initializing the clone: %s", err)
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
	if err != nil {
		return nil, transient("initializing the clone: %s", err)
	}
	err = remote.FetchContext(ctx, &gogit.FetchOptions{
		RefSpecs:     []config.RefSpec{config.RefSpec(head.Commit + ":" + fixedRef)},
		Auth:         auth.Method,
		CABundle:     auth.CABundle,
		Depth:        depth,
		Tags:         gogit.NoTags,
		ProxyOptions: opts.proxy,
	})
	return repo, err
}

// fetchedCommit is the commit a fetch of head got, tags peeled.
func fetchedCommit(repo *gogit.Repository, head Head) (plumbing.Hash, error) {
	name := head.fetchRef()
	if name == "" {
		return plumbing.NewHash(head.Commit), nil
	}
	ref, err := repo.Reference(plumbing.ReferenceName(name), true)
	if err != nil {
		return plumbing.ZeroHash, transient("reading %s of the clone: %s", name, err)
	}
	hash := ref.Hash()
	if tag, err := repo.TagObject(hash); err == nil {
		c, err := tag.Commit()
		if err != nil {
			return plumbing.ZeroHash, repositoryStalling(v1alpha1.ReasonTagNotFound, "tag %s does not point at a commit", name)
		}
		hash = c.Hash
	}
	if head.fixed() && hash.String() != head.Commit {
		// The ref moved since the listing: the next check fetches the commit by its id.
		return plumbing.ZeroHash, transient("%s moved away from commit %s during the clone", name, head.Commit)
	}
	return hash, nil
}

// notFoundReason is the reason for head's reference missing from the remote.
func notFoundReason(head Head) string {
	switch {
	case head.fixed():
		return v1alpha1.ReasonCommitNotFound
	case strings.HasPrefix(head.Ref, "refs/tags/"):
		return v1alpha1.ReasonTagNotFound
	}
	return v1alpha1.ReasonBranchNotFound
}

// refText names head in messages.
func refText(head Head) string {
	switch {
	case head.fixed():
		return "commit " + head.Commit
	case strings.HasPrefix(head.Ref, "refs/tags/"):
		return fmt.Sprintf("tag %q", strings.TrimPrefix(head.Ref, "refs/tags/"))
	}
	return fmt.Sprintf("branch %q", strings.TrimPrefix(head.fetchRef(), "refs/heads/"))
}

// isNotOurRef is true for a server refusing a want it does not hold.
func isNotOurRef(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "not our ref") || strings.Contains(msg, "object not found") || errors.Is(err, plumbing.ErrObjectNotFound)
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
	where := path.Join(fnPath, funcyaml.FuncYAML)
	entry, err := dir.FindEntry(funcyaml.FuncYAML)
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
		return repositoryStalling(v1alpha1.ReasonHostNotAllowed, "%s %s: %s", doing, u, firstLine(scrub(netguard.DeniedText(err), auth.secrets)))
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
		return timedOut("%s %s timed out (ConfigMap key gitTimeout): %s", doing, u, msg)
	case untrusted(err):
		return repositoryStalling(reason, "%s %s: %s: put the PEM certificate of the CA that signed it under key %q of the Secret named by spec.repository.authSecretRef",
			doing, u, msg, KeyCACert)
	case errors.Is(err, transport.ErrAuthenticationRequired) && auth.Method == nil:
		return repositoryStalling(reason,
			"%s %s: %s: the repository is private, set spec.repository.authSecretRef", doing, u, msg)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return repositoryStalling(reason,
			"%s %s: %s: the credentials in spec.repository.authSecretRef were refused", doing, u, msg)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return repositoryStalling(reason, "%s %s: %s", doing, u, msg)
	case strings.Contains(msg, "knownhosts:") || strings.Contains(msg, "host key"):
		return repositoryStalling(reason,
			"%s %s: %s: the server's host key does not match key %q of the auth Secret", doing, u, msg, KeyKnownHosts)
	case strings.Contains(msg, "unable to authenticate"):
		return repositoryStalling(reason,
			"%s %s: %s: the SSH key in spec.repository.authSecretRef was refused", doing, u, msg)
	default:
		return rerror.NewTransient(reason, "%s %s: %s", doing, u, msg)
	}
}

// untrusted is true for a server certificate no trusted CA signed: the operator's
// roots and the Secret's ca.crt. An expired certificate or one for another name is
// not: it may be a passing misconfiguration of the host.
func untrusted(err error) bool {
	why, ok := netguard.UntrustedCertificate(err)
	return ok && strings.Contains(why, "authority the operator does not trust")
}

func isNoMatchingRef(err error) bool {
	var e gogit.NoMatchingRefSpecError
	return errors.As(err, &e) || strings.Contains(err.Error(), "couldn't find remote ref")
}

func listSome(m map[string]string) string {
	const n = 10
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
