// Package funclib is the only package that imports knative.dev/func: every call into the func library goes through it, so a func upgrade touches this package alone.
package funclib
