package funclib

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/func/pkg/builders"
	fn "knative.dev/func/pkg/functions"
	"knative.dev/func/pkg/oci"
	"knative.dev/func/pkg/pipelines/tekton"
	"knative.dev/func/pkg/s2i"
)

// Builders the func pipelines know.
const (
	BuilderPack = builders.Pack
	BuilderS2I  = builders.S2I
)

// BuildRequest is one on-cluster build of a function from git, as
// `func deploy --remote` with a git URL runs it.
type BuildRequest struct {
	// Namespace the pipeline runs in and the function is deployed to.
	Namespace string
	// Function is what its func.yaml says.
	Function Metadata
	// GitURL, Revision (a commit) and ContextDir (the function's path in the
	// repository) are what the pipeline clones.
	GitURL, Revision, ContextDir string
	// Labels are put on every object the pipeline creates, besides func's own.
	Labels map[string]string
	// BuilderImage is used when func.yaml pins no builder image; empty keeps func's default.
	BuilderImage string
	// StepImages replace the images func's task templates name by tag.
	StepImages StepImages
	// Credentials returns the registry credentials for an image, for the pipeline's
	// push Secret. Empty credentials push anonymously.
	Credentials func(ctx context.Context, image string) (username, password string, err error)
	// WorkDir holds the empty scratch directory func's provider needs as the function root.
	WorkDir string
	// ID is the build's ID: label LabelBuildID of every object of the build.
	ID string
	// Owner owns every object of the build (the Function), so that the cluster's
	// garbage collector removes them with it.
	Owner metav1.OwnerReference
	// GitCredentials, when not nil, are what the clone step authenticates with: they
	// go into a Secret of the build (GitSecretName, label LabelGitCredentials),
	// bound to the clone task only, which the caller deletes once the build ended.
	GitCredentials *GitCredentials
}

// LabelGitCredentials marks a build's git credentials Secret.
const LabelGitCredentials = "functions.dev/git-credentials"

// RunPipeline runs the build through func's Tekton pipelines provider and returns
// when its PipelineRun ends. Cancelling ctx deletes the PipelineRun (func's provider
// does so): never pass a context that a routine event cancels.
func RunPipeline(ctx context.Context, req BuildRequest) error {
	f, err := buildFunction(req)
	if err != nil {
		return err
	}
	proxy, err := throughProxy()
	if err != nil {
		return fmt.Errorf("no build is started: %w", err)
	}
	if req.ID == "" || req.Owner.UID == "" || req.Owner.Name == "" {
		return errors.New("no build is started: the request names no build ID or owner")
	}
	req.Labels = maps.Clone(req.Labels)
	if req.Labels == nil {
		req.Labels = map[string]string{}
	}
	req.Labels[LabelBuildID] = req.ID
	reg := newRegistration(req)
	if req.GitCredentials != nil {
		auth, err := newGitAuth(req.GitURL, req.GitCredentials)
		if err != nil {
			return fmt.Errorf("no build is started: the clone step's credentials: %w", err)
		}
		// The Secret outlives this call when func returns before its run ends (it
		// may follow another run): the operator deletes it once it records the end
		// of the build, and the garbage collector with the Function.
		secret, err := proxy.createGitSecret(ctx, req, auth)
		if err != nil {
			return fmt.Errorf("no build is started: %w", err)
		}
		reg.gitSecret, reg.gitAuth = secret, auth
	}
	defer register(req.Namespace, req.ID, reg)()
	// func's provider reads .tekton/ from the function root and would apply the files it
	// finds there: the root is an empty scratch directory, never the user's source.
	root, err := os.MkdirTemp(req.WorkDir, "build-")
	if err != nil {
		return fmt.Errorf("creating the build's scratch directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(root) }()
	f.Root = root

	creds := func(ctx context.Context, image string) (oci.Credentials, error) {
		if req.Credentials == nil {
			return oci.Credentials{}, nil
		}
		u, p, err := req.Credentials(ctx, image)
		return oci.Credentials{Username: u, Password: p}, err
	}
	pp := tekton.NewPipelinesProvider(
		tekton.WithCredentialsProvider(creds),
		tekton.WithPipelineDecorator(labels(req.Labels)),
		tekton.WithPacURLCallback(func() (string, error) {
			return "", errors.New("pipelines-as-code is not used by func-operator")
		}),
	)
	if err := recovered("running the pipeline", func() error { _, _, err := pp.Run(ctx, f); return err }); err != nil {
		return fmt.Errorf("func pipeline: %w", err)
	}
	return nil
}

// recovered runs call and turns a panic in it into an error. The func library
// panics where it ignores an error of its own: v0.50.1 fetching a failed step's log
// (k8s.GetPodLogs) dereferences the client it could not make when the kubeconfig
// it reads is gone. A build runs on a goroutine of its own, where a panic would end
// the operator: it must fail that build only.
func recovered(what string, call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the func library panicked %s: %v", what, p)
		}
	}()
	return call()
}

// CheckBuildable says why func's pipelines cannot build the function, if they cannot.
func CheckBuildable(m Metadata) error {
	fields := map[string]string{"name": m.Name, "runtime": m.Runtime, "registry": m.Registry, "image": m.Image}
	for b, img := range m.BuilderImages {
		fields["build.builderImages."+b] = img
	}
	for i, kv := range m.BuildEnvs {
		fields[fmt.Sprintf("build.buildEnvs[%d]", i)] = kv
	}
	if err := singleLines(fields); err != nil {
		return fmt.Errorf("func.yaml's %w", err)
	}
	switch m.Builder {
	case "", BuilderPack:
		if len(m.Buildpacks) > 0 {
			return errors.New("func.yaml adds buildpacks (build.buildpacks), which func's on-cluster pipeline does not support")
		}
	case BuilderS2I:
		if _, err := s2i.BuilderImage(fn.Function{Runtime: m.Runtime, Build: fn.BuildSpec{Builder: BuilderS2I, BuilderImages: m.BuilderImages}}, BuilderS2I); err != nil {
			return fmt.Errorf("s2i cannot build runtime %q: %w", m.Runtime, err)
		}
	default:
		return fmt.Errorf("func.yaml names builder %q; func's on-cluster pipeline builds with pack or s2i", m.Builder)
	}
	if d := DeployerOf(m); !KnownDeployer(d) {
		return fmt.Errorf("func.yaml names deployer %q; func %s deploys with %s", d, Version(), strings.Join(Deployers(), ", "))
	}
	if _, err := TargetImage(m); err != nil {
		return err
	}
	return nil
}

// BuilderOf returns the builder func uses for the function: func.yaml's, else pack.
func BuilderOf(m Metadata) string {
	if m.Builder == "" {
		return BuilderPack
	}
	return m.Builder
}

// TargetImage is the image the build pushes: func.yaml's image, else registry/name:latest.
func TargetImage(m Metadata) (string, error) {
	f := fn.Function{Name: m.Name, Registry: m.Registry, Image: m.Image}
	img := f.Image
	if img == "" {
		var err error
		if img, err = f.ImageName(); err != nil {
			return "", fmt.Errorf("func.yaml sets neither image nor registry: the build has nowhere to push (%w)", err)
		}
	}
	if _, err := name.ParseReference(img); err != nil {
		return "", fmt.Errorf("func.yaml's image %q is not an image reference: %w", img, err)
	}
	return img, nil
}

var deployerMu sync.Mutex

// SetDeployerImage pins the func-utils image the pipeline's scaffold, s2i generate
// and deploy steps run. func v0.50 keeps one package variable per step
// (DeployerImage, ScaffoldImage, S2IImage; v0.44 had DeployerImage alone), each
// defaulting to its FuncUtilImage: all three are set. Call this once, before any
// build.
func SetDeployerImage(image string) {
	deployerMu.Lock()
	defer deployerMu.Unlock()
	tekton.DeployerImage, tekton.ScaffoldImage, tekton.S2IImage = image, image, image
}

// DeployerImage returns the func-utils image the pipelines run.
func DeployerImage() string {
	deployerMu.Lock()
	defer deployerMu.Unlock()
	return tekton.DeployerImage
}

// buildFunction is the function func's provider builds.
func buildFunction(req BuildRequest) (fn.Function, error) {
	m := req.Function
	if err := CheckBuildable(m); err != nil {
		return fn.Function{}, err
	}
	if err := singleLines(map[string]string{"git URL": req.GitURL, "revision": req.Revision, "path": req.ContextDir,
		"builder image": req.BuilderImage, "namespace": req.Namespace}); err != nil {
		return fn.Function{}, fmt.Errorf("the build's %w", err)
	}
	img, _ := TargetImage(m)
	builderImages := maps.Clone(m.BuilderImages)
	builder := BuilderOf(m)
	if builderImages[builder] == "" && req.BuilderImage != "" {
		if builderImages == nil {
			builderImages = map[string]string{}
		}
		builderImages[builder] = req.BuilderImage
	}
	var envs fn.Envs
	for _, kv := range m.BuildEnvs {
		k, v, _ := strings.Cut(kv, "=")
		envs = append(envs, fn.Env{Name: &k, Value: &v})
	}
	return fn.Function{
		SpecVersion: m.SpecVersion,
		Name:        m.Name,
		Runtime:     m.Runtime,
		Invoke:      m.Invoke,
		Registry:    m.Registry,
		Image:       img,
		Namespace:   req.Namespace,
		// The deployer func's provider describes the function with once its run
		// ended; the run's deploy step resolves the same from func.yaml.
		Deployer: DeployerOf(m),
		Build: fn.BuildSpec{
			Git:           fn.Git{URL: req.GitURL, Revision: req.Revision, ContextDir: req.ContextDir},
			Builder:       builder,
			BuilderImages: builderImages,
			BuildEnvs:     envs,
		},
		Deploy: fn.DeploySpec{Namespace: req.Namespace, ServiceAccountName: m.ServiceAccountName},
	}, nil
}

// singleLines fails on the first field (by name) that holds a control character.
// func (v0.50 as v0.44) writes these values into its Pipeline and PipelineRun YAML templates
// unescaped: a line break would add fields of the value's choosing to the run (its
// ServiceAccount, a pod template).
func singleLines(fields map[string]string) error {
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		if i := strings.IndexFunc(fields[field], unicode.IsControl); i >= 0 {
			return fmt.Errorf("%s holds a control character (%q at byte %d): func's pipeline takes single-line values only", field, fields[field][i], i)
		}
	}
	return nil
}

// labels is the pipeline decorator: func's labels plus the operator's.
type labels map[string]string

var _ tekton.PipelineDecorator = labels(nil)

// UpdateLabels returns func's labels with the operator's added.
func (l labels) UpdateLabels(_ fn.Function, in map[string]string) map[string]string {
	out := maps.Clone(in)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, l)
	return out
}
