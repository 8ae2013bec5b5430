package base

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/imagedeploy"
	"github.com/fnops/func-operator/pkg/rebase"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/registry"
)

// RebaseJob is the operator's build.Rebaser: package rebase rebases the running
// image and pushes it by digest, with the Function's registry credentials; package
// imagedeploy writes it into what func deployed, as the build ServiceAccount.
type RebaseJob struct {
	Rebaser  *rebase.Rebaser
	Deployer *imagedeploy.Deployer
	Keychain build.Keychain
	Config   *config.Store
}

var _ build.Rebaser = RebaseJob{}

// named is what func deployed, as the Function reconciler's targets are: by name and UID.
type named interface {
	Name() string
	UID() types.UID
}

// Rebase rebases image, run by target, onto b.RunImage and deploys the result.
func (j RebaseJob) Rebase(ctx context.Context, fn *v1alpha1.Function, target build.Target, image string, b build.Base) (string, error) {
	if !strings.Contains(image, "@") {
		return "", fmt.Errorf("%s runs %s, not an image by digest: the rebase needs the exact image it replaces", target, image)
	}
	obj, ok := target.(named)
	if !ok {
		return "", fmt.Errorf("%s cannot be deployed to", target)
	}
	kc, _, err := j.Keychain(ctx, fn)
	if err != nil {
		return "", err
	}
	res, err := j.Rebaser.Rebase(ctx, rebase.Request{App: image, RunImage: b.RunImage, RunImageName: b.RunImageName,
		Keychain: kc, CA: registry.CABundle(kc)})
	if err != nil {
		return "", err
	}
	// Only over the image it replaces, in the object it was started for: a func deploy
	// (or a Service replaced) since the rebase started is never overwritten.
	_, err = j.Deployer.Deploy(ctx, imagedeploy.Target{Deployer: target.Deployer(), Namespace: fn.Namespace, Name: obj.Name(),
		UID: obj.UID(), Replaces: image}, j.Config.Load().PipelineServiceAccount, res.Image)
	if err != nil {
		return "", fmt.Errorf("rebased image %s was pushed, but deploying it failed (the running image serves on): %w", res.Image, err)
	}
	return res.Image, nil
}
