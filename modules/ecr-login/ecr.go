// Package ecr replaces github.com/awslabs/amazon-ecr-credential-helper/ecr-login for
// func-operator's build of knative.dev/func v0.50.1, which requires a pseudo-version of
// that module the Go module proxy here does not serve. It declares the part of the
// module's API func calls (pkg/k8s/keychains.go: NewECRHelper, WithLogger, WithContext,
// and the credentials-helper methods) and is written for the operator, not copied.
//
// It never talks to AWS: every lookup answers "credentials not found", the answer
// func's ECR credential loader turns into creds.ErrCredentialsNotFound, which makes
// func try its next loader. No operator path reaches it: the operator gives func's
// pipelines provider its own credentials (the Function's registry Secret), and a
// test (pkg/funclib TestECRLoginReplacement) checks both the answer and that the
// operator's binary links none of this package's lookups. Drop it, with the replace
// in the operator's go.mod, once the proxy serves the version func requires.
package ecr

import (
	"context"
	"errors"
	"io"

	"github.com/docker/docker-credential-helpers/credentials"
)

// ErrNotSupported is what Add and Delete return: this helper stores nothing.
var ErrNotSupported = errors.New("ecr-login (func-operator's replacement): storing credentials is not supported")

// Option configures an ECRHelper.
type Option func(*ECRHelper)

// WithLogger sets where the helper would log. It logs nothing.
func WithLogger(w io.Writer) Option { return func(h *ECRHelper) { h.logger = w } }

// WithContext sets the context of the helper's lookups.
func WithContext(ctx context.Context) Option { return func(h *ECRHelper) { h.ctx = ctx } }

// ECRHelper is a docker credentials helper that knows no credentials.
type ECRHelper struct {
	ctx    context.Context
	logger io.Writer
}

var _ credentials.Helper = (*ECRHelper)(nil)

// NewECRHelper returns a helper configured by opts.
func NewECRHelper(opts ...Option) *ECRHelper {
	h := &ECRHelper{ctx: context.Background(), logger: io.Discard}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Add stores nothing.
func (*ECRHelper) Add(*credentials.Credentials) error { return ErrNotSupported }

// Delete deletes nothing.
func (*ECRHelper) Delete(string) error { return ErrNotSupported }

// Get answers credentials-not-found for every server, or the context's error once it ended.
func (h *ECRHelper) Get(string) (string, string, error) {
	if err := h.ctx.Err(); err != nil {
		return "", "", err
	}
	return "", "", credentials.NewErrCredentialsNotFound()
}

// List lists no credentials.
func (*ECRHelper) List() (map[string]string, error) { return map[string]string{}, nil }
