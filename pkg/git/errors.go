package git

import (
	"errors"
	"fmt"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
)

// stalling returns a failure to read the source that only a change of the Function,
// its Secret or its repository can fix. reason is the SourceReady reason.
func stalling(reason, format string, a ...any) error {
	return rerror.NewStalling(reason, format, a...)
}

// repositoryError is the cause of a stalling failure of the repository rather than of
// a commit: its URL, the host policy, its certificate or the credentials refused, or a
// branch, tag or commit not found in it. What it says depends on the network and on
// the caller's credentials, so the clone cache, shared by every caller, never keeps it
// (cacheable); a failure of what a commit holds (its func.yaml, the function's path,
// the clone limits) is kept with the commit. Its text is the message as is.
type repositoryError struct{ err error }

func (e *repositoryError) Error() string { return e.err.Error() }
func (e *repositoryError) Unwrap() error { return e.err }

// repositoryStalling is stalling for a failure of the repository (repositoryError).
func repositoryStalling(reason, format string, a ...any) error {
	return &rerror.Stalling{Reason: reason, Err: &repositoryError{err: fmt.Errorf(format, a...)}}
}

// transient returns a failure to read the source that retrying may fix: reaching or
// reading the repository failed. Its SourceReady reason is GitCloneFailed.
func transient(format string, a ...any) error {
	return rerror.NewTransient(v1alpha1.ReasonGitCloneFailed, format, a...)
}

// TimeoutError is a git operation that did not finish within its deadline (ConfigMap
// key gitTimeout, or a connection's). Callers tell it with IsTimeout, never by the
// reason users see (GitTimedOut).
type TimeoutError struct{ msg string }

func (e *TimeoutError) Error() string { return e.msg }

// IsTimeout reports whether err's chain holds a TimeoutError.
func IsTimeout(err error) bool {
	var t *TimeoutError
	return errors.As(err, &t)
}

// timedOut is the transient failure of a git operation that ran out of time.
func timedOut(format string, a ...any) error {
	return &rerror.Transient{Reason: v1alpha1.ReasonGitTimedOut, Err: &TimeoutError{msg: fmt.Sprintf(format, a...)}}
}
