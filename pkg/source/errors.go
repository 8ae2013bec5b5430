package source

import (
	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// stalling returns a failure to read the source that only a change of the Function,
// its Secret or its repository can fix. reason is the SourceReady reason.
func stalling(reason, format string, a ...any) error {
	return rerror.NewStalling(reason, format, a...)
}

// transient returns a failure to read the source that retrying may fix: reaching or
// reading the repository failed. Its SourceReady reason is GitCloneFailed.
func transient(format string, a ...any) error {
	return rerror.NewTransient(v1alpha1.ReasonGitCloneFailed, format, a...)
}

// transientAs is transient with the reason given.
func transientAs(reason, format string, a ...any) error {
	return rerror.NewTransient(reason, format, a...)
}
