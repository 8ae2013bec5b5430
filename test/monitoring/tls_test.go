package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestServiceMonitor_VerifiesTheCertificate: the ServiceMonitor verifies the
// operator's serving certificate, never skips it: against the ca.crt of the Secret
// that metrics-certificate.yaml has cert-manager issue, for a name that Certificate
// holds and that is the metrics Service's in-cluster name; metrics-cert-patch.yaml,
// applied to config/'s Deployment, mounts that Secret where --metrics-cert-dir reads.
// Positive controls: insecureSkipVerify, another serverName, or a patch that mounts
// elsewhere are each reported.
func TestServiceMonitor_VerifiesTheCertificate(t *testing.T) {
	sm := loadServiceMonitor(t)
	issuers, certs := loadCertificates(t)
	svc, dep := shippedMetricsService(t), shippedDeployment(t)
	patch := loadPatch(t)
	if problems := certificateProblems(sm, issuers, certs, svc, dep, patch); len(problems) > 0 {
		t.Errorf("the ServiceMonitor, %s, %s and config/500-controller.yaml:\n%s", CertificateFile, CertPatchFile, strings.Join(problems, "\n"))
	}

	for name, edit := range map[string]func(*ServiceMonitor, *[]JSONPatchOp){
		"insecureSkipVerify": func(sm *ServiceMonitor, _ *[]JSONPatchOp) { sm.Spec.Endpoints[0].TLSConfig.InsecureSkipVerify = true },
		"another serverName": func(sm *ServiceMonitor, _ *[]JSONPatchOp) {
			sm.Spec.Endpoints[0].TLSConfig.ServerName = "func-operator-webhook.func-operator.svc"
		},
		"the mount elsewhere": func(_ *ServiceMonitor, p *[]JSONPatchOp) {
			ops := slices.Clone(*p)
			ops[2] = JSONPatchOp{Op: "add", Path: ops[2].Path, Value: "--metrics-cert-dir=/elsewhere"}
			*p = ops
		},
	} {
		broken, brokenPatch := loadServiceMonitor(t), slices.Clone(patch)
		edit(&broken, &brokenPatch)
		if len(certificateProblems(broken, issuers, certs, svc, dep, brokenPatch)) == 0 {
			t.Errorf("%s: no problem reported", name)
		}
	}
}

// certificateProblems says how the ServiceMonitor's TLS configuration fails to
// verify what the patched Deployment serves.
func certificateProblems(sm ServiceMonitor, issuers map[string]Issuer, certs map[string]Certificate, svc *corev1.Service, dep map[string]any, patch []JSONPatchOp) []string {
	var out []string
	e := sm.Spec.Endpoints[0]
	tc := e.TLSConfig
	if tc == nil || tc.InsecureSkipVerify || tc.CA == nil || tc.CA.Secret == nil || tc.CA.Secret.Key != "ca.crt" || tc.ServerName == "" {
		return []string{fmt.Sprintf("tlsConfig %+v: want a serverName and the ca.crt of a Secret, and no insecureSkipVerify", tc)}
	}
	if want := svc.Name + "." + svc.Namespace + ".svc"; tc.ServerName != want {
		out = append(out, fmt.Sprintf("serverName %q, want the metrics Service's %q", tc.ServerName, want))
	}
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port }) {
		out = append(out, fmt.Sprintf("the Service %s has no port %q", svc.Name, e.Port))
	}
	// The Certificate issuing the Secret, in the ServiceMonitor's namespace (where
	// prometheus-operator reads it), for serverName, by a CA issuer (ca.crt is its CA).
	secret := tc.CA.Secret.Name
	var leaf *Certificate
	for _, c := range certs {
		if c.Spec.SecretName == secret {
			leaf = &c
		}
	}
	switch {
	case leaf == nil:
		out = append(out, fmt.Sprintf("no Certificate issues Secret %s", secret))
	case leaf.Metadata.Namespace != sm.Metadata.Namespace || leaf.Spec.IsCA || !slices.Contains(leaf.Spec.DNSNames, tc.ServerName) ||
		!slices.Contains(leaf.Spec.Usages, "server auth"):
		out = append(out, fmt.Sprintf("Certificate %s: %+v, want a server certificate for %s in namespace %s", leaf.Metadata.Name, leaf.Spec, tc.ServerName, sm.Metadata.Namespace))
	default:
		ca, ok := issuers[leaf.Spec.IssuerRef.Name]
		if !ok || leaf.Spec.IssuerRef.Kind != "Issuer" || ca.Spec.CA == nil {
			out = append(out, fmt.Sprintf("Certificate %s is issued by %+v, want a CA Issuer of the file", leaf.Metadata.Name, leaf.Spec.IssuerRef))
			break
		}
		var root *Certificate
		for _, c := range certs {
			if c.Spec.SecretName == ca.Spec.CA.SecretName {
				root = &c
			}
		}
		if root == nil || !root.Spec.IsCA || issuers[root.Spec.IssuerRef.Name].Spec.SelfSigned == nil {
			out = append(out, fmt.Sprintf("the CA of Issuer %s is not a self-signed CA Certificate of the file", ca.Metadata.Name))
		}
	}
	// The patched Deployment mounts the Secret where --metrics-cert-dir reads.
	patched, err := applyAdds(dep, patch)
	if err != nil {
		return append(out, err.Error())
	}
	d := &appsv1.Deployment{}
	if b, err := yaml.Marshal(patched); err != nil || yaml.UnmarshalStrict(b, d) != nil {
		return append(out, fmt.Sprintf("the patched Deployment does not decode: %v", err))
	}
	c := d.Spec.Template.Spec.Containers[0]
	var dirs []string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--metrics-cert-dir="); ok {
			dirs = append(dirs, v)
		}
	}
	if len(dirs) != 1 { // none: the patch adds none; two: the Deployment had one already
		return append(out, fmt.Sprintf("the patched Deployment's arguments %v: want one --metrics-cert-dir", c.Args))
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if m.Name == v.Name && m.MountPath == dirs[0] && m.ReadOnly && v.Secret != nil && v.Secret.SecretName == secret {
				mounted = true
			}
		}
	}
	if !mounted {
		out = append(out, fmt.Sprintf("the patched Deployment does not mount Secret %s read-only at %s", secret, dirs[0]))
	}
	return out
}

// applyAdds applies the "add" operations of a JSON patch (RFC 6902) to a copy of doc.
func applyAdds(doc map[string]any, ops []JSONPatchOp) (map[string]any, error) {
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	for _, op := range ops {
		if op.Op != "add" {
			return nil, fmt.Errorf("operation %q: only add is applied here", op.Op)
		}
		parts := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
		// Only "-" (append) to an existing array of an object is used.
		if len(parts) < 2 || parts[len(parts)-1] != "-" {
			return nil, fmt.Errorf("path %s: only an append to an array is applied here", op.Path)
		}
		parent := parts[len(parts)-2]
		obj, ok := pathParent(out, parts[:len(parts)-2])
		arr, isArr := obj[parent].([]any)
		if !ok || !isArr {
			return nil, fmt.Errorf("path %s: no array there", op.Path)
		}
		obj[parent] = append(arr, op.Value)
	}
	return out, nil
}

// pathParent returns the object at parts of doc.
func pathParent(doc map[string]any, parts []string) (map[string]any, bool) {
	var cur any = doc
	for _, p := range parts {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

func loadServiceMonitor(t *testing.T) ServiceMonitor {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), ServiceMonitorFile))
	if err != nil {
		t.Fatal(err)
	}
	var sm ServiceMonitor
	if err := yaml.UnmarshalStrict(Documents(data)[0], &sm); err != nil || len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("the ServiceMonitor: %v, %d endpoints", err, len(sm.Spec.Endpoints))
	}
	return sm
}

func loadCertificates(t *testing.T) (map[string]Issuer, map[string]Certificate) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), CertificateFile))
	if err != nil {
		t.Fatal(err)
	}
	issuers, certs := map[string]Issuer{}, map[string]Certificate{}
	for _, doc := range Documents(data) {
		kind, err := Kind(doc)
		if err != nil {
			t.Fatal(err)
		}
		switch kind {
		case "Issuer":
			var i Issuer
			if err := yaml.UnmarshalStrict(doc, &i); err != nil || i.APIVersion != "cert-manager.io/v1" {
				t.Fatalf("Issuer: %v (%s)", err, i.APIVersion)
			}
			issuers[i.Metadata.Name] = i
		case "Certificate":
			var c Certificate
			if err := yaml.UnmarshalStrict(doc, &c); err != nil || c.APIVersion != "cert-manager.io/v1" {
				t.Fatalf("Certificate: %v (%s)", err, c.APIVersion)
			}
			certs[c.Metadata.Name] = c
		default:
			t.Errorf("%s: unexpected %s", CertificateFile, kind)
		}
	}
	return issuers, certs
}

func loadPatch(t *testing.T) []JSONPatchOp {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), CertPatchFile))
	if err != nil {
		t.Fatal(err)
	}
	var ops []JSONPatchOp
	if err := yaml.UnmarshalStrict(data, &ops); err != nil || len(ops) != 3 {
		t.Fatalf("%s: %v, %d operations, want 3", CertPatchFile, err, len(ops))
	}
	return ops
}

// shippedDocs returns the documents of config/500-controller.yaml of kind.
func shippedDocs(t *testing.T, kind string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), "..", "500-controller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, doc := range Documents(data) {
		if k, err := Kind(doc); err == nil && k == kind {
			out = append(out, doc)
		}
	}
	return out
}

// shippedMetricsService is the Service of config/500-controller.yaml with a port
// named metrics.
func shippedMetricsService(t *testing.T) *corev1.Service {
	t.Helper()
	for _, doc := range shippedDocs(t, "Service") {
		svc := &corev1.Service{}
		if err := yaml.UnmarshalStrict(doc, svc); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "metrics" }) {
			return svc
		}
	}
	t.Fatal("config/500-controller.yaml has no Service with a port metrics")
	return nil
}

// shippedDeployment is the Deployment of config/500-controller.yaml, as a JSON
// object.
func shippedDeployment(t *testing.T) map[string]any {
	t.Helper()
	docs := shippedDocs(t, "Deployment")
	if len(docs) != 1 {
		t.Fatalf("config/500-controller.yaml holds %d Deployments, want 1", len(docs))
	}
	var d map[string]any
	if err := yaml.Unmarshal(docs[0], &d); err != nil {
		t.Fatal(err)
	}
	return d
}
