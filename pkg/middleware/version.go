package middleware

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/semver"
)

// Comparison is the outcome of comparing the middleware version a function runs
// with the one a rebuild would bring.
type Comparison string

const (
	UpToDate Comparison = "UpToDate" // current >= available
	Outdated Comparison = "Outdated" // current < available
	Unknown  Comparison = "Unknown"  // current unknown
)

// rangeOperators are the range prefixes Normalize reduces to their base version,
// longest first so that ">=" is not read as ">" and "=". They are the operators
// whose range starts at (and includes) the version they name: npm's ^ ~ >= =,
// PEP 440's == === ~= >=. Operators whose range excludes or ends at the version
// (<, <=, >, !=) have no base version and are rejected.
var rangeOperators = []string{"===", "==", "~=", ">=", "^", "~", "="}

// Compare compares versions as semantic versions. It accepts a leading "v", npm/maven style
// ranges reduced to their base version ("^2.4.0", "~1.2.3", ">=1.0.0" → the version), and
// two-part versions ("3.17" → 3.17.0). An older available never counts as an update
// (current newer than available → UpToDate). Pre-releases order below their release (semver rules).
// current == "" → Unknown, nil error. An unparsable current or available → Unknown and an error saying which and why.
// Both must be versions of one module: Compare knows no module names, so a version of
// another module (python's legacy parliament-functions against func-python, see
// funclib.LegacyMiddlewareError) must not be passed to it.
func Compare(current, available string) (Comparison, error) {
	if current == "" {
		return Unknown, nil
	}
	cur, curErr := Normalize(current)
	if curErr != nil {
		curErr = fmt.Errorf("current version: %w", curErr)
	}
	avail, availErr := Normalize(available)
	if availErr != nil {
		availErr = fmt.Errorf("available version: %w", availErr)
	}
	if err := errors.Join(curErr, availErr); err != nil {
		return Unknown, err
	}
	if semver.Compare(cur, avail) < 0 {
		return Outdated, nil
	}
	return UpToDate, nil
}

// Normalize returns the canonical semver ("v1.2.3", "v1.2.3-rc.1") or an error.
//
// It accepts what Compare accepts: an optional leading "v", a range operator
// reduced to its base version ("^2.4.0" → "v2.4.0"), and the shorthands "1" and
// "1.2" for "1.0.0" and "1.2.0". Build metadata is dropped ("1.2.3+abc" → "v1.2.3").
func Normalize(v string) (string, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return "", fmt.Errorf("%q: empty version", v)
	}
	for _, op := range rangeOperators {
		if rest, ok := strings.CutPrefix(s, op); ok {
			s = strings.TrimSpace(rest)
			break
		}
	}
	if s == "" {
		return "", fmt.Errorf("%q: range without a version", v)
	}
	if strings.ContainsAny(s, " \t|,<>[]()") {
		return "", fmt.Errorf("%q: not a single version or a range with one base version", v)
	}
	if !strings.HasPrefix(s, "v") {
		s = "v" + s
	}
	if !semver.IsValid(s) {
		return "", fmt.Errorf("%q: not a semantic version (want MAJOR[.MINOR[.PATCH[-PRERELEASE][+BUILD]]], optionally with a leading v or a ^ ~ >= = range operator)", v)
	}
	return semver.Canonical(s), nil
}
