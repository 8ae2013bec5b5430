package v1alpha1

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"

	"github.com/fnops/func-operator/pkg/text"
)

// Annotations that keep a Function's settings across `func deploy`. Every `func deploy`
// (func v0.50 and later) updates the Function of its function with a spec that holds
// only the repository's url, branch and path and the registry Secret: the spec fields
// below are reset each time. It sends the Function's metadata back as it read it, so
// these annotations stay. Each applies only while its spec field is unset.
const (
	// AnnotationAutoUpdateMiddleware ("true" or "false") is spec.autoUpdateMiddleware
	// for a Function whose spec does not set it.
	AnnotationAutoUpdateMiddleware = "functions.dev/auto-update-middleware"
	// AnnotationSuspend ("true" or "false") is spec.suspend for a Function whose
	// spec.suspend is false or unset (the two cannot be told apart).
	AnnotationSuspend = "functions.dev/suspend"
	// AnnotationBuildHistoryLimit (an integer from 0 to 20) is spec.buildHistoryLimit
	// for a Function whose spec does not set it.
	AnnotationBuildHistoryLimit = "functions.dev/build-history-limit"
	// AnnotationRebuildCommit (Deployed, DeployedOnly or Followed) is which commit a
	// rebuild builds, for this Function, instead of the ConfigMap's rebuildCommit. It
	// has no spec field: one would be reset by every `func deploy`.
	AnnotationRebuildCommit = "functions.dev/rebuild-commit"
)

// AnnotationLastDeployed is the annotation `func deploy` (func v0.50 and later) sets
// on the Function of its function on every deploy: when, in RFC 3339. The operator
// reads it (status.deployment.imageBuilt, a history entry) and never writes it.
const AnnotationLastDeployed = "functions.knative.dev/last-deployed"

// HistoryDeployed is the history entry of a `func deploy`, in upstream's words.
const HistoryDeployed = "Function was deployed"

// MaxBuildHistoryLimit is the largest spec.buildHistoryLimit (and annotation
// functions.dev/build-history-limit) allowed.
const MaxBuildHistoryLimit = 20

// Where a setting of Settings comes from, as messages name it.
const (
	settingFromSpec    = "spec."
	settingFromDefault = "default"
)

// Settings are a Function's settings that `func deploy` resets in its spec, as they
// apply: from the spec when it sets them, else from their annotation, else the
// defaults. The reconciler reads them only through here.
//
// +kubebuilder:object:generate=false
type Settings struct {
	// AutoUpdateMiddleware is whether outdated middleware is rebuilt; nil when
	// neither the spec nor the annotation decides: the operator's ConfigMap does.
	AutoUpdateMiddleware *bool
	// AutoUpdateFrom names what decided AutoUpdateMiddleware (empty when nil).
	AutoUpdateFrom string

	// Suspend stops checks and rebuilds.
	Suspend bool
	// SuspendFrom names what decided Suspend.
	SuspendFrom string

	// BuildHistoryLimit is how many finished PipelineRuns are kept; negative while
	// the annotation that decides it is invalid: then none is deleted.
	BuildHistoryLimit int
	// BuildHistoryLimitFrom names what decided BuildHistoryLimit.
	BuildHistoryLimitFrom string

	// RebuildCommit is the rebuild-commit policy of annotation
	// functions.dev/rebuild-commit (RebuildCommitDeployed, ...); empty when the
	// annotation is absent or invalid: the operator's ConfigMap decides, or, while it
	// is invalid, nothing is rebuilt (HoldRebuilds).
	RebuildCommit string

	// DeployOnCommitSet is annotation functions.dev/deploy-on-commit; nil when it is
	// absent or invalid: the operator's ConfigMap decides (DeployOnCommit).
	DeployOnCommitSet *bool

	// BaseUpdatesSet is annotation functions.dev/base-updates (BaseUpdatesOff, ...); empty
	// when it is absent or invalid: the operator's ConfigMap decides (BaseUpdates).
	BaseUpdatesSet string
	// BaseUpdatesInvalid: the annotation is set and does not parse; the base is
	// reported only until it is fixed.
	BaseUpdatesInvalid bool

	// HoldRebuilds is true while an annotation that decides suspend, auto-update or
	// the commit a rebuild builds is invalid: nothing is rebuilt until it is fixed
	// (checks go on).
	HoldRebuilds bool

	// Invalid describes each settings annotation whose value does not parse, sorted
	// by annotation, with what applies meanwhile. An invalid annotation the spec
	// overrides is listed too: it would apply once `func deploy` resets the spec.
	Invalid []string
}

// Settings returns the Function's settings as they apply. The precedence, for each:
// the spec field when set (for suspend: when true), else its annotation when valid,
// else the default (auto-update: the operator's ConfigMap; suspend: false; build
// history: 3). An invalid annotation that would decide never makes the operator do
// what it could not undo: an invalid suspend or auto-update annotation holds rebuilds
// (HoldRebuilds), an invalid build history limit deletes no PipelineRun.
func (f *Function) Settings() Settings {
	s := Settings{}
	ann := f.GetAnnotations()
	invalid := map[string]string{}
	bad := func(key string, err error, meanwhile string) {
		invalid[key] = fmt.Sprintf("annotation %s: %s%s", key, err, meanwhile)
	}

	// Auto-update.
	v, has := ann[AnnotationAutoUpdateMiddleware]
	auto, err := parseBoolSetting(v)
	switch {
	case f.Spec.AutoUpdateMiddleware != nil:
		s.AutoUpdateMiddleware, s.AutoUpdateFrom = f.Spec.AutoUpdateMiddleware, settingFromSpec+"autoUpdateMiddleware"
		if has && err != nil {
			bad(AnnotationAutoUpdateMiddleware, err, " (spec.autoUpdateMiddleware applies now)")
		}
	case has && err != nil:
		off := false
		s.AutoUpdateMiddleware, s.AutoUpdateFrom, s.HoldRebuilds = &off, annotationSource(AnnotationAutoUpdateMiddleware), true
		bad(AnnotationAutoUpdateMiddleware, err, ": no rebuild until it is fixed")
	case has:
		s.AutoUpdateMiddleware, s.AutoUpdateFrom = &auto, annotationSource(AnnotationAutoUpdateMiddleware)
	}

	// Suspend.
	v, has = ann[AnnotationSuspend]
	suspend, err := parseBoolSetting(v)
	switch {
	case f.Spec.Suspend:
		s.Suspend, s.SuspendFrom = true, settingFromSpec+"suspend"
		if has && err != nil {
			bad(AnnotationSuspend, err, " (spec.suspend applies now)")
		}
	case has && err != nil:
		s.SuspendFrom, s.HoldRebuilds = annotationSource(AnnotationSuspend), true
		bad(AnnotationSuspend, err, ": checked, but no rebuild until it is fixed")
	case has:
		s.Suspend, s.SuspendFrom = suspend, annotationSource(AnnotationSuspend)
	default:
		s.SuspendFrom = settingFromSpec + "suspend"
	}

	// Build history.
	v, has = ann[AnnotationBuildHistoryLimit]
	n, err := parseHistoryLimit(v)
	switch {
	case f.Spec.BuildHistoryLimit != nil:
		s.BuildHistoryLimit, s.BuildHistoryLimitFrom = int(*f.Spec.BuildHistoryLimit), settingFromSpec+"buildHistoryLimit"
		if has && err != nil {
			bad(AnnotationBuildHistoryLimit, err, " (spec.buildHistoryLimit applies now)")
		}
	case has && err != nil:
		s.BuildHistoryLimit, s.BuildHistoryLimitFrom = -1, annotationSource(AnnotationBuildHistoryLimit)
		bad(AnnotationBuildHistoryLimit, err, ": no finished PipelineRun is deleted until it is fixed")
	case has:
		s.BuildHistoryLimit, s.BuildHistoryLimitFrom = n, annotationSource(AnnotationBuildHistoryLimit)
	default:
		s.BuildHistoryLimit, s.BuildHistoryLimitFrom = DefaultBuildHistoryLimit, settingFromDefault
	}

	// Rebuild commit: no spec field.
	if v, has := ann[AnnotationRebuildCommit]; has {
		switch p := strings.TrimSpace(v); p {
		case RebuildCommitDeployed, RebuildCommitDeployedOnly, RebuildCommitFollowed:
			s.RebuildCommit = p
		default:
			s.HoldRebuilds = true
			bad(AnnotationRebuildCommit, fmt.Errorf("%s is not %s, %s or %s", quoteValue(v), RebuildCommitDeployed, RebuildCommitDeployedOnly, RebuildCommitFollowed),
				": no rebuild until it is fixed")
		}
	}

	// Deploy on commit: no spec field. An invalid value builds no new commit it would
	// not have built anyway: the ConfigMap's default stands.
	if v, has := ann[AnnotationDeployOnCommit]; has {
		on, err := parseBoolSetting(v)
		if err != nil {
			bad(AnnotationDeployOnCommit, err, " (ConfigMap func-operator-config's deployOnCommit applies now)")
		} else {
			s.DeployOnCommitSet = &on
		}
	}

	// Base updates: no spec field. An invalid value reports only: it never rebases or
	// rebuilds what it may not have been meant to.
	if v, has := ann[AnnotationBaseUpdates]; has {
		if p, err := ParseBaseUpdates(v); err != nil {
			s.BaseUpdatesInvalid = true
			bad(AnnotationBaseUpdates, err, ": the base is reported only until it is fixed")
		} else {
			s.BaseUpdatesSet = p
		}
	}

	keys := make([]string, 0, len(invalid))
	for k := range invalid {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.Invalid = append(s.Invalid, invalid[k])
	}
	return s
}

// AutoUpdate decides whether outdated middleware is rebuilt, given the operator's
// ConfigMap default, and which setting decided (status.middleware.autoUpdate.source).
func (s Settings) AutoUpdate(operatorDefault bool) AutoUpdateStatus {
	switch {
	case s.HoldRebuilds:
		return AutoUpdateStatus{Enabled: false, Source: AutoUpdateSourceAnnotation}
	case s.AutoUpdateMiddleware == nil:
		return AutoUpdateStatus{Enabled: operatorDefault, Source: AutoUpdateSourceOperatorConfig}
	case strings.HasPrefix(s.AutoUpdateFrom, settingFromSpec):
		return AutoUpdateStatus{Enabled: *s.AutoUpdateMiddleware, Source: AutoUpdateSourceFunction}
	default:
		return AutoUpdateStatus{Enabled: *s.AutoUpdateMiddleware, Source: AutoUpdateSourceAnnotation}
	}
}

// FollowsOperatorDefault reports whether the operator's ConfigMap decides auto-update.
func (s Settings) FollowsOperatorDefault() bool {
	return s.AutoUpdateMiddleware == nil && !s.HoldRebuilds
}

// RebuildFrom returns the rebuild-commit policy that applies, given the operator's
// ConfigMap default, and which setting decided it (status.middleware.rebuildFrom).
func (s Settings) RebuildFrom(operatorDefault string) (policy, source string) {
	if s.RebuildCommit != "" {
		return s.RebuildCommit, AutoUpdateSourceAnnotation
	}
	return operatorDefault, AutoUpdateSourceOperatorConfig
}

func annotationSource(key string) string { return "annotation " + key }

// maxQuotedValue is how much of an invalid annotation value messages quote.
const maxQuotedValue = 64

// quoteValue quotes an annotation value for a message, cut to maxQuotedValue bytes
// (on a character boundary): annotations may hold up to 256 KiB.
func quoteValue(v string) string {
	if len(v) <= maxQuotedValue {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(text.Prefix(v, maxQuotedValue)), len(v))
}

// parseBoolSetting parses a boolean setting as the operator's ConfigMap does.
func parseBoolSetting(v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("%s is not true or false", quoteValue(v))
	}
	return b, nil
}

func parseHistoryLimit(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > MaxBuildHistoryLimit {
		return 0, fmt.Errorf("%s is not an integer from 0 to %d", quoteValue(v), MaxBuildHistoryLimit)
	}
	return n, nil
}

// FunctionConditionSettingsValid is False, with severity Warning, while a settings
// annotation (functions.dev/auto-update-middleware, functions.dev/suspend,
// functions.dev/build-history-limit) has a value that does not parse; it is absent
// otherwise. It never gates Ready.
const FunctionConditionSettingsValid apis.ConditionType = "SettingsValid"

// ReasonInvalidAnnotation is a False SettingsValid.
const ReasonInvalidAnnotation = "InvalidAnnotation"

// MarkSettings records the settings annotations that do not parse (SettingsValid
// False, severity Warning), or removes SettingsValid when every one parses.
func (fs *FunctionStatus) MarkSettings(s Settings) {
	m := functionCondSet.Manage(fs)
	if len(s.Invalid) == 0 {
		_ = m.ClearCondition(FunctionConditionSettingsValid) // fails only for conditions of the set
		return
	}
	m.SetCondition(apis.Condition{
		Type: FunctionConditionSettingsValid, Status: corev1.ConditionFalse, Reason: ReasonInvalidAnnotation,
		Message: strings.Join(s.Invalid, "; "), Severity: apis.ConditionSeverityWarning,
	})
}
