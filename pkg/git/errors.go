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
