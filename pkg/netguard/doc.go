// Package netguard decides which hosts a Function may make the operator connect to, and
// enforces it on the resolved address at connect time.
//
// It owns the network policy (hostAllow and hostDeny, the API server and the operator's
// own addresses), the Guard that dials and reads within it (read limits), CA bundles,
// untrusted-certificate and refusal texts, and the proxy settings. It imports no other
// package of the operator (depguard rule floor): pkg/git and pkg/registry dial through
// it.
package netguard
