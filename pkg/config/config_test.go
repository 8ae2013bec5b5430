package config

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func configMap(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "func-operator", Name: ConfigMapName},
		Data:       data,
	}
}

// durations returns the defaults with the two durations given.
func durations(check, git time.Duration) Config {
	c := Defaults()
	c.CheckInterval, c.GitTimeout = check, git
	return c
}

func TestDefaults(t *testing.T) {
	want := Config{CheckInterval: 5 * time.Minute, GitTimeout: 60 * time.Second, RegistryTimeout: 60 * time.Second,
		AutoUpdateMiddleware: true, UnknownMiddlewarePolicy: "Outdated", RebuildCommit: "Deployed", MinSourceBuildInterval: 2 * time.Minute,
		MaxConcurrentBuilds: 2, MaxConcurrentBuildsPerNamespace: intstr.FromString("50%"), BuildBackoff: time.Minute, BuildBackoffMax: time.Hour, BuildTimeout: time.Hour, OutageGrace: 30 * time.Minute, PipelineServiceAccount: "func-operator-builder",
		CloneMaxBytes: 100 << 20, CloneMaxFiles: 100000, CloneMaxObjectBytes: 32 << 20, CommitStoreMaxBytes: 64 << 20, InspectMaxMemory: 16 << 20, InspectMaxBytes: 4 << 30,
		ConditionMessageMaxBytes: 1024, EventMessageMaxBytes: 1024, BuildLogLines: 20,
		Events: Events{QueueSize: 1000, Timeout: 5 * time.Second},
		Base:   Base{Updates: "Report", CheckInterval: 10 * time.Minute, RebaseTimeout: 10 * time.Minute, WindowCauses: []string{"Base"}}}
	if diff := cmp.Diff(want, Defaults()); diff != "" {
		t.Errorf("Defaults() (-want +got):\n%s", diff)
	}
}

func TestFromConfigMap(t *testing.T) {
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want Config
		// wantErrs are the lines of the error, in order; none means no error.
		wantErrs []string
	}{{
		name: "absent ConfigMap",
		cm:   nil,
		want: Defaults(),
	}, {
		name: "ConfigMap without data",
		cm:   configMap(nil),
		want: Defaults(),
	}, {
		name: "unrelated keys are ignored",
		cm:   configMap(map[string]string{"_example": "checkInterval: 1m"}),
		want: Defaults(),
	}, {
		name: "middleware policy",
		cm:   configMap(map[string]string{KeyAutoUpdateMiddleware: "false", KeyUnknownMiddlewarePolicy: "UpToDate"}),
		want: func() Config {
			c := Defaults()
			c.AutoUpdateMiddleware = false
			c.UnknownMiddlewarePolicy = "UpToDate"
			return c
		}(),
	}, {
		name: "rebuild commit",
		cm:   configMap(map[string]string{KeyRebuildCommit: " Followed "}),
		want: func() Config { c := Defaults(); c.RebuildCommit = "Followed"; return c }(),
	}, {
		name: "deploy on commit, with its interval",
		cm:   configMap(map[string]string{KeyDeployOnCommit: " true", KeyMinSourceBuildInterval: "30s"}),
		want: func() Config {
			c := Defaults()
			c.DeployOnCommit, c.MinSourceBuildInterval = true, 30*time.Second
			return c
		}(),
	}, {
		name: "invalid deploy on commit: off",
		cm:   configMap(map[string]string{KeyDeployOnCommit: "yes", KeyMinSourceBuildInterval: "-1s"}),
		want: Defaults(),
		wantErrs: []string{
			`key deployOnCommit: "yes" is not true or false`,
			`key minSourceBuildInterval: -1s is shorter than the minimum 0s`,
		},
	}, {
		name: "invalid rebuild commit at start: only the deployed commit is ever built",
		cm:   configMap(map[string]string{KeyRebuildCommit: "tip"}),
		want: func() Config { c := Defaults(); c.RebuildCommit = "DeployedOnly"; return c }(),
		wantErrs: []string{
			`key rebuildCommit: "tip" is not Deployed, DeployedOnly or Followed`,
		},
	}, {
		name: "build settings",
		cm: configMap(map[string]string{
			KeyMaxConcurrentBuilds: "5", KeyBuildBackoff: "30s", KeyBuildBackoffMax: "10m",
			KeyPipelineServiceAccount: "builder", KeyDeployerImage: "ghcr.io/knative/func-utils@sha256:" + strings.Repeat("a", 64),
			KeyGitCloneImage:       "127.0.0.1:5000/git-clone:v1.1.0",
			"builderImage.pack.go": "ghcr.io/knative/builder-jammy-tiny:0.0.1", "builderImage.s2i.node": "registry.example/node:20",
		}),
		want: func() Config {
			c := Defaults()
			c.MaxConcurrentBuilds, c.BuildBackoff, c.BuildBackoffMax = 5, 30*time.Second, 10*time.Minute
			c.PipelineServiceAccount = "builder"
			c.DeployerImage = "ghcr.io/knative/func-utils@sha256:" + strings.Repeat("a", 64)
			c.GitCloneImage = "127.0.0.1:5000/git-clone:v1.1.0"
			c.BuilderImages = map[string]string{"pack/go": "ghcr.io/knative/builder-jammy-tiny:0.0.1", "s2i/node": "registry.example/node:20"}
			return c
		}(),
	}, {
		name: "zero builds pauses rebuilds",
		cm:   configMap(map[string]string{KeyMaxConcurrentBuilds: "0"}),
		want: func() Config { c := Defaults(); c.MaxConcurrentBuilds = 0; return c }(),
	}, {
		name: "invalid build settings keep their defaults",
		cm: configMap(map[string]string{
			KeyMaxConcurrentBuilds: "-1", KeyBuildBackoff: "soon", KeyPipelineServiceAccount: "Not_A_Name",
			KeyDeployerImage: "UPPER CASE", "builderImage.docker.go": "x:1", "builderImage.pack.go": "::",
			KeyGitCloneImage: "a b",
		}),
		want: Defaults(),
		wantErrs: []string{
			`key buildBackoff: "soon" is not a duration such as 5m or 90s`,
			`key builderImage.docker.go: name it builderImage.<pack|s2i>.<runtime>`,
			`key builderImage.pack.go: "::" is not an image reference`,
			`key deployerImage: "UPPER CASE" is not an image reference`,
			`key gitCloneImage: "a b" is not an image reference`,
			`key maxConcurrentBuilds: "-1" is not a whole number of 0 or more`,
			`key pipelineServiceAccount: "Not_A_Name" is not a ServiceAccount name`,
		},
	}, {
		name: "builds never run as the default ServiceAccount",
		cm:   configMap(map[string]string{KeyPipelineServiceAccount: " default "}),
		want: Defaults(),
		wantErrs: []string{
			`key pipelineServiceAccount: builds never run as the ServiceAccount "default", which ordinary pods use`,
		},
	}, {
		name: "a backoff cap below the backoff is raised to it",
		cm:   configMap(map[string]string{KeyBuildBackoff: "10m", KeyBuildBackoffMax: "1m"}),
		want: func() Config {
			c := Defaults()
			c.BuildBackoff, c.BuildBackoffMax = 10*time.Minute, 10*time.Minute
			return c
		}(),
		wantErrs: []string{`key buildBackoffMax: 1m0s is shorter than buildBackoff 10m0s`},
	}, {
		name: "invalid middleware policy at start: the defaults, but never rebuilds turned on by mistake",
		cm:   configMap(map[string]string{KeyAutoUpdateMiddleware: "sometimes", KeyUnknownMiddlewarePolicy: "rebuild"}),
		want: func() Config { c := Defaults(); c.AutoUpdateMiddleware = false; return c }(), // rebuildCommit absent: its default
		wantErrs: []string{
			`key autoUpdateMiddleware: "sometimes" is not true or false`,
			`key unknownMiddlewarePolicy: "rebuild" is neither Outdated nor UpToDate`,
		},
	}, {
		name: "valid values",
		cm:   configMap(map[string]string{KeyCheckInterval: "90s", KeyGitTimeout: "2m"}),
		want: durations(90*time.Second, 2*time.Minute),
	}, {
		name: "compound durations",
		cm:   configMap(map[string]string{KeyCheckInterval: "1h30m", KeyGitTimeout: "1m30s"}),
		want: durations(90*time.Minute, 90*time.Second),
	}, {
		name: "exactly the minimums",
		cm:   configMap(map[string]string{KeyCheckInterval: "10s", KeyGitTimeout: "1s"}),
		want: durations(MinCheckInterval, time.Second),
	}, {
		name:     "invalid checkInterval keeps its default, the valid key applies",
		cm:       configMap(map[string]string{KeyCheckInterval: "5 minutes", KeyGitTimeout: "30s"}),
		want:     durations(DefaultCheckInterval, 30*time.Second),
		wantErrs: []string{`key checkInterval: "5 minutes" is not a duration such as 5m or 90s`},
	}, {
		name:     "number without unit",
		cm:       configMap(map[string]string{KeyGitTimeout: "30"}),
		want:     Defaults(),
		wantErrs: []string{`key gitTimeout: "30" is not a duration such as 5m or 90s`},
	}, {
		name:     "empty value",
		cm:       configMap(map[string]string{KeyCheckInterval: ""}),
		want:     Defaults(),
		wantErrs: []string{`key checkInterval: "" is not a duration such as 5m or 90s`},
	}, {
		name:     "checkInterval below the minimum",
		cm:       configMap(map[string]string{KeyCheckInterval: "1s"}),
		want:     Defaults(),
		wantErrs: []string{"key checkInterval: 1s is shorter than the minimum 10s"},
	}, {
		name:     "gitTimeout below the minimum",
		cm:       configMap(map[string]string{KeyGitTimeout: "500ms", KeyCheckInterval: "1m"}),
		want:     durations(time.Minute, DefaultGitTimeout),
		wantErrs: []string{"key gitTimeout: 500ms is shorter than the minimum 1s"},
	}, {
		name:     "registryTimeout",
		cm:       configMap(map[string]string{KeyRegistryTimeout: "5s"}),
		want:     func() Config { c := Defaults(); c.RegistryTimeout = 5 * time.Second; return c }(),
		wantErrs: nil,
	}, {
		name:     "registryTimeout below the minimum",
		cm:       configMap(map[string]string{KeyRegistryTimeout: "0s"}),
		want:     Defaults(),
		wantErrs: []string{"key registryTimeout: 0s is shorter than the minimum 1s"},
	}, {
		name:     "negative duration",
		cm:       configMap(map[string]string{KeyGitTimeout: "-1m"}),
		want:     Defaults(),
		wantErrs: []string{"key gitTimeout: -1m0s is shorter than the minimum 1s"},
	}, {
		name: "both invalid: one error per key, sorted by key",
		cm:   configMap(map[string]string{KeyGitTimeout: "soon", KeyCheckInterval: "0"}),
		want: Defaults(),
		wantErrs: []string{
			"key checkInterval: 0s is shorter than the minimum 10s",
			`key gitTimeout: "soon" is not a duration such as 5m or 90s`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromConfigMap(tt.cm)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			var gotErrs []string
			if err != nil {
				gotErrs = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tt.wantErrs, gotErrs); diff != "" {
				t.Errorf("error lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStore(t *testing.T) {
	s := NewStore()
	if diff := cmp.Diff(Defaults(), s.Load()); diff != "" {
		t.Errorf("new Store (-want +got):\n%s", diff)
	}

	c := Config{CheckInterval: time.Minute, GitTimeout: 5 * time.Second}
	s.Set(c)
	c.CheckInterval = time.Hour // the Store holds a copy
	if diff := cmp.Diff(Config{CheckInterval: time.Minute, GitTimeout: 5 * time.Second}, s.Load()); diff != "" {
		t.Errorf("after Set (-want +got):\n%s", diff)
	}

	loaded := s.Load()
	loaded.GitTimeout = time.Hour // neither does a loaded copy write through
	if diff := cmp.Diff(5*time.Second, s.Load().GitTimeout); diff != "" {
		t.Errorf("GitTimeout after changing a loaded copy (-want +got):\n%s", diff)
	}
}

func TestStore_Concurrent(t *testing.T) {
	s := NewStore()
	a := Config{CheckInterval: time.Minute, GitTimeout: time.Second}
	b := Config{CheckInterval: time.Hour, GitTimeout: time.Minute}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if j%2 == 0 {
					s.Set(a)
				} else {
					s.Set(b)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				// Every Load is one whole configuration, never a mix of two.
				if got := s.Load(); !reflect.DeepEqual(got, a) && !reflect.DeepEqual(got, b) && !reflect.DeepEqual(got, Defaults()) {
					t.Errorf("Load() = %+v, a torn configuration", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestWatcher_Reconcile(t *testing.T) {
	const ns = "func-operator"
	tests := []struct {
		name       string
		objs       []*corev1.ConfigMap
		getErr     error
		wantErr    string
		want       Config
		wantEvents []string
	}{{
		name: "absent ConfigMap means the defaults",
		want: Defaults(),
	}, {
		name: "ConfigMap of another namespace is not read",
		objs: []*corev1.ConfigMap{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: ConfigMapName},
			Data:       map[string]string{KeyCheckInterval: "1m"},
		}},
		want: Defaults(),
	}, {
		name: "valid ConfigMap",
		objs: []*corev1.ConfigMap{configMap(map[string]string{KeyCheckInterval: "1m", KeyGitTimeout: "10s"})},
		want: durations(time.Minute, 10*time.Second),
	}, {
		name:       "invalid key, first read: the start value, reported",
		objs:       []*corev1.ConfigMap{configMap(map[string]string{KeyCheckInterval: "1m", KeyGitTimeout: "forever"})},
		want:       durations(time.Minute, DefaultGitTimeout),
		wantEvents: []string{`Warning InvalidConfig invalid keys keep their last good values: key gitTimeout: "forever" is not a duration such as 5m or 90s`},
	}, {
		name:       "invalid autoUpdateMiddleware, first read: rebuilds stay off",
		objs:       []*corev1.ConfigMap{configMap(map[string]string{KeyAutoUpdateMiddleware: "yes please"})},
		want:       func() Config { c := Defaults(); c.AutoUpdateMiddleware = false; return c }(),
		wantEvents: []string{`Warning InvalidConfig invalid keys keep their last good values: key autoUpdateMiddleware: "yes please" is not true or false`},
	}, {
		name:       "unknown key reported, and ignored",
		objs:       []*corev1.ConfigMap{configMap(map[string]string{"checkinterval": "1m"})},
		want:       Defaults(),
		wantEvents: []string{`Warning UnknownConfigKey ignored, as the operator does not know them: key checkinterval: unknown, and ignored (misspelt?)`},
	}, {
		name:    "API error keeps the configuration it had",
		objs:    []*corev1.ConfigMap{configMap(map[string]string{KeyCheckInterval: "1m"})},
		getErr:  apierrors.NewServiceUnavailable("etcd is down"),
		want:    Config{CheckInterval: time.Hour, GitTimeout: time.Hour},
		wantErr: "reading ConfigMap func-operator/func-operator-config: etcd is down",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			store := NewStore()
			store.Set(Config{CheckInterval: time.Hour, GitTimeout: time.Hour}) // stale
			w := &Watcher{
				Client:    &configMapReader{objs: tt.objs, err: tt.getErr},
				Recorder:  rec,
				Namespace: ns,
				Store:     store,
			}
			res, err := w.Reconcile(context.Background(), reconcile.Request{})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Reconcile error = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if diff := cmp.Diff(reconcile.Result{}, res); diff != "" {
				t.Errorf("Result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, store.Load()); diff != "" {
				t.Errorf("stored Config (-want +got):\n%s", diff)
			}
			close(rec.Events)
			var events []string
			for e := range rec.Events {
				events = append(events, e)
			}
			if diff := cmp.Diff(tt.wantEvents, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWatcher_KeepsLastGood: with rebuilds turned off, a typo in the value keeps them
// off (measured before: "off" fell back to the default and a rebuild started within
// 20 s); fixing the value applies it.
func TestWatcher_KeepsLastGood(t *testing.T) {
	reader := &configMapReader{objs: []*corev1.ConfigMap{configMap(map[string]string{KeyAutoUpdateMiddleware: "false"})}}
	store := NewStore()
	w := &Watcher{Client: reader, Recorder: record.NewFakeRecorder(10), Namespace: "func-operator", Store: store}
	for i, step := range []struct {
		value string
		want  bool
	}{{"false", false}, {"off", false}, {"true", true}, {"on", true}, {"false", false}} {
		reader.objs[0].Data[KeyAutoUpdateMiddleware] = step.value
		if _, err := w.Reconcile(context.Background(), reconcile.Request{}); err != nil {
			t.Fatal(err)
		}
		if got := store.Load().AutoUpdateMiddleware; got != step.want {
			t.Errorf("step %d, %q: autoUpdateMiddleware = %t, want %t", i, step.value, got, step.want)
		}
	}
}

// configMapReader is a client.Reader serving ConfigMaps from memory.
type configMapReader struct {
	objs []*corev1.ConfigMap
	err  error
}

func (r *configMapReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if r.err != nil {
		return r.err
	}
	for _, cm := range r.objs {
		if cm.Namespace == key.Namespace && cm.Name == key.Name {
			cm.DeepCopyInto(obj.(*corev1.ConfigMap))
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
}

func (r *configMapReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("List is not supported")
}

func TestConfig_BuildRetryDelay(t *testing.T) {
	c := Defaults()
	c.BuildBackoff, c.BuildBackoffMax = time.Minute, 10*time.Minute
	for failures, want := range map[int32]time.Duration{0: time.Minute, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 4: 8 * time.Minute, 5: 10 * time.Minute, 40: 10 * time.Minute} {
		if got := c.BuildRetryDelay(failures); got != want {
			t.Errorf("BuildRetryDelay(%d) = %s, want %s", failures, got, want)
		}
	}
}

// A cap no one means (past 2^62 ns) overflows the doubling: the delay is never
// negative (a status retryAfter in 1677), and the positive control shows it doubled
// up to there.
func TestConfig_BuildRetryDelayOverflow(t *testing.T) {
	c := Defaults()
	c.BuildBackoff, c.BuildBackoffMax = time.Minute, time.Duration(math.MaxInt64)
	if got := c.BuildRetryDelay(10); got != 512*time.Minute {
		t.Errorf("BuildRetryDelay(10) = %s, want %s", got, 512*time.Minute)
	}
	if got := c.BuildRetryDelay(60); got < 0 {
		t.Errorf("BuildRetryDelay(60) = %s, want no negative delay", got)
	}
}

// TestUpdate: a key whose value is invalid keeps its last good value, a key that is
// absent has its default, and a key the operator does not know is named.
func TestUpdate(t *testing.T) {
	last := Defaults()
	last.AutoUpdateMiddleware = false
	last.CheckInterval = 20 * time.Minute
	last.MaxConcurrentBuilds = 5
	last.BuilderImages = map[string]string{"pack/go": "127.0.0.1:5000/builder:last"}
	tests := []struct {
		name        string
		data        map[string]string
		want        func(c *Config)
		wantInvalid []string
		wantUnknown []string
	}{{
		// Measured before: "off" fell back to the default, true, and started rebuilds.
		name: "a typo in autoUpdateMiddleware keeps rebuilds off",
		data: map[string]string{KeyAutoUpdateMiddleware: "off", KeyCheckInterval: "20m", KeyMaxConcurrentBuilds: "5"},
		want: func(c *Config) {
			c.AutoUpdateMiddleware, c.CheckInterval, c.MaxConcurrentBuilds = false, 20*time.Minute, 5
		},
		wantInvalid: []string{`key autoUpdateMiddleware: "off" is not true or false`},
	}, {
		name: "invalid values keep theirs, valid ones apply",
		data: map[string]string{KeyAutoUpdateMiddleware: "false", KeyCheckInterval: "soon", KeyMaxConcurrentBuilds: "many",
			KeyBuilderImagePrefix + "pack.go": "::", KeyGitTimeout: "30s"},
		want: func(c *Config) {
			c.AutoUpdateMiddleware, c.CheckInterval, c.MaxConcurrentBuilds, c.GitTimeout = false, 20*time.Minute, 5, 30*time.Second
			c.BuilderImages = map[string]string{"pack/go": "127.0.0.1:5000/builder:last"}
		},
		wantInvalid: []string{
			`key builderImage.pack.go: "::" is not an image reference`,
			`key checkInterval: "soon" is not a duration such as 5m or 90s`,
			`key maxConcurrentBuilds: "many" is not a whole number of 0 or more`,
		},
	}, {
		name: "a key removed goes back to its default",
		data: map[string]string{},
		want: func(*Config) {},
	}, {
		name: "a misspelt key is named, and sets nothing; the documented example is no key",
		data: map[string]string{"autoUpdateMiddlware": "false", "maxConcurrentbuilds": "0", ExampleKey: "anything",
			KeyBuilderImagePrefix + "docker.go": "127.0.0.1:5000/b:1"},
		want:        func(*Config) {},
		wantUnknown: []string{"autoUpdateMiddlware", "builderImage.docker.go", "maxConcurrentbuilds"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Defaults()
			tt.want(&want)
			got, invalid, unknown := Update(last, configMap(tt.data))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			var msgs []string
			for _, err := range invalid {
				msgs = append(msgs, err.Error())
			}
			if diff := cmp.Diff(tt.wantInvalid, msgs); diff != "" {
				t.Errorf("invalid (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnknown, unknown); diff != "" {
				t.Errorf("unknown (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBuildsPerNamespace: maxConcurrentBuildsPerNamespace as a number or a share of
// maxConcurrentBuilds, rounded up, at least 1, at most the budget; and what the key
// refuses, keeping the last good value.
func TestBuildsPerNamespace(t *testing.T) {
	for _, tt := range []struct {
		value       string
		builds      int
		want        int
		wantRefused bool
	}{
		{value: "", builds: 2, want: 1},     // the default, 50%
		{value: "", builds: 3, want: 2},     // rounded up
		{value: "", builds: 0, want: 1},     // rebuilds paused: no namespace runs one anyway
		{value: "1", builds: 4, want: 1},    //
		{value: " 3 ", builds: 4, want: 3},  //
		{value: "9", builds: 4, want: 4},    // at most the budget
		{value: "100%", builds: 4, want: 4}, // one namespace may use every slot
		{value: "1%", builds: 4, want: 1},   // at least 1
		{value: "25%", builds: 10, want: 3}, //
		{value: "0", builds: 4, wantRefused: true},
		{value: "0%", builds: 4, wantRefused: true},
		{value: "101%", builds: 4, wantRefused: true},
		{value: "-1", builds: 4, wantRefused: true},
		{value: "+5%", builds: 4, wantRefused: true},
		{value: "half", builds: 4, wantRefused: true},
		{value: "1.5", builds: 4, wantRefused: true},
	} {
		t.Run(tt.value, func(t *testing.T) {
			data := map[string]string{KeyMaxConcurrentBuilds: strconv.Itoa(tt.builds)}
			if tt.value != "" {
				data[KeyMaxConcurrentBuildsPerNamespace] = tt.value
			}
			c, err := FromConfigMap(configMap(data))
			if tt.wantRefused {
				if err == nil || !strings.Contains(err.Error(), "key maxConcurrentBuildsPerNamespace: "+strconv.Quote(tt.value)+" is not a whole number of 1 or more, nor a percentage from 1% to 100%") {
					t.Fatalf("err = %v, want the key refused", err)
				}
				if got := c.BuildsPerNamespace(); got != max(tt.builds/2+tt.builds%2, 1) {
					t.Errorf("BuildsPerNamespace() = %d after a refused value, want the default's %d", got, max(tt.builds/2+tt.builds%2, 1))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.BuildsPerNamespace(); got != tt.want {
				t.Errorf("BuildsPerNamespace() = %d, want %d", got, tt.want)
			}
		})
	}
}
