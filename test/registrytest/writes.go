package registrytest

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// DeniedMessage is the message of the registry's DENIED answers to readers'
// writes (AddReader): registry text a client should not quote.
const DeniedMessage = "registrytest: requested access to the resource is denied"

// maxLog bounds the request log: past it, the older half is dropped, so that a
// long test does not grow it without end.
const maxLog = 1 << 14

// Logged is a request the registry served.
type Logged struct {
	Method string
	Path   string
	Query  url.Values
	Status int
}

// writes holds the request log, the read-only credentials and the blobs of
// each repository (ScopeBlobs).
type writes struct {
	mu      sync.Mutex
	log     []Logged
	readers map[string]string // user -> password
	scoped  bool
	blobs   map[string]map[string]bool // repository -> digest -> present
}

// Log returns the requests served so far, in the order they ended: all of them
// up to maxLog, the last maxLog/2 at least past it.
func (r *Registry) Log() []Logged {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return append([]Logged(nil), r.w.log...)
}

// AddReader makes user and password valid credentials of a private registry
// (StartPrivate) that may read but not write: their POST, PUT, PATCH and DELETE
// requests are answered 403 DENIED, as a registry answers a pull-only robot
// account.
func (r *Registry) AddReader(user, password string) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.w.readers == nil {
		r.w.readers = map[string]string{}
	}
	r.w.readers[user] = password
}

// ScopeBlobs makes the registry keep blobs per repository, as distribution does:
// a blob pushed to one repository is unknown to the others (HEAD and GET answer
// 404) until pushed there too or mounted (POST .../blobs/uploads/?mount=&from=,
// answered 201 when the source repository has it). Call it before the first push.
// go-containerregistry's registry, under it, keeps one set of blobs for all.
func (r *Registry) ScopeBlobs() {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.w.scoped = true
	r.w.blobs = map[string]map[string]bool{}
}

// isReader reports whether req carries a reader's credentials.
func (r *Registry) isReader(req *http.Request) bool {
	u, p, ok := req.BasicAuth()
	if !ok {
		return false
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	want, found := r.w.readers[u]
	return found && want == p
}

// logged serves next, logging every request and its status.
func (r *Registry) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		query := req.URL.Query()
		next.ServeHTTP(sw, req)
		r.w.mu.Lock()
		if len(r.w.log) == maxLog {
			r.w.log = append(r.w.log[:0], r.w.log[maxLog/2:]...)
		}
		r.w.log = append(r.w.log, Logged{Method: req.Method, Path: req.URL.Path, Query: query, Status: sw.status})
		r.w.mu.Unlock()
	})
}

// serveWrites serves req through next, answering readers' writes with 403 and
// keeping the blobs of each repository when scoped.
func (r *Registry) serveWrites(sw http.ResponseWriter, req *http.Request, next http.Handler) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead && r.isReader(req) {
		writeRegistryError(sw, http.StatusForbidden, "DENIED", DeniedMessage)
		return
	}
	repo, rest, ok := splitV2(req.URL.Path)
	r.w.mu.Lock()
	scoped := r.w.scoped
	r.w.mu.Unlock()
	if !scoped || !ok {
		next.ServeHTTP(sw, req)
		return
	}
	q := req.URL.Query()
	switch {
	case (req.Method == http.MethodGet || req.Method == http.MethodHead) && strings.HasPrefix(rest, "blobs/sha256:"):
		if !r.hasBlob(repo, strings.TrimPrefix(rest, "blobs/")) {
			writeRegistryError(sw, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
			return
		}
	case req.Method == http.MethodPost && rest == "blobs/uploads/" && q.Get("mount") != "":
		d, from := q.Get("mount"), q.Get("from")
		if from != "" && r.hasBlob(from, d) {
			r.addBlob(repo, d)
			sw.Header().Set("Location", "/v2/"+repo+"/blobs/"+d)
			sw.Header().Set("Docker-Content-Digest", d)
			sw.WriteHeader(http.StatusCreated)
			return
		}
		// Not mountable: an upload starts, as distribution does.
		q.Del("mount")
		q.Del("from")
		req.URL.RawQuery = q.Encode()
	}
	st := &statusWriter{ResponseWriter: sw, status: http.StatusOK}
	next.ServeHTTP(st, req)
	if strings.HasPrefix(rest, "blobs/uploads/") && st.status == http.StatusCreated && q.Get("digest") != "" {
		r.addBlob(repo, q.Get("digest"))
	}
}

func (r *Registry) hasBlob(repo, digest string) bool {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.w.blobs[repo][digest]
}

func (r *Registry) addBlob(repo, digest string) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.w.blobs[repo] == nil {
		r.w.blobs[repo] = map[string]bool{}
	}
	r.w.blobs[repo][digest] = true
}

// splitV2 splits /v2/<repo>/<blobs|manifests|tags>/... into the repository and
// the rest.
func splitV2(p string) (repo, rest string, ok bool) {
	p, ok = strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", "", false
	}
	for _, kind := range []string{"/blobs/", "/manifests/", "/tags/"} {
		if i := strings.LastIndex(p, kind); i > 0 {
			return p[:i], p[i+1:], true
		}
	}
	return "", "", false
}

// writeRegistryError answers as a registry does: status and a JSON error of code.
func writeRegistryError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"errors":[{"code":"` + code + `","message":"` + message + `"}]}`))
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
