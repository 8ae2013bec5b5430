package middleware

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		name      string
		current   string
		available string
		want      Comparison
		// wantErr lists substrings the error must contain; nil means no error.
		wantErr []string
	}{
		{name: "equal", current: "v0.21.3", available: "v0.21.3", want: UpToDate},
		{name: "older current", current: "v0.21.2", available: "v0.21.3", want: Outdated},
		{name: "older minor", current: "v0.20.9", available: "v0.21.0", want: Outdated},
		{name: "older major", current: "1.9.9", available: "2.0.0", want: Outdated},
		{name: "newer current is not an update", current: "v0.22.0", available: "v0.21.3", want: UpToDate},
		{name: "numeric not lexical order", current: "v0.9.0", available: "v0.10.0", want: Outdated},
		{name: "v prefix on current only", current: "v2.4.0", available: "2.4.0", want: UpToDate},
		{name: "v prefix on available only", current: "2.4.0", available: "v2.4.1", want: Outdated},
		{name: "pre-release current below its release", current: "v1.2.3-rc.1", available: "v1.2.3", want: Outdated},
		{name: "release current above its pre-release", current: "v1.2.3", available: "v1.2.3-rc.1", want: UpToDate},
		{name: "pre-release above previous release", current: "v1.2.3-rc.1", available: "v1.2.2", want: UpToDate},
		{name: "pre-releases ordered by identifiers", current: "1.2.3-rc.2", available: "1.2.3-rc.10", want: Outdated},
		{name: "build metadata ignored, equal", current: "v1.2.3+abc", available: "v1.2.3+def", want: UpToDate},
		{name: "build metadata ignored, older", current: "v1.2.2+zzz", available: "v1.2.3", want: Outdated},
		{name: "caret range available", current: "2.4.0", available: "^2.4.0", want: UpToDate},
		{name: "caret range available newer", current: "2.3.9", available: "^2.4.0", want: Outdated},
		{name: "tilde range", current: "~1.2.3", available: "1.2.4", want: Outdated},
		{name: "at-least range", current: ">=1.0.0", available: "1.0.0", want: UpToDate},
		{name: "at-least range with space", current: ">= 1.0.1", available: "1.0.0", want: UpToDate},
		{name: "python exact pin", current: "==0.1.0", available: "0.1.0", want: UpToDate},
		{name: "equals operator", current: "=0.1.0", available: "0.2.0", want: Outdated},
		{name: "two-part current", current: "3.17", available: "3.17.0", want: UpToDate},
		{name: "two-part current older", current: "3.17", available: "3.17.8", want: Outdated},
		{name: "two-part available", current: "3.17.8", available: "v3.18", want: Outdated},
		{name: "maven release train newer", current: "2024.0.0", available: "2023.0.3", want: UpToDate},
		{name: "maven release train older", current: "2023.0.3", available: "2024.0.0", want: Outdated},
		{name: "surrounding space", current: " v1.0.0 ", available: "1.0.0\n", want: UpToDate},

		// func v0.44.0's middleware against func v0.50.1's (fn.LatestMiddlewareVersions).
		{name: "func-go of v0.44.0 against v0.50.1", current: "v0.21.3", available: "v0.22.0", want: Outdated},
		{name: "faas-js-runtime range of v0.44.0 against v0.50.1", current: "^2.4.0", available: "3.0.2", want: Outdated},
		{name: "faas-js-runtime range of v0.50.1 against its own", current: "^3.0.2", available: "3.0.2", want: UpToDate},
		{name: "func-python label", current: "0.8.1", available: "0.8.1", want: UpToDate},
		{name: "quarkus of v0.44.0 against v0.50.1", current: "3.17.8", available: "3.37.1", want: Outdated},
		{name: "spring-cloud of v0.44.0 against v0.50.1", current: "2024.0.0", available: "2025.0.1", want: Outdated},

		{name: "empty current is unknown without error", current: "", available: "v1.0.0", want: Unknown},
		{name: "empty current is unknown even with bad available", current: "", available: "banana", want: Unknown},

		{name: "latest current", current: "latest", available: "v1.0.0", want: Unknown, wantErr: []string{"current version", `"latest"`, "not a semantic version"}},
		{name: "x-range current", current: "1.x", available: "v1.0.0", want: Unknown, wantErr: []string{"current version", `"1.x"`, "not a semantic version"}},
		{name: "bare v current", current: "v", available: "v1.0.0", want: Unknown, wantErr: []string{"current version", `"v"`, "not a semantic version"}},
		{name: "banana current", current: "banana", available: "v1.0.0", want: Unknown, wantErr: []string{"current version", `"banana"`}},
		{name: "blank current", current: "  ", available: "v1.0.0", want: Unknown, wantErr: []string{"current version", "empty version"}},
		{name: "latest available", current: "v1.0.0", available: "latest", want: Unknown, wantErr: []string{"available version", `"latest"`, "not a semantic version"}},
		{name: "x-range available", current: "v1.0.0", available: "1.x", want: Unknown, wantErr: []string{"available version", `"1.x"`}},
		{name: "empty available", current: "v1.0.0", available: "", want: Unknown, wantErr: []string{"available version", "empty version"}},
		{name: "bare v available", current: "v1.0.0", available: "v", want: Unknown, wantErr: []string{"available version", `"v"`}},
		{name: "banana available", current: "v1.0.0", available: "banana", want: Unknown, wantErr: []string{"available version", `"banana"`}},
		{name: "both unparsable names both", current: "latest", available: "banana", want: Unknown, wantErr: []string{"current version", `"latest"`, "available version", `"banana"`}},
		{name: "operator without version", current: "^", available: "1.0.0", want: Unknown, wantErr: []string{"current version", "range without a version"}},
		{name: "upper bound range has no base", current: "<2.0.0", available: "1.0.0", want: Unknown, wantErr: []string{"current version", `"<2.0.0"`}},
		{name: "compound range", current: "^1.0.0 || ^2.0.0", available: "1.0.0", want: Unknown, wantErr: []string{"current version", "one base version"}},
		{name: "maven range", current: "[1.0,2.0)", available: "1.0.0", want: Unknown, wantErr: []string{"current version"}},
		{name: "two-part pre-release is not semver", current: "3.17-rc1", available: "3.17.0", want: Unknown, wantErr: []string{"current version", `"3.17-rc1"`}},
		{name: "four-part maven version", current: "3.17.8.Final", available: "3.17.8", want: Unknown, wantErr: []string{"current version", `"3.17.8.Final"`}},
		{name: "leading zero", current: "2024.0.01", available: "2024.0.0", want: Unknown, wantErr: []string{"current version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare(tt.current, tt.available)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compare(%q, %q) (-want +got):\n%s", tt.current, tt.available, diff)
			}
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "v1.2.3", want: "v1.2.3"},
		{in: "1.2.3", want: "v1.2.3"},
		{in: "v1.2.3-rc.1", want: "v1.2.3-rc.1"},
		{in: "1.2.3-rc.1+build.5", want: "v1.2.3-rc.1"},
		{in: "1.2.3+build.5", want: "v1.2.3"},
		{in: "3.17", want: "v3.17.0"},
		{in: "2", want: "v2.0.0"},
		{in: "^2.4.0", want: "v2.4.0"},
		{in: "~1.2.3", want: "v1.2.3"},
		{in: ">=1.0.0", want: "v1.0.0"},
		{in: "~=0.1.0", want: "v0.1.0"},
		{in: "==0.1.0", want: "v0.1.0"},
		{in: "===0.1.0", want: "v0.1.0"},
		{in: "=v0.1.0", want: "v0.1.0"},
		{in: "2024.0.0", want: "v2024.0.0"},
		{in: "", wantErr: true},
		{in: "v", wantErr: true},
		{in: "vv1.2.3", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "1.x", wantErr: true},
		{in: "*", wantErr: true},
		{in: "banana", wantErr: true},
		{in: ">1.0.0", wantErr: true},
		{in: "<=1.0.0", wantErr: true},
		{in: "!=1.0.0", wantErr: true},
		{in: "1.0.0 - 2.0.0", wantErr: true},
		{in: "1.2.3-", wantErr: true},
		{in: "1.2.3-01", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Normalize(%q) error = %v, want error: %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), `"`+tt.in+`"`) {
				t.Errorf("Normalize(%q) error %q does not quote the input", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Normalize(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Errorf("got no error, want one containing %q", want)
		return
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}
