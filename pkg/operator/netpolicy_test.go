package operator

import (
	"net/netip"
	"slices"
	"testing"
)

func TestOwnListeners(t *testing.T) {
	got := ownListeners(":8080", "127.0.0.1:8081", "0", "")
	for _, want := range []string{"127.0.0.1:8080", "[::1]:8080", "127.0.0.1:8081"} {
		if !slices.Contains(got, netip.MustParseAddrPort(want)) {
			t.Errorf("ownListeners() = %v, want it to hold %s", got, want)
		}
	}
	if slices.Contains(got, netip.MustParseAddrPort("[::1]:8081")) {
		t.Errorf("ownListeners() = %v: a listener bound to 127.0.0.1 only is on ::1", got)
	}
}
