package outcomes

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// The CloudEvents types of outcomes. A change of their data that a receiver could
// trip on is a new version (.v2), sent beside the old one for a release.
const (
	TypeBuildStarted   = "dev.functions.build.started.v1"
	TypeBuildSucceeded = "dev.functions.build.succeeded.v1"
	TypeBuildFailed    = "dev.functions.build.failed.v1"
	TypeDeploySeen     = "dev.functions.deploy.seen.v1"
)

// ExtensionNamespace is the CloudEvents extension attribute naming the Function's
// namespace, so that a Knative Trigger can filter on it (attributes, not data).
const ExtensionNamespace = "namespace"

// Outcome is one thing that became of a Function: a build's transition, or a
// deploy seen.
type Outcome struct {
	// Type is one of the Type constants.
	Type string
	// Time is when it happened, as the status records it.
	Time time.Time
	// Subject names what it is about, for the Function: the build's ID, the image
	// deployed.
	Subject string
	// Key tells apart outcomes of one subject that are not the same: the status
	// write of a deploy seen (an image deployed again after a rollback is another
	// deploy). Empty for builds, whose ID is new for each.
	Key string
	// Data is the event's JSON data.
	Data Data
}

// Data is the JSON data of every outcome; what does not apply is left out.
type Data struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Function is the function's name in its func.yaml (status.name).
	Function string `json:"function,omitempty"`
	// BuildID, Cause (status.build.cause, as written: Middleware, Request, ...),
	// Commit and PipelineRun are the build's.
	BuildID     string `json:"buildID,omitempty"`
	Cause       string `json:"cause,omitempty"`
	Commit      string `json:"commit,omitempty"`
	PipelineRun string `json:"pipelineRun,omitempty"`
	// Image and Middleware are what ran before, and what runs (or is to run) after.
	Image      Change `json:"image"`
	Middleware Change `json:"middleware"`
	// Reason and Message say why a build failed; FailedTask and FailedStep where;
	// Failures how many failed in a row.
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message,omitempty"`
	FailedTask string `json:"failedTask,omitempty"`
	FailedStep string `json:"failedStep,omitempty"`
	Failures   int32  `json:"failures,omitempty"`
	// Deployer is func's deployer that deployed the function (deploy seen).
	Deployer string `json:"deployer,omitempty"`
}

// Change is a value before and after an outcome.
type Change struct {
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// Of returns the Data that names fn.
func Of(fn *v1alpha1.Function) Data {
	return Data{Namespace: fn.Namespace, Name: fn.Name, UID: fn.UID, Function: fn.Status.Name}
}

// Source is the CloudEvents source of the outcomes of Function namespace/name: its
// path on the API server.
func Source(namespace, name string) string {
	return "/apis/" + v1alpha1.SchemeGroupVersion.String() + "/namespaces/" + namespace + "/functions/" + name
}

// ID is the event's id: the same for the same outcome of the same Function (its
// UID, the type, the subject, and Key), so that a receiver drops one sent twice, and
// another for another outcome.
func (o Outcome) ID() string {
	h := sha256.Sum256([]byte(string(o.Data.UID) + "\x00" + o.Type + "\x00" + o.Subject + "\x00" + o.Key))
	return hex.EncodeToString(h[:16])
}

// Event returns the CloudEvent of o.
func (o Outcome) Event() (cloudevents.Event, error) {
	e := cloudevents.NewEvent()
	e.SetID(o.ID())
	e.SetType(o.Type)
	e.SetSource(Source(o.Data.Namespace, o.Data.Name))
	e.SetSubject(o.Subject)
	e.SetTime(o.Time)
	e.SetExtension(ExtensionNamespace, o.Data.Namespace)
	if err := e.SetData(cloudevents.ApplicationJSON, o.Data); err != nil {
		return e, err
	}
	return e, e.Validate()
}
