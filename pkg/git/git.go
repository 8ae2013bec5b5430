package git

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/fnops/func-operator/api/v1alpha1"
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
	var b *budget
	repo, err := againAfterCloseRace(ctx, dir, opts.retried, func() (*gogit.Repository, error) {
		b = &budget{limits: opts.limits}
		storage := filesystem.NewStorageWithOptions(limitedFS{Filesystem: osfs.New(dir), b: b, done: ctx.Done()}, cache.NewObjectLRU(cloneObjectCache),
			filesystem.Options{LargeObjectThreshold: cloneStreamedObject})
		return fetchHead(opts.context(ctx), storage, url, head, depth, auth, opts)
	})
	if err == nil {
		return repo, nil
	}
	return nil, fetchError(ctx, url, head, auth, opts, b, err)
}

// errCloseRace is what go-git v5 returns for its close race (see againAfterCloseRace).
const errCloseRace = "closing input: EOF"

// againAfterCloseRace runs fetch, and once more, into dir emptied, when go-git failed
// an SSH exchange the server had completed: go-git v5 closes its input after sending
// its last request, and when the server has already sent the pack and closed the
// channel, that close fails ("closing input: EOF") and the pack is dropped
// (go-git/go-git#1685, fixed in v6). The more loaded the operator, the more often:
// 2 of about 40 SSH fetches of make test's quick tier beside a cold run's builds.
// retried counts the second fetches.
func againAfterCloseRace(ctx context.Context, dir string, retried *atomic.Int64, fetch func() (*gogit.Repository, error)) (*gogit.Repository, error) {
	repo, err := fetch()
	// go-git's own error, whole, before it is classified: no text a server sent makes it.
	if err == nil || ctx.Err() != nil || err.Error() != errCloseRace {
		return repo, err
	}
	if rmErr := os.RemoveAll(dir); rmErr != nil {
		return nil, err
	}
	if rmErr := os.Mkdir(dir, 0o700); rmErr != nil {
		return nil, err
	}
	if retried != nil {
		retried.Add(1)
	}
	return fetch()
}

// fetchError classifies err, what go-git's fetch within budget b returned.
func fetchError(ctx context.Context, url string, head Head, auth *Auth, opts netOptions, b *budget, err error) error {
	if over := b.exceeded(); over != nil {
		reason := v1alpha1.ReasonCloneTooLarge
		if b.objects > 0 && opts.limits.MaxFiles > 0 && b.objects > opts.limits.MaxFiles {
			reason = v1alpha1.ReasonCloneTooManyFiles
		}
		return stalling(reason, "cloning %s: %s", scrub(url, auth.secrets), over)
	}
	switch {
	case head.fixed() && errors.Is(err, gogit.ErrExactSHA1NotSupported):
		return repositoryStalling(v1alpha1.ReasonCommitNotFound,
			"commit %s of repository %s is not the tip of a branch or tag, and the server does not allow fetching a commit by its id (git config uploadpack.allowReachableSHA1InWant)",
			head.Commit, scrub(url, auth.secrets))
	case head.fixed() && isNotOurRef(err):
		return repositoryStalling(v1alpha1.ReasonCommitNotFound, "commit %s not found in repository %s", head.Commit, scrub(url, auth.secrets))
	case errors.Is(err, plumbing.ErrReferenceNotFound) || isNoMatchingRef(err):
		return repositoryStalling(notFoundReason(head), "%s not found in repository %s", refText(head), scrub(url, auth.secrets))
	}
	return remoteError(ctx, v1alpha1.ReasonGitCloneFailed, "cloning", url, auth, err)
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
