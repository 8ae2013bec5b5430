// Package faults injects, for real, the faults a fleet operator meets into the operator binary run as config/ deploys it, and counts what must never happen.
package faults
