package envtest

import (
	"context"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// gcPollTimeout bounds how long the test waits for the garbage collector: it
// collects within a second or two once it watches every resource involved.
const gcPollTimeout = 60 * time.Second

// TestGarbageCollector_DeletesOwnedObjects runs the real garbage collector (no
// operator): deleting an owner deletes what its ownerReferences name — core objects
// and custom resources, owned by a ConfigMap and by a Function — while an object
// without an ownerReference, and one with another live owner, stay.
func TestGarbageCollector_DeletesOwnedObjects(t *testing.T) {
	env := StartT(t, TektonCRDs)
	began := time.Now()
	env.StartGarbageCollectorT(t)
	t.Logf("garbage collector ready in %v", time.Since(began).Round(time.Millisecond))

	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := NewNamespace(t, env.Config, "gc-", false)
	create := func(o *unstructured.Unstructured, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		o.SetNamespace(ns)
		refs := make([]metav1.OwnerReference, 0, len(owners))
		for _, owner := range owners {
			// apiVersion, kind, name and uid; neither controller nor blockOwnerDeletion.
			refs = append(refs, metav1.OwnerReference{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID()})
		}
		o.SetOwnerReferences(refs)
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		return o
	}

	cmOwner := create(object("v1", "ConfigMap", "owner", nil))
	fnOwner := create(object("functions.dev/v1alpha1", "Function", "hello", map[string]interface{}{
		"spec": map[string]interface{}{"repository": map[string]interface{}{"url": "https://git.example/hello.git", "branch": "main"}},
	}))
	keeper := create(object("v1", "ConfigMap", "keeper", nil))
	run := func(name string) *unstructured.Unstructured {
		return object("tekton.dev/v1", "PipelineRun", name, map[string]interface{}{
			"spec": map[string]interface{}{"pipelineRef": map[string]interface{}{"name": "hello-pipeline"}},
		})
	}
	owned := []*unstructured.Unstructured{
		create(object("v1", "ConfigMap", "cm-owned", nil), cmOwner),
		create(object("v1", "Secret", "cm-owned", nil), cmOwner),
		create(run("cm-owned"), cmOwner),
		create(object("v1", "Secret", "hello-build", nil), fnOwner),
		create(run("hello-build"), fnOwner),
		create(object("v1", "ConfigMap", "hello-build", nil), fnOwner),
	}
	control := create(object("v1", "ConfigMap", "control", nil))
	shared := create(object("v1", "Secret", "shared", nil), fnOwner, keeper)

	deleted := time.Now()
	for _, o := range []*unstructured.Unstructured{cmOwner, fnOwner} {
		if err := c.Delete(ctx, o); err != nil {
			t.Fatalf("deleting owner %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	// Every owned object goes; the one shared with a live owner loses only the
	// reference to the deleted owner (the collector saw it, and kept it).
	gone := map[string]time.Duration{}
	var sharedAt time.Duration
	deadline := deleted.Add(gcPollTimeout)
	for time.Now().Before(deadline) && (len(gone) < len(owned) || sharedAt == 0) {
		for _, o := range owned {
			if _, ok := gone[key(o)]; ok {
				continue
			}
			err := c.Get(ctx, client.ObjectKeyFromObject(o), emptyOf(o))
			switch {
			case apierrors.IsNotFound(err):
				gone[key(o)] = time.Since(deleted)
			case err != nil:
				t.Fatalf("reading %s: %v", key(o), err)
			}
		}
		if sharedAt == 0 {
			got := emptyOf(shared)
			if err := c.Get(ctx, client.ObjectKeyFromObject(shared), got); err != nil {
				t.Fatalf("the Secret with a live owner: %v", err)
			}
			if refs := got.GetOwnerReferences(); len(refs) == 1 && refs[0].UID == keeper.GetUID() {
				sharedAt = time.Since(deleted)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, o := range owned {
		if at, ok := gone[key(o)]; ok {
			t.Logf("%s collected %v after its owner's deletion", key(o), at.Round(time.Millisecond))
		} else {
			t.Errorf("%s (owned by %s) still exists %v after its owner's deletion", key(o), o.GetOwnerReferences()[0].Kind, gcPollTimeout)
		}
	}
	if sharedAt == 0 {
		got := emptyOf(shared)
		err := c.Get(ctx, client.ObjectKeyFromObject(shared), got)
		t.Errorf("%s, owned by the deleted Function and a live ConfigMap: get error %v, ownerReferences %+v; want only the live owner's", key(shared), err, got.GetOwnerReferences())
	} else {
		t.Logf("%s lost the deleted owner's reference %v after the deletion", key(shared), sharedAt.Round(time.Millisecond))
	}
	// The collector has processed everything above by now; it never deletes an object
	// without an ownerReference, nor one with a live owner.
	for _, o := range []*unstructured.Unstructured{control, shared, keeper} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), emptyOf(o)); err != nil {
			t.Errorf("%s, which nothing owns or which has a live owner: %v", key(o), err)
		}
	}
}

// TestKubeconfig writes configs with each kind of credentials as kubeconfigs.
func TestKubeconfig(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         *rest.Config
		wantCluster clientcmdapi.Cluster
		wantUser    clientcmdapi.AuthInfo
	}{{
		name:        "client certificate",
		cfg:         &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")}},
		wantCluster: clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")},
		wantUser:    clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")},
	}, {
		name:        "files",
		cfg:         &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAFile: "/ca.crt", CertFile: "/tls.crt", KeyFile: "/tls.key", ServerName: "kubernetes"}},
		wantCluster: clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthority: "/ca.crt", TLSServerName: "kubernetes"},
		wantUser:    clientcmdapi.AuthInfo{ClientCertificate: "/tls.crt", ClientKey: "/tls.key"},
	}, {
		name:        "token, host without a scheme",
		cfg:         &rest.Config{Host: "127.0.0.1:6443", BearerToken: "t0k3n", TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
		wantCluster: clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", InsecureSkipTLSVerify: true},
		wantUser:    clientcmdapi.AuthInfo{Token: "t0k3n"},
	}, {
		name: "token file and impersonation, host with a path",
		cfg: &rest.Config{Host: "https://127.0.0.1:6443/prefix", BearerTokenFile: "/token",
			Impersonate: rest.ImpersonationConfig{UserName: "someone", Groups: []string{"g"}}},
		wantCluster: clientcmdapi.Cluster{Server: "https://127.0.0.1:6443/prefix"},
		wantUser:    clientcmdapi.AuthInfo{TokenFile: "/token", Impersonate: "someone", ImpersonateGroups: []string{"g"}},
	}, {
		name:        "basic auth",
		cfg:         &rest.Config{Host: "http://127.0.0.1:8080", Username: "admin", Password: "secret"},
		wantCluster: clientcmdapi.Cluster{Server: "http://127.0.0.1:8080"},
		wantUser:    clientcmdapi.AuthInfo{Username: "admin", Password: "secret"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			content, err := Kubeconfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			kc, err := clientcmd.Load(content)
			if err != nil {
				t.Fatalf("reading back:\n%s\n%v", content, err)
			}
			current := kc.Contexts[kc.CurrentContext]
			if current == nil || kc.Clusters[current.Cluster] == nil || kc.AuthInfos[current.AuthInfo] == nil {
				t.Fatalf("no current context, cluster or user:\n%s", content)
			}
			cluster, user := *kc.Clusters[current.Cluster], *kc.AuthInfos[current.AuthInfo]
			cluster.Extensions, user.Extensions = nil, nil
			if !reflect.DeepEqual(cluster, tc.wantCluster) {
				t.Errorf("cluster = %+v, want %+v", cluster, tc.wantCluster)
			}
			if !reflect.DeepEqual(user, tc.wantUser) {
				t.Errorf("user = %+v, want %+v", user, tc.wantUser)
			}
		})
	}
}

// object returns an object of apiVersion and kind named name, with fields.
func object(apiVersion, kind, name string, fields map[string]interface{}) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{}}
	for k, v := range fields {
		o.Object[k] = v
	}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetName(name)
	return o
}

// emptyOf returns an empty object of o's apiVersion and kind, to read o into.
func emptyOf(o *unstructured.Unstructured) *unstructured.Unstructured {
	e := &unstructured.Unstructured{}
	e.SetAPIVersion(o.GetAPIVersion())
	e.SetKind(o.GetKind())
	return e
}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}
