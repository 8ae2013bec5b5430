package registry

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// accessPerResult is how many callers' access records an Inspector keeps per
// cached result: the Functions of many namespaces, each with credentials of its
// own, may run one image. An access record evicted costs its caller one HEAD.
const accessPerResult = 16

// newCredKey draws the key of the HMAC that names credentials.
func newCredKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("registry: no randomness for the credentials key: " + err.Error())
	}
	return k
}

// credID names credentials by content (an HMAC with the Inspector's random key),
// so that two Secrets with the same credentials count as one identity, and no
// credential, nor a hash an offline guess could be checked against, is kept.
func (i *Inspector) credID(cfg *authn.AuthConfig) string {
	mac := hmac.New(sha256.New, i.credKey)
	_ = json.NewEncoder(mac).Encode(cfg)
	return hex.EncodeToString(mac.Sum(nil))
}

// contentKey names the image of digest d in repo, as read through CA bundle ca
// (a tenant's CA may vouch for a server of its own under a registry's name):
// what a result is cached under.
func contentKey(repo name.Repository, d v1.Hash, ca []byte) string {
	return repo.Scheme() + "://" + repo.String() + "@" + d.String() + " " + caKey(ca)
}

// accessKey names the access of the credentials identified by cred to the image ck.
func accessKey(ck, cred string) string { return ck + " " + cred }

func (i *Inspector) accessShown(ak string) bool {
	_, ok := i.access.Get(ak)
	return ok
}

// showAccess asks the registry whether the caller's credentials (those of p) may
// read manifest top of repo, before a result cached for another caller is served:
// a HEAD by digest, whose answer go-containerregistry checks names that digest;
// when HEAD fails for another reason than auth or reachability (some registries
// do not answer HEAD properly), a GET by digest, which it verifies. The registry
// that holds the image is the judge: the result was read from this repository,
// through the same CA bundle (contentKey).
func (i *Inspector) showAccess(ctx context.Context, p *remote.Puller, repo name.Repository, top v1.Hash, ec *errContext) error {
	i.accessChecks.Add(1)
	ref := repo.Digest(top.String())
	what := "manifest " + top.String()
	_, err := p.Head(ctx, ref)
	if err == nil {
		return nil
	}
	switch e := ec.classify(err, ReasonBadManifest, what).(type) {
	case *AuthError, *UnreachableError:
		return e
	case *InspectError:
		if e.Reason == ReasonNotFound || e.Reason == ReasonHostNotAllowed {
			return e
		}
	}
	if _, err := p.Get(ctx, ref); err != nil {
		return ec.classify(err, ReasonBadManifest, what)
	}
	return nil
}
