package monitoring

// The fields of cert-manager's cert-manager.io/v1 Issuer and Certificate
// (github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1, json names as there)
// that config/monitoring/metrics-certificate.yaml uses, decoded strictly like the
// types of types.go.

// The files of config/monitoring/ that serve the metrics' certificate.
const (
	CertificateFile = "metrics-certificate.yaml"
	CertPatchFile   = "metrics-cert-patch.yaml"
)

// Issuer is a cert-manager.io/v1 Issuer.
type Issuer struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       IssuerSpec `json:"spec"`
}

// IssuerSpec is a self-signed or a CA issuer.
type IssuerSpec struct {
	SelfSigned *struct{} `json:"selfSigned,omitempty"`
	CA         *CAIssuer `json:"ca,omitempty"`
}

// CAIssuer signs with the CA of a Secret.
type CAIssuer struct {
	SecretName string `json:"secretName"`
}

// Certificate is a cert-manager.io/v1 Certificate.
type Certificate struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ObjectMeta      `json:"metadata"`
	Spec       CertificateSpec `json:"spec"`
}

// CertificateSpec is what a Certificate asks for.
type CertificateSpec struct {
	IsCA       bool                   `json:"isCA,omitempty"`
	CommonName string                 `json:"commonName,omitempty"`
	SecretName string                 `json:"secretName"`
	DNSNames   []string               `json:"dnsNames,omitempty"`
	Usages     []string               `json:"usages,omitempty"`
	PrivateKey *CertificatePrivateKey `json:"privateKey,omitempty"`
	IssuerRef  IssuerRef              `json:"issuerRef"`
}

// CertificatePrivateKey is the key's algorithm and size.
type CertificatePrivateKey struct {
	Algorithm string `json:"algorithm,omitempty"`
	Size      int    `json:"size,omitempty"`
}

// IssuerRef names the issuer of a Certificate.
type IssuerRef struct {
	Name string `json:"name"`
	Kind string `json:"kind,omitempty"`
}

// JSONPatchOp is one operation of an RFC 6902 JSON patch.
type JSONPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}
