package netguard

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// maxCATransports bounds how many transports with a private CA a Guard keeps
// (one per distinct bundle): past it, the least recently used one is dropped and
// its idle connections closed.
const maxCATransports = 64

// ParseCABundle reads a PEM bundle of CA certificates (the ca.crt of an auth
// Secret): one or more CERTIFICATE blocks, each an X.509 certificate. Its errors
// say which block is wrong and why, never what it holds.
func ParseCABundle(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := bundle
	for n := 1; ; n++ {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is a %s, not a CERTIFICATE: only CA certificates belong here", n, pemType(b.Type))
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d is not a valid X.509 certificate", n)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("it holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	if strings.TrimSpace(string(rest)) != "" && strings.Contains(string(rest), "-----BEGIN") {
		return nil, fmt.Errorf("PEM block %d is malformed", len(certs)+1)
	}
	return certs, nil
}

// pemType names a PEM block's type for a message: a known kind, never free text
// taken from the bundle.
func pemType(t string) string {
	switch {
	case strings.Contains(t, "PRIVATE KEY"):
		return "private key"
	case strings.Contains(t, "PUBLIC KEY"):
		return "public key"
	case strings.Contains(t, "CERTIFICATE REQUEST"):
		return "certificate request"
	case strings.Contains(t, "CRL"):
		return "certificate revocation list"
	default:
		return "block of another type"
	}
}

// rootsWith returns the system roots plus the certificates of bundle, as go-git
// and Flux do with a ca.crt: a private CA is trusted in addition to the public
// ones, not instead of them.
func rootsWith(bundle []byte) (*x509.CertPool, error) {
	certs, err := ParseCABundle(bundle)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// TransportWithCA is Transport for servers whose certificates a private CA signed:
// it trusts the PEM certificates of bundle in addition to the system roots
// (an empty bundle: the system roots only). The transport of each distinct bundle
// is kept, and shared by every caller giving the same bundle (a CA only adds trust
// to what the same bundle already trusts), so connections are reused; one bundle
// never affects the connections of another, or of Transport.
func (g *Guard) TransportWithCA(maxErrorBody int64, bundle []byte) (http.RoundTripper, error) {
	if len(bundle) == 0 {
		return g.Transport(maxErrorBody), nil
	}
	t, err := g.caTransport(bundle)
	if err != nil {
		return nil, err
	}
	return g.wrap(t, maxErrorBody), nil
}

func (g *Guard) caTransport(bundle []byte) (*http.Transport, error) {
	sum := sha256.Sum256(bundle)
	key := string(sum[:])
	g.mu.Lock()
	if t, ok := g.keptCATransport(key); ok {
		g.mu.Unlock()
		return t, nil
	}
	g.mu.Unlock()

	roots, err := rootsWith(bundle)
	if err != nil {
		return nil, fmt.Errorf("the CA bundle: %w", err)
	}
	t := g.newTransport(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})

	g.mu.Lock()
	defer g.mu.Unlock()
	if kept, ok := g.keptCATransport(key); ok { // another caller made it meanwhile
		return kept, nil
	}
	if g.caTransports == nil {
		// The callback runs within Add, under g.mu: only Add evicts.
		g.caTransports, _ = simplelru.NewLRU(maxCATransports, func(_ string, old *http.Transport) {
			g.forget(old)
			old.CloseIdleConnections()
		})
	}
	g.transports = append(g.transports, t)
	g.caTransports.Add(key, t)
	return t, nil
}

// keptCATransport returns the transport kept for the bundle digest key, made the most
// recently used; g.mu is held.
func (g *Guard) keptCATransport(key string) (*http.Transport, bool) {
	if g.caTransports == nil {
		return nil, false
	}
	return g.caTransports.Get(key)
}

// forget drops t from the transports SetPolicy closes; g.mu is held.
func (g *Guard) forget(t *http.Transport) {
	for i, x := range g.transports {
		if x == t {
			g.transports = append(g.transports[:i], g.transports[i+1:]...)
			return
		}
	}
}

// UntrustedCertificate says why err is a failure to verify a server's TLS
// certificate (an unknown authority, a certificate for another name, an expired
// one), or false when it is not.
func UntrustedCertificate(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is signed by an authority the operator does not trust", true
	case errors.As(err, &hostname):
		return "the server's certificate is not valid for " + ServerText(hostname.Host), true
	case errors.As(err, &invalid):
		return "the server's certificate is not valid: " + ServerText(invalid.Error()), true
	case errors.As(err, &verify):
		return "the server's certificate cannot be verified", true
	}
	// Libraries that keep only the text of an error.
	s := err.Error()
	switch {
	case strings.Contains(s, "certificate signed by unknown authority"):
		return "the server's certificate is signed by an authority the operator does not trust", true
	case strings.Contains(s, "x509: certificate is valid for"), strings.Contains(s, "x509: certificate is not valid for"):
		return "the server's certificate is not valid for the host named", true
	case strings.Contains(s, "tls: failed to verify certificate"):
		return "the server's certificate cannot be verified", true
	}
	return "", false
}
