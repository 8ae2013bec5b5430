// Package function reconciles Function objects: an ordered list of steps whose outcome is patched into the status once.
package function
