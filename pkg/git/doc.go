// Package git reads a function's func.yaml from its git repository: branch-head checks, shallow clones, credentials and a cache of what was read.
package git
