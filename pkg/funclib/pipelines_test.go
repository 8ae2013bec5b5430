package funclib

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	fn "knative.dev/func/pkg/functions"
)

func TestCheckBuildable(t *testing.T) {
	tests := []struct {
		name    string
		m       Metadata
		wantErr string
	}{
		{name: "pack with a registry", m: Metadata{Name: "hello", Runtime: "go", Builder: "pack", Registry: "registry.example/fns"}},
		{name: "no builder means pack", m: Metadata{Name: "hello", Runtime: "go", Image: "registry.example/fns/hello:v1"}},
		{name: "s2i node", m: Metadata{Name: "hello", Runtime: "node", Builder: "s2i", Registry: "registry.example/fns"}},
		{name: "s2i rust has no builder image", m: Metadata{Name: "hello", Runtime: "rust", Builder: "s2i", Registry: "r.example/x"}, wantErr: `s2i cannot build runtime "rust"`},
		{name: "host builder", m: Metadata{Name: "hello", Runtime: "go", Builder: "host", Registry: "r.example/x"}, wantErr: `builder "host"`},
		{name: "extra buildpacks", m: Metadata{Name: "hello", Runtime: "go", Buildpacks: []string{"x"}, Registry: "r.example/x"}, wantErr: "build.buildpacks"},
		{name: "nowhere to push", m: Metadata{Name: "hello", Runtime: "go"}, wantErr: "neither image nor registry"},
		// func writes these into its PipelineRun YAML unescaped: a line break adds fields.
		{name: "a build env that would add a pod template", m: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/x",
			BuildEnvs: []string{"OK=1", "A=1\n  podTemplate:\n    hostNetwork: true"}},
			wantErr: `func.yaml's build.buildEnvs[1] holds a control character ('\n' at byte 3)`},
		{name: "a registry with a line break", m: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/x\r\n  serviceAccountName: admin"},
			wantErr: "func.yaml's registry holds a control character"},
		{name: "a builder image with a tab", m: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/x", BuilderImages: map[string]string{"pack": "b\tx"}},
			wantErr: "func.yaml's build.builderImages.pack holds a control character"},
		{name: "raw deployer", m: Metadata{Name: "hello", Runtime: "go", Registry: "r.example/x", Deployer: DeployerRaw}},
		{name: "keda recorded as deployed with", m: Metadata{Name: "hello", Runtime: "go", Registry: "r.example/x", DeployedWith: DeployerKeda}},
		{name: "a deployer func does not have", m: Metadata{Name: "hello", Runtime: "go", Registry: "r.example/x", Deployer: "nomad"},
			wantErr: `func.yaml names deployer "nomad"; func v0.50.1 deploys with knative, raw, keda`},
		{name: "build envs on one line each: fine", m: Metadata{Name: "hello", Runtime: "go", Registry: "127.0.0.1:5000/x", BuildEnvs: []string{"A=1", "B=two words: and more"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBuildable(tt.m)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckBuildable() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckBuildable() = %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestTargetImage(t *testing.T) {
	for _, tt := range []struct {
		m    Metadata
		want string
	}{
		{Metadata{Name: "hello", Registry: "registry.example/fns"}, "registry.example/fns/hello:latest"},
		{Metadata{Name: "hello", Registry: "registry.example/fns", Image: "other.example/fns/hello:1"}, "other.example/fns/hello:1"},
	} {
		got, err := TargetImage(tt.m)
		if err != nil || got != tt.want {
			t.Errorf("TargetImage(%+v) = %q, %v; want %q", tt.m, got, err, tt.want)
		}
	}
}

func TestBuildFunction(t *testing.T) {
	req := BuildRequest{
		Namespace: "team-a",
		Function: Metadata{Name: "hello", Runtime: "go", Registry: "registry.example/fns", SpecVersion: "0.36.0",
			BuildEnvs: []string{"BP_GO_TARGETS=./cmd=x", "EMPTY="}, ServiceAccountName: "runner"},
		GitURL: "https://git.example/fns.git", Revision: "abc", ContextDir: "fns/hello",
		BuilderImage: "builder:pinned",
	}
	got, err := buildFunction(req)
	if err != nil {
		t.Fatal(err)
	}
	env := func(k, v string) fn.Env { return fn.Env{Name: &k, Value: &v} }
	want := fn.Function{
		SpecVersion: "0.36.0", Name: "hello", Runtime: "go", Registry: "registry.example/fns",
		Image: "registry.example/fns/hello:latest", Namespace: "team-a", Deployer: DeployerKnative,
		Build: fn.BuildSpec{
			Git:           fn.Git{URL: "https://git.example/fns.git", Revision: "abc", ContextDir: "fns/hello"},
			Builder:       "pack",
			BuilderImages: map[string]string{"pack": "builder:pinned"},
			BuildEnvs:     fn.Envs{env("BP_GO_TARGETS", "./cmd=x"), env("EMPTY", "")},
		},
		Deploy: fn.DeploySpec{Namespace: "team-a", ServiceAccountName: "runner"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buildFunction (-want +got):\n%s", diff)
	}

	// func's provider describes the function with the deployer func.yaml names.
	for _, tt := range []struct{ deployer, deployedWith, want string }{
		{"", "", DeployerKnative}, {DeployerRaw, "", DeployerRaw}, {"", DeployerKeda, DeployerKeda}, {DeployerKeda, DeployerRaw, DeployerKeda},
	} {
		r := req
		r.Function.Deployer, r.Function.DeployedWith = tt.deployer, tt.deployedWith
		if got, err := buildFunction(r); err != nil || got.Deployer != tt.want {
			t.Errorf("buildFunction(deployer %q, deploy.deployer %q).Deployer = %q, %v; want %q", tt.deployer, tt.deployedWith, got.Deployer, err, tt.want)
		}
	}

	// A builder image func.yaml pins wins over the operator's.
	req.Function.BuilderImages = map[string]string{"pack": "mine:1"}
	got, _ = buildFunction(req)
	if got.Build.BuilderImages["pack"] != "mine:1" || req.Function.BuilderImages["pack"] != "mine:1" {
		t.Errorf("builder images = %v (request's %v), want func.yaml's", got.Build.BuilderImages, req.Function.BuilderImages)
	}
}

func TestLabels_UpdateLabels(t *testing.T) {
	in := map[string]string{"function.knative.dev/name": "hello", "shared": "func"}
	got := labels{"functions.dev/build-id": "b1", "shared": "operator"}.UpdateLabels(fn.Function{}, in)
	want := map[string]string{"function.knative.dev/name": "hello", "functions.dev/build-id": "b1", "shared": "operator"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UpdateLabels (-want +got):\n%s", diff)
	}
	if in["shared"] != "func" {
		t.Error("UpdateLabels changed its input")
	}
}
