package main

import "testing"

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"":               true, // disabled
		"0":              true,
		"127.0.0.1:6060": true,
		"[::1]:6060":     true,
		"localhost:6060": true,
		":6060":          false, // every interface
		"0.0.0.0:6060":   false,
		"[::]:6060":      false,
		"10.0.0.5:6060":  false,
		"pod-name:6060":  false,
		"6060":           false, // not host:port: refused by the listener, not called safe
	} {
		if got := loopbackOnly(addr); got != want {
			t.Errorf("loopbackOnly(%q) = %t, want %t", addr, got, want)
		}
	}
}
