package rerror

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels for errors.Is: errors.Is(err, ErrStalling) is true when err's chain holds
// a *Stalling, and likewise for the others.
var (
	ErrStalling  = errors.New("stalling")
	ErrWaiting   = errors.New("waiting")
	ErrTransient = errors.New("transient")
)

// Stalling stops a reconcile that only a change can fix: of the Function, a Secret it
// names, its repository, its image or the cluster. Retrying soon cannot help, so the
// Function is marked Stalled and checked again at its check interval, or when a
// watched object changes.
type Stalling struct {
	// Reason is the condition reason users see: what is wrong, in one CamelCase word.
	Reason string
	// Err is the cause. Its text is the condition message: it never holds a Secret value.
	Err error
	// RecheckAfter, when not zero, brings the Function back this soon: for a change
	// that no watch sees (an RBAC grant).
	RecheckAfter time.Duration
}

func (e *Stalling) Error() string        { return e.Err.Error() }
func (e *Stalling) Unwrap() error        { return e.Err }
func (e *Stalling) Is(target error) bool { return target == ErrStalling }

// Waiting stops a reconcile in a normal state that ends by itself, such as a function
// not deployed yet: nothing failed. The reconcile ends without an error and comes
// back after RequeueAfter (zero: the check interval) or when a watched object changes.
type Waiting struct {
	// Reason is the condition reason users see.
	Reason string
	// Err says what is awaited.
	Err error
	// RequeueAfter brings the Function back sooner than its check interval, when not zero.
	RequeueAfter time.Duration
}

func (e *Waiting) Error() string        { return e.Err.Error() }
func (e *Waiting) Unwrap() error        { return e.Err }
func (e *Waiting) Is(target error) bool { return target == ErrWaiting }

// Transient stops a reconcile on a failure that retrying may fix, such as an
// unreachable git host or registry: it is retried with backoff. An error that is none
// of the three kinds counts as transient.
type Transient struct {
	// Reason is the condition reason users see.
	Reason string
	// Err is the cause.
	Err error
}

func (e *Transient) Error() string        { return e.Err.Error() }
func (e *Transient) Unwrap() error        { return e.Err }
func (e *Transient) Is(target error) bool { return target == ErrTransient }

// NewStalling returns a Stalling error whose cause is fmt.Errorf(format, a...): wrap a
// cause with %w.
func NewStalling(reason, format string, a ...any) *Stalling {
	return &Stalling{Reason: reason, Err: fmt.Errorf(format, a...)}
}

// NewWaiting returns a Waiting error that comes back after requeueAfter (zero: the
// check interval).
func NewWaiting(reason string, requeueAfter time.Duration, format string, a ...any) *Waiting {
	return &Waiting{Reason: reason, Err: fmt.Errorf(format, a...), RequeueAfter: requeueAfter}
}

// NewTransient returns a Transient error whose cause is fmt.Errorf(format, a...).
func NewTransient(reason, format string, a ...any) *Transient {
	return &Transient{Reason: reason, Err: fmt.Errorf(format, a...)}
}

// Reason returns the reason of the outermost classified error in err's tree (depth
// first, as errors.As walks it), or "" when err is nil or unclassified.
func Reason(err error) string {
	switch e := err.(type) {
	case nil:
		return ""
	case *Stalling:
		return e.Reason
	case *Waiting:
		return e.Reason
	case *Transient:
		return e.Reason
	case interface{ Unwrap() error }:
		return Reason(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if r := Reason(inner); r != "" {
				return r
			}
		}
	}
	return ""
}

// IsStalling reports whether err's chain holds a Stalling error.
func IsStalling(err error) bool { return errors.Is(err, ErrStalling) }

// IsWaiting reports whether err's chain holds a Waiting error.
func IsWaiting(err error) bool { return errors.Is(err, ErrWaiting) }

// IsTransient reports whether err is (or wraps) a Transient error.
func IsTransient(err error) bool { return errors.Is(err, ErrTransient) }
