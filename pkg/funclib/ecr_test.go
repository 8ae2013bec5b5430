package funclib

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"knative.dev/func/pkg/creds"
	"knative.dev/func/pkg/k8s"
)

// TestECRLoginReplacement checks the replacement of
// github.com/awslabs/amazon-ecr-credential-helper/ecr-login (modules/ecr-login):
// func's ECR credential loader, built on it, answers "not found" (so func tries its
// next loader) without a network call, and the only caller of that loader in func
// v0.50.1, its CLI package knative.dev/func/cmd, is not linked into the operator,
// which links the replacement itself (the positive control that the replace holds).
func TestECRLoginReplacement(t *testing.T) {
	loaders := k8s.GetECRCredentialLoader()
	if len(loaders) != 1 {
		t.Fatalf("func's ECR loaders = %d, want 1", len(loaders))
	}
	for range 2 { // the second answer comes from func's cache
		got, err := loaders[0]("123456789012.dkr.ecr.us-east-1.amazonaws.com")
		if !errors.Is(err, creds.ErrCredentialsNotFound) || got.Username != "" || got.Password != "" {
			t.Fatalf("func's ECR loader = %+v, %v; want no credentials, %v", got, err, creds.ErrCredentialsNotFound)
		}
	}

	out, err := exec.Command("go", "list", "-deps", "github.com/fnops/func-operator/cmd/func-operator").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/awslabs/amazon-ecr-credential-helper/ecr-login") {
		t.Error("the operator does not link ecr-login: the replacement is not what func builds on")
	}
	if slices.Contains(deps, "knative.dev/func/cmd") {
		t.Error("the operator links knative.dev/func/cmd, which looks up ECR credentials through the replacement")
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/awslabs/amazon-ecr-credential-helper/ecr-login").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	if !strings.HasSuffix(strings.TrimSpace(string(dir)), "modules/ecr-login") {
		t.Errorf("ecr-login comes from %s, want the replacement in modules/ecr-login", dir)
	}
}
