package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCandidates(t *testing.T) {
	const d = "sha256:eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
	run := Base{Kind: BaseRunImage, Image: "paketobuildpacks/run-jammy-tiny:latest",
		Mirrors: []string{"gcr.io/paketo-buildpacks/run-jammy-tiny:latest"}}
	tests := []struct {
		name    string
		base    Base
		mirrors map[string]string
		want    []string
	}{
		{name: "no image", base: Base{Kind: BaseRunImage, Problem: "lies"}, mirrors: map[string]string{"docker.io": "127.0.0.1:5000"}},
		{name: "no configured mirror: image, then its mirrors", base: run,
			want: []string{"paketobuildpacks/run-jammy-tiny:latest", "gcr.io/paketo-buildpacks/run-jammy-tiny:latest"}},
		{name: "an organization of Docker Hub", base: run,
			mirrors: map[string]string{"docker.io/paketobuildpacks": "127.0.0.1:5000/paketo"},
			want: []string{"127.0.0.1:5000/paketo/run-jammy-tiny:latest", "paketobuildpacks/run-jammy-tiny:latest",
				"gcr.io/paketo-buildpacks/run-jammy-tiny:latest"}},
		{name: "index.docker.io is docker.io, a trailing slash is none", base: run,
			mirrors: map[string]string{"index.docker.io/paketobuildpacks/": "127.0.0.1:5000/paketo/"},
			want: []string{"127.0.0.1:5000/paketo/run-jammy-tiny:latest", "paketobuildpacks/run-jammy-tiny:latest",
				"gcr.io/paketo-buildpacks/run-jammy-tiny:latest"}},
		{name: "the longest prefix wins", base: run,
			mirrors: map[string]string{
				"docker.io":                                 "127.0.0.1:5000/hub",
				"docker.io/paketobuildpacks":                "127.0.0.1:5000/paketo",
				"docker.io/paketobuildpacks/run-jammy-tiny": "127.0.0.1:5000/tiny",
			},
			want: []string{"127.0.0.1:5000/tiny:latest", "paketobuildpacks/run-jammy-tiny:latest",
				"gcr.io/paketo-buildpacks/run-jammy-tiny:latest"}},
		{name: "a whole registry keeps library/", base: Base{Kind: BaseBuilder, Image: "ubuntu:22.04"},
			mirrors: map[string]string{"docker.io": "127.0.0.1:5000/hub"},
			want:    []string{"127.0.0.1:5000/hub/library/ubuntu:22.04", "ubuntu:22.04"}},
		{name: "an official image, with or without library/", base: Base{Kind: BaseBuilder, Image: "docker.io/library/node:20"},
			mirrors: map[string]string{"node": "127.0.0.1:5000/node"},
			want:    []string{"127.0.0.1:5000/node:20", "docker.io/library/node:20"}},
		{name: "docker.io/library", base: Base{Kind: BaseBuilder, Image: "node:20"},
			mirrors: map[string]string{"docker.io/library": "127.0.0.1:5000/official"},
			want:    []string{"127.0.0.1:5000/official/node:20", "node:20"}},
		{name: "whole path components only", base: Base{Kind: BaseBuilder, Image: "127.0.0.1:5001/team-ab/builder:v1"},
			mirrors: map[string]string{"127.0.0.1:5001/team-a": "127.0.0.1:5000/a"},
			want:    []string{"127.0.0.1:5001/team-ab/builder:v1"}},
		{name: "a registry with a port", base: Base{Kind: BaseBuilder, Image: "127.0.0.1:5001/team-ab/builder:v1"},
			mirrors: map[string]string{"127.0.0.1:5001": "127.0.0.1:5000/mirror"},
			want:    []string{"127.0.0.1:5000/mirror/team-ab/builder:v1", "127.0.0.1:5001/team-ab/builder:v1"}},
		{name: "mirrors are rewritten too, after the image", base: run,
			mirrors: map[string]string{"gcr.io": "127.0.0.1:5000/gcr"},
			want: []string{"127.0.0.1:5000/gcr/paketo-buildpacks/run-jammy-tiny:latest", "paketobuildpacks/run-jammy-tiny:latest",
				"gcr.io/paketo-buildpacks/run-jammy-tiny:latest"}},
		{name: "by digest", base: Base{Kind: BaseRunImage, Image: "paketobuildpacks/run@" + d},
			mirrors: map[string]string{"docker.io/paketobuildpacks": "127.0.0.1:5000/paketo"},
			want:    []string{"127.0.0.1:5000/paketo/run@" + d, "paketobuildpacks/run@" + d}},
		{name: "repeats dropped: docker.io and its spellings", base: Base{Kind: BaseRunImage, Image: "paketobuildpacks/run:latest",
			Mirrors: []string{"docker.io/paketobuildpacks/run:latest", "index.docker.io/paketobuildpacks/run"}},
			want: []string{"paketobuildpacks/run:latest"}},
		{name: "a rewrite that is no reference is skipped", base: Base{Kind: BaseBuilder, Image: "builder:v1"},
			mirrors: map[string]string{"docker.io": "NOT A HOST", "": "127.0.0.1:5000", "   ": "127.0.0.1:5000"},
			want:    []string{"builder:v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Candidates(tt.base, tt.mirrors)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
