// Package middleware compares middleware versions: what a function runs with what a
// rebuild would bring.
//
// It compares with golang.org/x/mod/semver, not Masterminds/semver/v3: Masterminds'
// NewVersion accepts what the tests reject ("3.17-rc1", the leading zero of
// "2024.0.01") and its constraints neither take PEP 440's == === ~= nor expose a
// range's base version, so the operator cut in Normalize would stay anyway.
//
// It imports no other package of the operator (depguard rule floor): it compares
// strings; where they come from (an image, a func.yaml) is its callers' business.
package middleware
