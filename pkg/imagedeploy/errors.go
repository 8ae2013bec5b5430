package imagedeploy

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fnops/func-operator/pkg/tenancy"
)

// ForbiddenError is a deploy the API server refused for want of a grant: the operator
// may not impersonate the build ServiceAccount in the namespace (Impersonation: the
// namespace has not onboarded it, or took the grant back), or that ServiceAccount may
// not read or update the object. Its text names the grant and how to give it; it holds
// no object content.
type ForbiddenError struct {
	Namespace      string
	ServiceAccount string
	// Impersonation is true when the operator may not act as ServiceAccount (ClusterRole
	// func-operator-namespace), false when ServiceAccount may not do Grant (ClusterRole
	// func-operator-builder).
	Impersonation bool
	// Grant is the right refused.
	Grant tenancy.Grant
	// Err is the API server's answer (apierrors.IsForbidden).
	Err error
}

func (e *ForbiddenError) Error() string { return e.notOnboarded().Error() }

// Unwrap gives the chain a *tenancy.NotOnboardedError (tenancy.IsNotOnboarded), as
// the access check reports a namespace that lacks a grant, and the API server's answer.
func (e *ForbiddenError) Unwrap() []error { return []error{e.notOnboarded(), e.Err} }

func (e *ForbiddenError) notOnboarded() *tenancy.NotOnboardedError {
	who, role := "the operator", tenancy.NamespaceClusterRole
	if !e.Impersonation {
		who, role = "the build ServiceAccount "+e.ServiceAccount, tenancy.BuilderClusterRole
	}
	return &tenancy.NotOnboardedError{Namespace: e.Namespace, What: fmt.Sprintf(
		"namespace %s does not let func-operator deploy an image as its build ServiceAccount %s: %s may not %s (ClusterRole %s, RoleBinding %s)",
		e.Namespace, e.ServiceAccount, who, e.Grant, role, role)}
}

// IsForbidden reports whether err's chain holds a *ForbiddenError.
func IsForbidden(err error) bool {
	var f *ForbiddenError
	return errors.As(err, &f)
}

// refused is err, the API server's answer to verb on gvr as ServiceAccount
// serviceAccount of namespace, as a *ForbiddenError when RBAC refused the
// impersonation or that request; any other error (an admission policy's refusal
// included) unchanged.
func refused(err error, namespace, serviceAccount string, gvr schema.GroupVersionResource, verb string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return err
	}
	// The API server's impersonation filter refuses before any handler, naming the
	// ServiceAccount it was asked to act as; the authorizer names the resource of the
	// request. Both say who "cannot <verb> resource" (the API server's
	// responsewriters.Forbidden); an admission policy's or webhook's refusal of the
	// same request is a 403 too, and is not a missing grant.
	d, msg := status.Status().Details, status.Status().Message
	switch {
	case d.Group == "" && d.Kind == "serviceaccounts" && d.Name == serviceAccount &&
		strings.Contains(msg, `cannot impersonate resource "serviceaccounts"`):
		return &ForbiddenError{Namespace: namespace, ServiceAccount: serviceAccount, Impersonation: true,
			Grant: tenancy.ImpersonateGrant(serviceAccount), Err: err}
	case d.Group == gvr.Group && d.Kind == gvr.Resource &&
		strings.Contains(msg, fmt.Sprintf("User %q cannot %s resource %q", ServiceAccountUser(namespace, serviceAccount), verb, gvr.Resource)):
		return &ForbiddenError{Namespace: namespace, ServiceAccount: serviceAccount,
			Grant: tenancy.Grant{Group: gvr.Group, Resource: gvr.Resource, Verb: verb}, Err: err}
	}
	return err
}
