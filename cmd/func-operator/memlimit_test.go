package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMemoryLimit(t *testing.T) {
	type result struct {
		Limit int64
		From  string
		Err   bool
	}
	tests := []struct {
		name string
		env  map[string]string
		want result
	}{{
		name: "the shipped Deployment's 1Gi: 80% of it",
		env:  map[string]string{memoryLimitEnv: "1073741824"},
		want: result{Limit: 858993459, From: "container"},
	}, {
		name: "GOMEMLIMIT wins: the runtime applied it",
		env:  map[string]string{memoryLimitEnv: "1073741824", "GOMEMLIMIT": "500MiB"},
		want: result{From: "GOMEMLIMIT"},
	}, {
		name: "neither (make run, tests): none",
		want: result{From: "none"},
	}, {
		name: "not bytes: none, and said",
		env:  map[string]string{memoryLimitEnv: "1Gi"},
		want: result{From: "none", Err: true},
	}, {
		name: "zero: none, and said",
		env:  map[string]string{memoryLimitEnv: "0"},
		want: result{From: "none", Err: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit, from, err := memoryLimit(func(k string) string { return tt.env[k] })
			if diff := cmp.Diff(tt.want, result{limit, from, err != nil}); diff != "" {
				t.Errorf("memoryLimit (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}
