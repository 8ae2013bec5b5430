package gitserver

import (
	"crypto/subtle"
	"encoding/pem"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/fnops/func-operator/test/hostilehttp"
)

// HTTPServer serves every bare repository under a root directory over the
// git smart HTTP protocol, using `git http-backend` behind an httptest server
// listening on 127.0.0.1.
type HTTPServer struct {
	srv     *httptest.Server
	backend http.Handler

	mu      sync.Mutex
	auth    map[string]credentialCheck // repo name -> required credentials
	refAds  map[string]int             // repo name -> upload-pack ref advertisements
	uploads map[string]int             // repo name -> upload-pack POSTs
	status  int                        // when not 0, every request is answered with it (an outage)

	// faults are the hostile behaviours of hostile.go (ErrorBody, Trickle, BytesServed).
	faults *hostilehttp.Faults
}

// credentialCheck reports whether basic-auth credentials are acceptable.
type credentialCheck func(username, password string) bool

// StartHTTP serves the bare repositories under root (as created by
// CreateRepo) until the test ends.
func StartHTTP(t testing.TB, root string) *HTTPServer {
	t.Helper()
	return start(t, root, false)
}

// StartHTTPS is StartHTTP over TLS, with a certificate for 127.0.0.1 that
// CertificatePEM returns.
func StartHTTPS(t testing.TB, root string) *HTTPServer {
	t.Helper()
	return start(t, root, true)
}

// CertificatePEM is the PEM of the TLS server's certificate (self-signed: a client
// trusts it as a CA), nil for a plain HTTP server.
func (s *HTTPServer) CertificatePEM() []byte {
	if s.srv.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

func start(t testing.TB, root string, tls bool) *HTTPServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("gitserver: find git for http-backend: %v", err)
	}
	s := &HTTPServer{
		backend: &cgi.Handler{
			Path: gitPath,
			Args: []string{"http-backend"},
			Dir:  root,
			Env: []string{
				"GIT_PROJECT_ROOT=" + root,
				"GIT_HTTP_EXPORT_ALL=1",
				"GIT_CONFIG_NOSYSTEM=1",
				"HOME=" + t.TempDir(),
			},
			Stderr: newTestLogWriter(t, "git http-backend: "),
			// "cgi: copy error" when a client leaves mid-answer (Trickle), in the test log.
			Logger: log.New(newTestLogWriter(t, ""), "", 0),
		},
		auth:    map[string]credentialCheck{},
		refAds:  map[string]int{},
		uploads: map[string]int{},
		faults:  hostilehttp.New(),
	}
	s.srv = httptest.NewUnstartedServer(s.faults.Handler(http.HandlerFunc(s.serveHTTP)))
	if tls {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	t.Cleanup(s.stopFaults) // runs first: a trickle must not hold srv.Close
	return s
}

// URL returns the clone URL of the repository called repoName.
func (s *HTTPServer) URL(repoName string) string {
	return s.srv.URL + "/" + repoName + ".git"
}

// RequireBasicAuth makes repoName require HTTP basic auth with exactly
// username and password.
func (s *HTTPServer) RequireBasicAuth(repoName, username, password string) {
	s.setAuth(repoName, func(u, p string) bool {
		return secureEqual(u, username) && secureEqual(p, password)
	})
}

// RequireToken makes repoName require HTTP basic auth whose password is token
// and whose username is any non-empty string.
func (s *HTTPServer) RequireToken(repoName, token string) {
	s.setAuth(repoName, func(u, p string) bool {
		return u != "" && secureEqual(p, token)
	})
}

// RefAdvertisements returns how many authorised upload-pack ref
// advertisements (GET info/refs?service=git-upload-pack, as done by
// ls-remote, fetch and clone) repoName has served.
func (s *HTTPServer) RefAdvertisements(repoName string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refAds[repoName]
}

// UploadPacks returns how many authorised upload-pack requests
// (POST git-upload-pack, as done by fetch and clone) repoName has served.
func (s *HTTPServer) UploadPacks(repoName string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploads[repoName]
}

func (s *HTTPServer) setAuth(repoName string, check credentialCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth[repoName] = check
}

// Faults FailWith injects besides HTTP status codes.
const (
	// Reset closes every connection without an answer, as a host behind a dying
	// load balancer does.
	Reset = -1
	// Hang holds every request without an answer until the client gives up.
	Hang = -2
)

// FailWith makes the server answer every request with HTTP status code, as a git host
// in an outage does (503, 502…), or fail it with Reset or Hang; 0 ends the outage.
func (s *HTTPServer) FailWith(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = code
}

func (s *HTTPServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	code := s.status
	s.mu.Unlock()
	switch {
	case code == Reset:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tcp, ok := conn.(*net.TCPConn); ok {
					_ = tcp.SetLinger(0) // a reset, not a clean close
				}
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "cannot reset", http.StatusInternalServerError)
		return
	case code == Hang:
		<-r.Context().Done()
		return
	case code != 0:
		http.Error(w, http.StatusText(code), code)
		return
	}
	if s.faults.ServeErrorBody(w) {
		return
	}
	name, rest, ok := splitRepoPath(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}

	s.mu.Lock()
	check := s.auth[name]
	s.mu.Unlock()
	if check != nil {
		user, pass, ok := r.BasicAuth()
		if !ok || !check(user, pass) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}

	s.mu.Lock()
	switch {
	case r.Method == http.MethodGet && rest == "/info/refs" &&
		r.URL.Query().Get("service") == "git-upload-pack":
		s.refAds[name]++
	case r.Method == http.MethodPost && rest == "/git-upload-pack":
		s.uploads[name]++
	}
	s.mu.Unlock()

	s.backend.ServeHTTP(w, r)
}

// splitRepoPath splits "/<name>.git/<rest>" into name and "/<rest>".
func splitRepoPath(path string) (name, rest string, ok bool) {
	i := strings.Index(path, ".git/")
	if i <= 1 || path[0] != '/' {
		return "", "", false
	}
	return path[1:i], path[i+len(".git"):], true
}

func secureEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
