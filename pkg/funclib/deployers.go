package funclib

import (
	"slices"

	"knative.dev/func/pkg/deployer"
	"knative.dev/func/pkg/deployers"
)

// The deployers of the linked func library, by the names func.yaml, func's
// annotation DeployerAnnotation and status.deployment.deployer use.
const (
	// DeployerKnative deploys a Knative Service (func's default).
	DeployerKnative = deployers.Knative
	// DeployerRaw deploys a plain Deployment and a core Service.
	DeployerRaw = deployers.Kubernetes
	// DeployerKeda deploys what DeployerRaw does plus an HTTPScaledObject of the
	// KEDA HTTP add-on.
	DeployerKeda = deployers.Keda
	// DefaultDeployer is the deployer func uses when func.yaml names none.
	DefaultDeployer = deployers.Default
)

// DeployerAnnotation is the annotation func's deployers put on what they deploy
// (a Knative Service; a Deployment, its core Service and HTTPScaledObject), naming
// the deployer. A Knative Service without it was deployed by func's knative
// deployer (func before v0.47 wrote none).
const DeployerAnnotation = deployer.DeployerNameAnnotation

// Deployers are the deployers the linked func library has.
func Deployers() []string { return []string{DeployerKnative, DeployerRaw, DeployerKeda} }

// KnownDeployer reports whether name is a deployer of the linked func library.
func KnownDeployer(name string) bool { return slices.Contains(Deployers(), name) }

// DeployerOf is the deployer func's pipeline deploys m with, as its deploy step
// (func-utils deploy) resolves it: func.yaml's deployer (what was asked for), else
// deploy.deployer (what it was last deployed with), else func's default.
func DeployerOf(m Metadata) string { return EffectiveDeployer(RequestedDeployer(m)) }

// RequestedDeployer is the deployer func.yaml names: its deployer, else
// deploy.deployer; empty when it names none.
func RequestedDeployer(m Metadata) string {
	if m.Deployer != "" {
		return m.Deployer
	}
	return m.DeployedWith
}

// EffectiveDeployer is the deployer func deploys with when func.yaml names requested
// (RequestedDeployer): requested, or func's default when it names none.
func EffectiveDeployer(requested string) string {
	if requested == "" {
		return DefaultDeployer
	}
	return requested
}

// CheckDeployerSwitch fails when deploying a function deployed with from by the
// deployer to would strand from's resources on the cluster, by func's own rule
// (deployers.ValidateSwitch): the same deployer, and raw to keda (keda embeds
// raw), are the only safe moves.
func CheckDeployerSwitch(from, to string) error {
	return deployers.ValidateSwitch(from, to)
}

// CheckRecordedSwitch fails when func's own deploy, in the pipeline's deploy step,
// refuses m: func checks the deployer func.yaml asks for against the one it recorded
// the function deployed with (deploy.deployer), by the same rule, whenever func.yaml
// records a deploy (deploy.namespace): a stale record fails every build.
func CheckRecordedSwitch(m Metadata) error {
	if m.DeployedNamespace == "" {
		return nil
	}
	return CheckDeployerSwitch(m.DeployedWith, m.Deployer)
}
