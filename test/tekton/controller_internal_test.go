package tekton

import (
	"slices"
	"strings"
	"testing"
)

// The controller runs with the arguments and environment of Tekton's release
// (config/controller.yaml), its images replaced and the release's volume paths left out.
func TestReleaseCommand(t *testing.T) {
	run, err := releaseCommand()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"entrypoint-image", "nop-image", "sidecarlogresults-image", "workingdirinit-image", "shell-image", "shell-image-win"} {
		i := slices.Index(run.Args, "-"+f)
		if i < 0 || i+1 >= len(run.Args) || run.Args[i+1] != imageFlagValue(f) {
			t.Errorf("args %v: want -%s %s", run.Args, f, imageFlagValue(f))
		}
	}
	for _, a := range run.Args {
		if strings.Contains(a, "ko://") || strings.Contains(a, "@sha256:") {
			t.Errorf("args %v: a release image is left: %s", run.Args, a)
		}
	}
	env := map[string]string{}
	for _, e := range run.Env {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	for k, want := range map[string]string{
		"SYSTEM_NAMESPACE":          SystemNamespace,
		"CONFIG_FEATURE_FLAGS_NAME": "feature-flags",
		"METRICS_DOMAIN":            "tekton.dev/pipeline",
	} {
		if env[k] != want {
			t.Errorf("env %s = %q, want %q (env %v)", k, env[k], want, run.Env)
		}
	}
	// Tekton v1.10's release accepts Kubernetes from v1.28.0 (its own default: v1.33.0).
	if !strings.HasPrefix(env["KUBERNETES_MIN_VERSION"], "v1.") {
		t.Errorf("env KUBERNETES_MIN_VERSION = %q, want the release's", env["KUBERNETES_MIN_VERSION"])
	}
	for k := range releaseEnvSkipped {
		if _, ok := env[k]; ok {
			t.Errorf("env has %s, a path of a volume only the release mounts", k)
		}
	}
}
