// Package middleware compares middleware versions: what a function runs with what a rebuild would bring.
package middleware
