package function

import (
	"context"
	"fmt"
	"strings"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/imagedeploy"
	"github.com/fnops/func-operator/pkg/rebase"
	"github.com/fnops/func-operator/pkg/reconciler/function/build"
	"github.com/fnops/func-operator/pkg/registry"
)

// rebaseJob is the operator's build.Rebaser: package rebase rebases the running
// image and pushes it by digest, with the Function's registry credentials; package
// imagedeploy writes it into what func deployed, as the build ServiceAccount.
type rebaseJob struct {
	rebaser  *rebase.Rebaser
	deployer *imagedeploy.Deployer
	keychain build.Keychain
	config   *config.Store
}

var _ build.Rebaser = rebaseJob{}

// Rebase rebases image, run by target, onto b.RunImage and deploys the result.
func (j rebaseJob) Rebase(ctx context.Context, fn *v1alpha1.Function, target build.Target, image string, b build.Base) (string, error) {
	if !strings.Contains(image, "@") {
		return "", fmt.Errorf("%s runs %s, not an image by digest: the rebase needs the exact image it replaces", target, image)
	}
	named, ok := target.(deployed)
	if !ok {
		return "", fmt.Errorf("%s cannot be deployed to", target)
	}
	kc, _, err := j.keychain(ctx, fn)
	if err != nil {
		return "", err
	}
	res, err := j.rebaser.Rebase(ctx, rebase.Request{App: image, RunImage: b.RunImage, RunImageName: b.RunImageName,
		Keychain: kc, CA: registry.CABundle(kc)})
	if err != nil {
		return "", err
	}
	// Only over the image it replaces, in the object it was started for: a func deploy
	// (or a Service replaced) since the rebase started is never overwritten.
	_, err = j.deployer.Deploy(ctx, imagedeploy.Target{Deployer: target.Deployer(), Namespace: fn.Namespace, Name: named.Name(),
		UID: named.UID(), Replaces: image}, j.config.Load().PipelineServiceAccount, res.Image)
	if err != nil {
		return "", fmt.Errorf("rebased image %s was pushed, but deploying it failed (the running image serves on): %w", res.Image, err)
	}
	return res.Image, nil
}
