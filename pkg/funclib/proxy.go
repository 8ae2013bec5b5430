package funclib

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	k8sjson "sigs.k8s.io/json"
)

// maxBuildObjectBody bounds an object the proxy rewrites; func's are a few KiB.
const maxBuildObjectBody = 1 << 20

// The resources of a build's objects.
const (
	resourcePipelines    = "pipelines"
	resourcePipelineRuns = "pipelineruns"
	resourceSecrets      = "secrets"
	resourcePVCs         = "persistentvolumeclaims"
)

// selfSubjectReview is the one write func's clients make besides a build's objects:
// who am I (UseCluster asks it).
const selfSubjectReview = "/apis/authentication.k8s.io/v1/selfsubjectreviews"

// objectPath is a request path of an object func writes for a build.
type objectPath struct {
	// version is the API version (v1, v1beta1), resource the plural (pipelines,
	// pipelineruns, secrets, persistentvolumeclaims), name empty for the collection.
	version, namespace, resource, name string
	tekton                             bool
}

// parseObjectPath returns the build object a clean path names, if any.
func parseObjectPath(p string) (objectPath, bool) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	var o objectPath
	switch {
	case len(parts) >= 6 && parts[0] == "apis" && parts[1] == "tekton.dev" && parts[3] == "namespaces":
		o = objectPath{version: parts[2], namespace: parts[4], resource: parts[5], tekton: true}
		parts = parts[6:]
	case len(parts) >= 5 && parts[0] == "api" && parts[1] == "v1" && parts[2] == "namespaces":
		o = objectPath{version: parts[1], namespace: parts[3], resource: parts[4]}
		parts = parts[5:]
	default:
		return objectPath{}, false
	}
	switch {
	case o.tekton && (o.resource == resourcePipelines || o.resource == resourcePipelineRuns):
	case !o.tekton && (o.resource == resourceSecrets || o.resource == resourcePVCs):
	default:
		return objectPath{}, false
	}
	switch len(parts) {
	case 0:
	case 1:
		o.name = parts[0]
	default:
		return objectPath{}, false // a subresource
	}
	return o, true
}

// apiProxy is the func library's only way to the API server. func (v0.50 as v0.44)
// builds its clients from KUBECONFIG, so the operator hands it a kubeconfig that points at this
// loopback server instead of at the cluster: the kubeconfig holds a random token for
// the proxy, never the operator's credentials, and the proxy forwards each request
// with the operator's own rest.Config (so token rotation, exec plugins and client
// certificates work as they do for the operator). On the way it makes func's
// objects those of the operator's build (see rewrite): func sets no ServiceAccount
// (Tekton would run the build as the namespace's default) and no owner, and its
// build task clones through a StepAction fetched from a public registry with no
// credentials.
type apiProxy struct {
	token    string
	caPEM    []byte
	listener net.Listener
	server   *http.Server
	// serviceAccount returns the ServiceAccount build PipelineRuns run as.
	serviceAccount func() string
	// core writes what the operator adds to a build (its git credentials Secret),
	// and runs reads the PipelineRun func deletes, with the operator's own rest.Config.
	core kubernetes.Interface
	runs dynamic.NamespaceableResourceInterface
}

// startProxy serves the proxy on a random loopback port until close is called.
func startProxy(cfg *rest.Config, serviceAccount func() string) (*apiProxy, error) {
	upstream, err := url.Parse(cfg.Host)
	if err != nil || upstream.Host == "" {
		return nil, fmt.Errorf("the operator's API server address %q is not a URL", cfg.Host)
	}
	if upstream.Scheme == "" {
		upstream.Scheme = "https"
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the transport to the API server: %w", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("making the func library's token: %w", err)
	}
	// client-go sends credentials over TLS only: the proxy serves TLS, with a key made
	// for this process, which the kubeconfig names as the only CA.
	cert, caPEM, err := loopbackCertificate()
	if err != nil {
		return nil, err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("listening for the func library: %w", err)
	}
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("building the operator's client for build Secrets: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("building the operator's client for PipelineRuns: %w", err)
	}
	p := &apiProxy{token: hex.EncodeToString(secret), caPEM: caPEM, listener: ln, serviceAccount: serviceAccount, core: core,
		runs: dyn.Resource(schema.GroupVersionResource{Group: "tekton.dev", Version: "v1", Resource: resourcePipelineRuns})}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			refuse(w, http.StatusBadGateway, "func-operator's API proxy cannot reach the API server: "+err.Error())
		},
	}
	p.server = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(ln) }()
	return p, nil
}

// url is where the func library reaches the proxy.
func (p *apiProxy) url() string { return "https://" + p.listener.Addr().String() }

// ProxyAddress is where the func library's API proxy listens (127.0.0.1:port): one
// of the operator's own listeners, which the network guard refuses to Functions.
func (c *Cluster) ProxyAddress() string { return c.proxy.listener.Addr().String() }

// loopbackCertificate makes a self-signed certificate for 127.0.0.1, valid for ten years.
func loopbackCertificate() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("making the func library proxy's key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "func-operator func library proxy"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour), // one key per process, in memory only
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("making the func library proxy's certificate: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM, nil
}

// close stops the proxy.
func (p *apiProxy) close() error {
	if err := p.server.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping the func library's API proxy: %w", err)
	}
	return nil
}

// handler authenticates the func library, takes its credentials and any identity it
// asks for off the request, and lets through only the writes of a build: func's
// objects of a build the operator runs, rewritten (see rewrite), the deletion of a
// PipelineRun (func deletes a cancelled one), and who-am-I. Reads pass.
func (p *apiProxy) handler(next http.Handler) http.Handler {
	want := []byte("Bearer " + p.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			refuse(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		r.Header.Del("Authorization")
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
				r.Header.Del(k)
			}
		}
		if path.Clean(r.URL.Path) != strings.TrimSuffix(r.URL.Path, "/") && r.URL.Path != "/" {
			refuse(w, http.StatusBadRequest, "func-operator's API proxy: a path that is not clean")
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead || (r.Method == http.MethodPost && r.URL.Path == selfSubjectReview) {
			next.ServeHTTP(w, r)
			return
		}
		o, ok := parseObjectPath(r.URL.Path)
		switch {
		case ok && r.Method == http.MethodDelete && o.resource == resourcePipelineRuns && o.name != "":
			// func deletes the run it follows when its build is cancelled: a run of a
			// build the operator runs, and no other.
			if err := p.deletable(r.Context(), o); err != nil {
				refuse(w, http.StatusForbidden, "func-operator's API proxy: "+err.Error())
				return
			}
		case ok && ((r.Method == http.MethodPost && o.name == "") ||
			(r.Method == http.MethodPut && o.name != "" && (o.resource == resourcePipelines || o.resource == resourceSecrets))):
			if err := p.rewrite(r, o); err != nil {
				refuse(w, http.StatusBadRequest, "func-operator's API proxy: "+err.Error())
				return
			}
		default:
			// func creates a build's objects (POST to the collection), updates its
			// Pipeline and registry Secret, reads, and deletes a cancelled PipelineRun.
			// Anything else (a POST to a named path, which creates a custom resource,
			// a patch or an apply, which may create) could set another owner,
			// ServiceAccount or task.
			refuse(w, http.StatusForbidden, fmt.Sprintf("func-operator's API proxy: func may not %s %s", r.Method, r.URL.Path))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request the proxy does not pass on with a metav1.Status, as the
// API server answers, so that func's error (and so the build's message) says why
// instead of client-go's "the server rejected our request for an unknown reason".
func refuse(w http.ResponseWriter, code int, message string) {
	reason := metav1.StatusReasonBadRequest
	switch code {
	case http.StatusUnauthorized:
		reason = metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		reason = metav1.StatusReasonForbidden
	case http.StatusBadGateway:
		reason = metav1.StatusReasonServiceUnavailable
	}
	body, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code)})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// deletable fails unless PipelineRun o is of a build the operator runs.
func (p *apiProxy) deletable(ctx context.Context, o objectPath) error {
	run, err := p.runs.Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // the API server answers NotFound itself
	}
	if err != nil {
		return fmt.Errorf("reading PipelineRun %s/%s before deleting it: %w", o.namespace, o.name, err)
	}
	_, err = registered(o.namespace, run.GetLabels())
	return err
}

// rewrite replaces the body of r, a write of build object o, by the object as the
// operator runs it: owned by its Function (PipelineRuns, Pipelines, Secrets, PVCs),
// cloning in a task of its own with the embedded git-clone task (Pipelines), run as
// the build ServiceAccount with the git credentials bound and the commit it builds
// (PipelineRuns). Tekton objects must be tekton.dev/v1, as func v0.50 writes them. The body is decoded strictly into the
// API's own type (exact field names, no unknown or duplicate fields), so that no
// spelling the proxy did not rewrite reaches the API server, whose decoders fold
// case; what is sent on is the typed object, encoded again.
func (p *apiProxy) rewrite(r *http.Request, o objectPath) error {
	ct := r.Header.Get("Content-Type")
	proto := strings.HasPrefix(ct, runtime.ContentTypeProtobuf)
	switch {
	case ct == "" || strings.HasPrefix(ct, runtime.ContentTypeJSON):
	case proto && !o.tekton:
		// client-go 0.35 sends built-in types as protobuf: decoded into the API's
		// type, and sent on as that object's JSON, like every other rewrite.
	default:
		return fmt.Errorf("a %s sent as %q: only JSON (and protobuf for built-in types) is accepted", o.resource, ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBuildObjectBody+1))
	_ = r.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the %s: %w", o.resource, err)
	}
	if len(body) > maxBuildObjectBody {
		return fmt.Errorf("a %s of more than %d bytes", o.resource, maxBuildObjectBody)
	}
	var out []byte
	switch o.resource {
	case resourcePipelineRuns:
		out, err = rewritePipelineRun(o.namespace, o.version, body, p.serviceAccount())
	case resourcePipelines:
		out, err = rewritePipeline(o.namespace, o.version, body)
	default:
		out, err = rewriteCore(o.namespace, o.resource, body, proto)
	}
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", runtime.ContentTypeJSON)
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// strictly decodes body into obj as the API server would, and fails on any field
// whose name is not exactly one of obj's, or that comes twice.
func strictly(body []byte, obj any) error {
	strict, err := k8sjson.UnmarshalStrict(body, obj, k8sjson.DisallowDuplicateFields, k8sjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("the object is not JSON: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("the object has fields the proxy does not know: %w", errors.Join(strict...))
	}
	return nil
}
