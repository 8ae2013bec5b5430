package tenancy

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/rerror"
	"github.com/fnops/func-operator/test/envtest"
)

// secretReader answers every Get with its Secret, or its error.
type secretReader struct {
	client.Reader
	secret *corev1.Secret
	err    error
	reads  int
}

func (r *secretReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	if r.err != nil {
		return r.err
	}
	r.secret.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

// TestSecrets_Get: what a read of a Function's Secret returns for each answer of the
// API server, with no watch (so nothing kept is read again): the Secret, nil for one
// that does not exist, a NamespaceNotOnboarded stall when the operator may not read
// it, and any other error wrapped with the Secret's name, never its value.
func TestSecrets_Get(t *testing.T) {
	const value = "hunter2-the-secret-value"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "git", ResourceVersion: "3"},
		Data: map[string][]byte{"token": []byte(value)}}
	gr := schema.GroupResource{Resource: "secrets"}
	for _, tt := range []struct {
		name       string
		err        error
		want       map[string][]byte // the Secret's data; nil: no Secret
		wantReason string            // of the stall; "" for none
		wantErr    string            // in the error; "" for none
	}{{
		name: "read",
		want: map[string][]byte{"token": []byte(value)},
	}, {
		name: "not found: nil, no error",
		err:  apierrors.NewNotFound(gr, "git"),
	}, {
		name:       "forbidden: not onboarded",
		err:        apierrors.NewForbidden(gr, "git", errors.New("no RBAC")),
		wantReason: v1alpha1.ReasonNamespaceNotOnboarded,
		wantErr:    `the operator may not read Secret "git": namespace ns has not onboarded func-operator (ClusterRole func-operator-namespace`,
	}, {
		name:    "other: wrapped",
		err:     errors.New("connection refused"),
		wantErr: "reading Secret ns/git: connection refused",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			reader := &secretReader{secret: secret, err: tt.err}
			for _, s := range []*Secrets{{Reader: reader}, NewSecrets(reader, nil)} {
				got, err := s.Get(context.Background(), "ns", "git")
				var data map[string][]byte
				if got != nil {
					data = got.Data
				}
				if diff := cmp.Diff(tt.want, data); diff != "" {
					t.Errorf("Secret data (-want +got):\n%s", diff)
				}
				switch {
				case tt.wantErr == "" && err != nil:
					t.Errorf("Get: %v, want no error", err)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Errorf("Get: %v, want an error with %q", err, tt.wantErr)
				case err != nil && strings.Contains(err.Error(), value):
					t.Errorf("the error holds the Secret's value: %v", err)
				}
				if got := rerror.Reason(err); tt.wantReason != "" && got != tt.wantReason {
					t.Errorf("reason %q, want %q", got, tt.wantReason)
				}
				if tt.wantReason != "" && !IsNotOnboarded(err) {
					t.Errorf("IsNotOnboarded(%v) = false", err)
				}
			}
			// Without a watch, nothing tells a kept Secret is current: each Get reads.
			if reader.reads != 2 {
				t.Errorf("%d reads for two Gets, want 2", reader.reads)
			}
		})
	}
}

// TestSecrets_Nil: a Reconciler without Secrets sweeps and forgets nothing.
func TestSecrets_Nil(t *testing.T) {
	var s *Secrets
	s.Forget("ns")
	if got := s.GitCredentials("ns", "fn"); got != nil {
		t.Errorf("GitCredentials of nil Secrets = %v, want none", got)
	}
	(&Secrets{}).Forget("ns") // no watches
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	mu    sync.Mutex
	reads int
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	r.reads++
	r.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// TestSecrets_KeptUntilChanged, as the operator: a read starts the namespace's watch;
// once it has listed, the Secret is answered from what was kept, with no read, until
// the watch sees it change; then it is read again.
func TestSecrets_KeptUntilChanged(t *testing.T) {
	op := asOperator(t)
	mc, err := metadata.NewForConfig(envtest.AsOperator(restConfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watches := &SecretWatches{Client: mc, OnChange: func(context.Context, client.Object) {}}
	go func() { _ = watches.Start(ctx) }()
	reader := &countingReader{Reader: op}
	s := NewSecrets(reader, watches)
	ns := newNamespace(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"}, Data: map[string][]byte{"token": []byte("one")}}
	mustCreate(t, secret)
	read := func() string {
		t.Helper()
		got, err := s.Get(ctx, ns, "git")
		if err != nil || got == nil {
			t.Fatalf("Get = %v, %v; want the Secret", got, err)
		}
		return string(got.Data["token"])
	}

	// The operator's RoleBinding reaches the authorizer a moment after it is made.
	envtest.Until(t, "the first read", func() bool { _, err := s.Get(ctx, ns, "git"); return err == nil })
	envtest.Until(t, "the watch has listed", func() bool { _, known := watches.Version(ns, "git"); return known })
	read() // kept at the version the watch saw
	before := reader.count()
	if got := read(); got != "one" || reader.count() != before {
		t.Errorf("Get = %q after %d reads, want %q from what was kept (no read)", got, reader.count()-before, "one")
	}

	secret.Data["token"] = []byte("two")
	if err := k8sClient.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	envtest.Until(t, "the watch sees the change", func() bool { v, _ := watches.Version(ns, "git"); return v == secret.ResourceVersion })
	if got := read(); got != "two" || reader.count() != before+1 {
		t.Errorf("Get = %q after %d reads, want %q read again", got, reader.count()-before, "two")
	}
}
