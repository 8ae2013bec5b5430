package git

import (
	"errors"

	"github.com/fnops/func-operator/pkg/rerror"
)

// classified is what the tests compare of a failure to read the source.
type classified struct {
	Reason   string
	Message  string
	Stalling bool
}

// asClassified returns what err says when it is a stalling or transient error of the
// rerror package; false for any other error.
func asClassified(err error) (*classified, bool) {
	var s *rerror.Stalling
	var tr *rerror.Transient
	switch {
	case errors.As(err, &s):
		return &classified{Reason: s.Reason, Message: err.Error(), Stalling: true}, true
	case errors.As(err, &tr):
		return &classified{Reason: tr.Reason, Message: err.Error()}, true
	}
	return nil, false
}
