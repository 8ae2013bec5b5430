package workload

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kedav1alpha1 "github.com/kedacore/http-add-on/operator/apis/http/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fnops/func-operator/pkg/funclib"
	"github.com/fnops/func-operator/pkg/knative"
)

// This file measures what the operator's caches keep of a raw or keda function: the
// Deployment, core Service (metadata only) and HTTPScaledObject that func v0.50.1
// wrote (testdata/, with func.yaml envs, volumes, probes and security context, as the
// API server stores them), at three levels:
//
//   - stored: the object as the informer decodes it, managedFields included;
//   - stripped: without managedFields (cache.TransformStripManagedFields, the
//     operator's default transform for every kind);
//   - slim: after Slim too, what the operator's cache keeps.
//
// TestCachedSizes compares their JSON encodings (deterministic, so it can assert);
// BenchmarkCachedObject measures the heap a kept copy takes (kept-B/obj), which is
// what a function costs the caches.

// cachedKind is a kind the operator caches for raw and keda functions, or (typed
// Service) one it does not, to compare.
type cachedKind struct {
	name, file string
	// decode decodes the stored JSON as the informer receives it.
	decode func(data []byte) (client.Object, error)
}

func decodeAs[T any, PT interface {
	*T
	client.Object
}]() func([]byte) (client.Object, error) {
	return func(data []byte) (client.Object, error) {
		var o PT = new(T)
		return o, json.Unmarshal(data, o)
	}
}

var cachedKinds = []cachedKind{
	{name: "Deployment", file: "raw-deployment.yaml", decode: decodeAs[appsv1.Deployment]()},
	// The operator caches core Services by metadata only: the API server sends
	// nothing else (decoding the whole object into PartialObjectMetadata drops the rest
	// the same way), and controller-runtime sets the kind.
	{name: "Service (metadata)", file: "raw-service.yaml", decode: decodeAs[metav1.PartialObjectMetadata]()},
	{name: "HTTPScaledObject", file: "keda-httpscaledobject.yaml", decode: decodeAs[kedav1alpha1.HTTPScaledObject]()},
	// Not cached so: what a typed Service cache would keep (Slim leaves a typed Service
	// as it is).
	{name: "Service (typed, not cached)", file: "raw-service.yaml", decode: decodeAs[corev1.Service]()},
	// For comparison, what a Knative function costs the caches: its Knative Service,
	// which the operator caches cut by knative.Slim.
	{name: "Knative Service (knative)", file: "knative-service.yaml", decode: decodeAs[servingv1.Service]()},
}

// levels are the transforms of the three levels, in order.
var levels = []struct {
	name      string
	transform func(any) (any, error)
}{
	{"stored", func(o any) (any, error) { return o, nil }},
	{"stripped", cache.TransformStripManagedFields()},
	{"slim", func(o any) (any, error) {
		o, err := cache.TransformStripManagedFields()(o)
		if err != nil {
			return nil, err
		}
		if o, err = knative.Slim(o); err != nil { // the operator's transform of Knative Services
			return nil, err
		}
		return Slim(o)
	}},
}

// storedJSON reads testdata/file as JSON.
func storedJSON(tb testing.TB, file string) []byte {
	tb.Helper()
	y, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		tb.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return j
}

// kept decodes data as k and applies the level's transform: what the cache keeps.
func kept(tb testing.TB, k cachedKind, transform func(any) (any, error), data []byte) any {
	o, err := k.decode(data)
	if err != nil {
		tb.Fatalf("%s: %v", k.file, err)
	}
	out, err := transform(o)
	if err != nil {
		tb.Fatalf("%s: %v", k.file, err)
	}
	return out
}

func jsonSize(tb testing.TB, o any) int {
	tb.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		tb.Fatal(err)
	}
	return len(b)
}

// TestCachedSizes compares the JSON encodings of the stored, stripped and slimmed
// objects (a measure of their content, not of their heap: BenchmarkCachedObject), and
// checks that the slimmed ones still say what the full ones say.
func TestCachedSizes(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %8s %8s %8s  (JSON bytes)\n", "", "stored", "stripped", "slim")
	for _, k := range cachedKinds {
		data := storedJSON(t, k.file)
		sizes := make([]int, len(levels))
		for i, l := range levels {
			sizes[i] = jsonSize(t, kept(t, k, l.transform, data))
		}
		fmt.Fprintf(&table, "%-28s %8d %8d %8d\n", k.name, sizes[0], sizes[1], sizes[2])
		if strings.Contains(k.name, "not cached") || strings.HasPrefix(k.name, "Knative") {
			continue
		}
		// Slim keeps about a kilobyte at most of these (mostly the image reference, the
		// identity and the conditions' messages), less than stripping managedFields
		// alone keeps: of the Deployment, a third.
		if stripped, slim := sizes[1], sizes[2]; slim > 1536 || slim >= stripped || (k.name == "Deployment" && 3*slim > stripped) {
			t.Errorf("%s: slimmed to %d JSON bytes from %d without managedFields: want at most 1.5 KiB and less (a third of the Deployment)", k.name, slim, stripped)
		}
	}
	t.Log("\n" + table.String())

	// What the slimmed objects say is what the full ones say.
	full := func(file string, o client.Object) client.Object {
		if err := json.Unmarshal(storedJSON(t, file), o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	slim := func(o client.Object) client.Object {
		s, err := Slim(o)
		if err != nil {
			t.Fatal(err)
		}
		return s.(client.Object)
	}
	d := full("raw-deployment.yaml", &appsv1.Deployment{}).(*appsv1.Deployment)
	svc := full("raw-service.yaml", &metav1.PartialObjectMetadata{}).(*metav1.PartialObjectMetadata)
	so := full("keda-httpscaledobject.yaml", &kedav1alpha1.HTTPScaledObject{}).(*kedav1alpha1.HTTPScaledObject)
	for _, deployer := range []string{funclib.DeployerRaw, funclib.DeployerKeda} {
		fullW := &Workload{Deployer: deployer, Deployment: d, Service: svc, ScaledObject: so}
		slimW := &Workload{Deployer: deployer, Deployment: slim(d).(*appsv1.Deployment), Service: slim(svc).(*metav1.PartialObjectMetadata),
			ScaledObject: slim(so).(*kedav1alpha1.HTTPScaledObject)}
		type said struct {
			Name, Image string
			Routes      []string
			Readiness   Readiness
			Labels      string
		}
		say := func(w *Workload) said {
			return said{Name: w.Name(), Image: w.Image(), Routes: w.Routes(), Readiness: ReadinessOf(w), Labels: w.Deployment.Labels[FunctionNameLabel]}
		}
		if diff := cmp.Diff(say(fullW), say(slimW)); diff != "" {
			t.Errorf("%s: the slimmed objects say otherwise than the stored ones (-stored +slim):\n%s", deployer, diff)
		}
	}
}

// keptCopies is how many copies BenchmarkCachedObject keeps to measure one's heap.
const keptCopies = 2000

// BenchmarkCachedObject decodes and transforms each kind at each level (ns/op and
// B/op: the informer's work per event, garbage included), and reports kept-B/obj: the
// heap one kept copy takes, measured by keeping keptCopies of them across a garbage
// collection (what the cache holds per object, its index entries aside).
func BenchmarkCachedObject(b *testing.B) {
	for _, k := range cachedKinds {
		data := storedJSON(b, k.file)
		for _, l := range levels {
			b.Run(k.name+"/"+l.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_ = kept(b, k, l.transform, data)
				}
				b.ReportMetric(keptBytes(b, func() any { return kept(b, k, l.transform, data) }), "kept-B/obj")
			})
		}
	}
}

// keptBytes is the heap one of keptCopies objects made by newObject takes once garbage
// is collected.
func keptBytes(tb testing.TB, newObject func() any) float64 {
	tb.Helper()
	keep := make([]any, keptCopies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = newObject()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / keptCopies
}
