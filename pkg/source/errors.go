package source

import (
	"errors"
	"fmt"
)

// Error is a failure to read a function's source, with the SourceReady reason it
// maps to and whether retrying soon can help.
type Error struct {
	// Reason is the SourceReady condition reason.
	Reason string
	// Message is for users; it never holds credentials.
	Message string
	// Stalling is true when only a change of the Function, its Secret or its
	// repository can fix the failure: retrying soon cannot.
	Stalling bool
}

func (e *Error) Error() string { return e.Reason + ": " + e.Message }

// NewStallingError returns an Error that retrying soon cannot fix.
func NewStallingError(reason, format string, a ...interface{}) *Error {
	return stalling(reason, format, a...)
}

func stalling(reason, format string, a ...interface{}) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, a...), Stalling: true}
}

func transient(reason, format string, a ...interface{}) *Error {
	return &Error{Reason: reason, Message: fmt.Sprintf(format, a...)}
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
