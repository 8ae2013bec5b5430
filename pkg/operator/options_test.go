package operator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseNamespaces(t *testing.T) {
	tests := map[string][]string{
		"":                   nil,
		"team-a":             {"team-a"},
		"team-a,team-b":      {"team-a", "team-b"},
		" team-a , ,team-b ": {"team-a", "team-b"},
	}
	for in, want := range tests {
		if diff := cmp.Diff(want, ParseNamespaces(in)); diff != "" {
			t.Errorf("ParseNamespaces(%q) (-want +got):\n%s", in, diff)
		}
	}
}
