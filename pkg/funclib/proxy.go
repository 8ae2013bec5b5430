package funclib

import (
	"bytes"
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
	"regexp"
	"strconv"
	"strings"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	pipelinev1beta1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1"
	"k8s.io/client-go/rest"
	k8sjson "sigs.k8s.io/json"
)

// maxPipelineRunBody bounds the PipelineRun the proxy rewrites; func's is a few KiB.
const maxPipelineRunBody = 1 << 20

// pipelineRunCreate matches the path of a PipelineRun create in a namespace, and
// pipelineRunWrite the path of one PipelineRun (or its subresources).
var (
	pipelineRunCreate = regexp.MustCompile(`^/apis/tekton\.dev/[^/]+/namespaces/[^/]+/pipelineruns/?$`)
	pipelineRunWrite  = regexp.MustCompile(`^/apis/tekton\.dev/[^/]+/namespaces/[^/]+/pipelineruns/[^/]+`)
)

// apiProxy is the func library's only way to the API server. func v0.44 builds its
// clients from KUBECONFIG, so the operator hands it a kubeconfig that points at this
// loopback server instead of at the cluster: the kubeconfig holds a random token for
// the proxy, never the operator's credentials, and the proxy forwards each request
// with the operator's own rest.Config (so token rotation, exec plugins and client
// certificates work as they do for the operator). On the way it sets the build
// ServiceAccount on every PipelineRun func creates: func v0.44 sets none, and Tekton
// would run the build as the namespace's default ServiceAccount.
type apiProxy struct {
	token    string
	caPEM    []byte
	listener net.Listener
	server   *http.Server
	// serviceAccount returns the ServiceAccount build PipelineRuns run as.
	serviceAccount func() string
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
	p := &apiProxy{token: hex.EncodeToString(secret), caPEM: caPEM, listener: ln, serviceAccount: serviceAccount}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "func-operator's API proxy cannot reach the API server: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.server = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(ln) }()
	return p, nil
}

// url is where the func library reaches the proxy.
func (p *apiProxy) url() string { return "https://" + p.listener.Addr().String() }

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
// asks for off the request, and rewrites PipelineRun creates.
func (p *apiProxy) handler(next http.Handler) http.Handler {
	want := []byte("Bearer " + p.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		for k := range r.Header {
			if strings.HasPrefix(strings.ToLower(k), "impersonate-") {
				r.Header.Del(k)
			}
		}
		if path.Clean(r.URL.Path) != strings.TrimSuffix(r.URL.Path, "/") && r.URL.Path != "/" {
			http.Error(w, "func-operator's API proxy: a path that is not clean", http.StatusBadRequest)
			return
		}
		switch {
		case r.Method == http.MethodPost && pipelineRunCreate.MatchString(r.URL.Path):
			if err := p.setServiceAccount(r); err != nil {
				http.Error(w, "func-operator's API proxy: "+err.Error(), http.StatusBadRequest)
				return
			}
		case r.Method != http.MethodGet && r.Method != http.MethodDelete && pipelineRunWrite.MatchString(r.URL.Path):
			// func only creates PipelineRuns (by POST to the collection), reads and
			// deletes them. A POST to a named path (which creates a custom resource), an
			// update, or an apply (which may create) could set another ServiceAccount.
			http.Error(w, "func-operator's API proxy: PipelineRuns are only created, read and deleted", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setServiceAccount sets the build ServiceAccount on the PipelineRun r creates, in
// the field of r's API version (Tekton converts between the two). The body is decoded
// strictly into Tekton's own type (exact field names, no unknown or duplicate
// fields), so that no spelling the proxy did not rewrite reaches Tekton, whose
// decoder folds case; a run that asks for a pod template is refused. What is sent on
// is the typed object, encoded again.
func (p *apiProxy) setServiceAccount(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("a PipelineRun sent as %q: only JSON is accepted", ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPipelineRunBody+1))
	_ = r.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the PipelineRun: %w", err)
	}
	if len(body) > maxPipelineRunBody {
		return fmt.Errorf("a PipelineRun of more than %d bytes", maxPipelineRunBody)
	}
	out, err := withServiceAccount(strings.Split(r.URL.Path, "/")[3], body, p.serviceAccount())
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// withServiceAccount returns the PipelineRun of API version version in body, set to
// run every task as sa.
func withServiceAccount(version string, body []byte, sa string) ([]byte, error) {
	var pr any
	switch version {
	case "v1beta1":
		run := &pipelinev1beta1.PipelineRun{} //nolint:staticcheck // func v0.44 creates v1beta1 PipelineRuns
		if err := strictly(body, run); err != nil {
			return nil, err
		}
		if run.Spec.PodTemplate != nil {
			return nil, errors.New("a PipelineRun with a pod template")
		}
		run.Spec.ServiceAccountName = sa
		for i := range run.Spec.TaskRunSpecs {
			if run.Spec.TaskRunSpecs[i].TaskPodTemplate != nil {
				return nil, errors.New("a PipelineRun with a task pod template")
			}
			run.Spec.TaskRunSpecs[i].TaskServiceAccountName = ""
		}
		pr = run
	case "v1":
		run := &pipelinev1.PipelineRun{}
		if err := strictly(body, run); err != nil {
			return nil, err
		}
		if run.Spec.TaskRunTemplate.PodTemplate != nil {
			return nil, errors.New("a PipelineRun with a pod template")
		}
		run.Spec.TaskRunTemplate.ServiceAccountName = sa
		for i := range run.Spec.TaskRunSpecs {
			if run.Spec.TaskRunSpecs[i].PodTemplate != nil {
				return nil, errors.New("a PipelineRun with a task pod template")
			}
			run.Spec.TaskRunSpecs[i].ServiceAccountName = ""
		}
		pr = run
	default:
		return nil, fmt.Errorf("PipelineRuns of tekton.dev/%s: the proxy knows where v1beta1 and v1 name the ServiceAccount, not there", version)
	}
	out, err := json.Marshal(pr)
	if err != nil {
		return nil, fmt.Errorf("encoding the PipelineRun: %w", err)
	}
	return out, nil
}

// strictly decodes body into obj as the API server would, and fails on any field
// whose name is not exactly one of obj's, or that comes twice.
func strictly(body []byte, obj any) error {
	strict, err := k8sjson.UnmarshalStrict(body, obj, k8sjson.DisallowDuplicateFields, k8sjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("the PipelineRun is not JSON: %w", err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("the PipelineRun has fields the proxy does not know: %w", errors.Join(strict...))
	}
	return nil
}
