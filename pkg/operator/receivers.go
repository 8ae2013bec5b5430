package operator

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/pkg/receiver"
	"github.com/fnops/func-operator/pkg/reconciler/function"
	"github.com/fnops/func-operator/pkg/repourl"
)

// addWebhooks serves the push webhook receivers on o.WebhookAddr, unless disabled: a
// verified push has every Function of the receiver's namespace on the pushed
// repository checked at once, with a listing begun after the push.
func addWebhooks(mgr manager.Manager, o Options, repositories *function.Repositories, wakeups *function.Wakeups, fetcher *git.Fetcher) error {
	if o.WebhookAddr == "" || o.WebhookAddr == "0" {
		return nil
	}
	reader := mgr.GetAPIReader()
	hook := receiver.New(receiver.Options{
		Addr: o.WebhookAddr,
		// Straight from the API server, as every Secret the operator reads: none is
		// kept in a cache. Forbidden (a namespace not onboarded) is answered 404.
		Secrets: func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
			s := &corev1.Secret{}
			err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s)
			switch {
			case apierrors.IsNotFound(err):
				return nil, nil
			case err != nil:
				return nil, err
			}
			return s, nil
		},
		Trigger: receiver.TriggerFunc(func(ctx context.Context, namespace string, urls []string) int {
			return repositoryPushed(repositories, wakeups, fetcher, namespace, urls)
		}),
	})
	if err := register(hook.Collectors()); err != nil {
		return err
	}
	if err := mgr.Add(hook); err != nil {
		return fmt.Errorf("adding the webhook receiver: %w", err)
	}
	return nil
}

// repositoryPushed checks at once the Functions of namespace on a pushed repository,
// each with a listing begun after the push. The listing kept for the other
// namespaces' Functions stays theirs to share: a push is a hint from one tenant, and
// never makes another tenant's Functions list the repository again. The new listing
// is kept (it is the latest), so when it shows a change every Function on the
// repository is checked at once with it, without listing again.
func repositoryPushed(repositories *function.Repositories, wakeups *function.Wakeups, fetcher *git.Fetcher, namespace string, urls []string) int {
	fns := repositories.Pushed(namespace, repourl.Matcher(urls), fetcher.ListingMark())
	for _, fn := range fns {
		wakeups.Enqueue(fn)
	}
	return len(fns)
}
