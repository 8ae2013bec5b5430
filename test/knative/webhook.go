package knative

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	"knative.dev/pkg/apis"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// webhookName names the webhook configurations the in-process webhook registers.
const webhookName = "serving-defaults.func-operator.test"

// resource is what the webhook defaults and validates of one Knative Serving
// resource: a new object of its type.
type resource func() apis.Defaultable

// webhookResources are the resources of serving.knative.dev/v1 whose defaults and
// validation Knative's webhook applies to what users (and func deploy) write.
var webhookResources = map[string]resource{
	"services":       func() apis.Defaultable { return &servingv1.Service{} },
	"configurations": func() apis.Defaultable { return &servingv1.Configuration{} },
	"routes":         func() apis.Defaultable { return &servingv1.Route{} },
	"revisions":      func() apis.Defaultable { return &servingv1.Revision{} },
}

// webhook serves, on 127.0.0.1, what Knative's webhook does with the serving.knative.dev
// objects written: their defaults (SetDefaults, which also records the creator and
// last modifier) and their validation (Validate), with Knative's own code, as its
// webhook calls it — with the defaults built into that code, which are those of the
// release's config-defaults and config-features (they hold only examples). Knative's
// webhook binary cannot run here: it serves its certificates to the API server
// through a Service, which needs the cluster's service network.
type webhook struct {
	server *http.Server
	client kubernetes.Interface
	done   chan struct{}
}

// startWebhook serves the webhook and registers it with the API server of cfg.
func startWebhook(ctx context.Context, cfg *rest.Config) (*webhook, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		return nil, fmt.Errorf("knative webhook: generating its certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("knative webhook: loading its certificate: %w", err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("knative webhook: listening: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/defaults", &admission.Webhook{Handler: admission.HandlerFunc(defaults)})
	mux.Handle("/validation", &admission.Webhook{Handler: admission.HandlerFunc(validation)})
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("knative webhook: creating a client: %w", err)
	}
	w := &webhook{server: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, client: c, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		_ = w.server.Serve(l)
	}()
	base := "https://" + l.Addr().String()
	if err := w.register(ctx, base, certPEM); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

// register writes the mutating and validating webhook configurations.
func (w *webhook) register(ctx context.Context, base string, caBundle []byte) error {
	resources := make([]string, 0, len(webhookResources))
	for r := range webhookResources {
		resources = append(resources, r)
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{servingv1.SchemeGroupVersion.Group}, APIVersions: []string{servingv1.SchemeGroupVersion.Version},
			Resources: resources, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		},
	}}
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "defaults." + webhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + "/defaults"), CABundle: caBundle},
			Rules:                   rules,
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "validation." + webhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + "/validation"), CABundle: caBundle},
			Rules:                   rules,
			SideEffects:             &none,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	api := w.client.AdmissionregistrationV1()
	if _, err := api.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("knative webhook: registering its defaults: %w", err)
	}
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("knative webhook: registering its validation: %w", err)
	}
	return nil
}

// stop unregisters the webhook (a webhook that fails closed must not outlive its
// server) and stops serving.
func (w *webhook) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Errors are left: the API server may have stopped first.
	api := w.client.AdmissionregistrationV1()
	_ = api.MutatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	_ = api.ValidatingWebhookConfigurations().Delete(ctx, webhookName, metav1.DeleteOptions{})
	_ = w.server.Shutdown(ctx)
	<-w.done
}

// decode returns the request's object (and the old one of an update) as Knative's
// type, and the context Knative's webhook gives SetDefaults and Validate.
func decode(ctx context.Context, req admission.Request) (apis.Defaultable, context.Context, error) {
	newObj, ok := webhookResources[req.Resource.Resource]
	if !ok || req.Resource.Group != servingv1.SchemeGroupVersion.Group {
		return nil, nil, fmt.Errorf("resource %s is not served here", req.Resource)
	}
	// Knative's webhook refuses a field its types do not know: decoding it away would
	// drop it from the object.
	obj := newObj()
	dec := json.NewDecoder(bytes.NewReader(req.Object.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", req.Resource.Resource, err)
	}
	ctx = apis.WithUserInfo(ctx, &req.UserInfo)
	switch req.Operation {
	case admissionv1.Create:
		ctx = apis.WithinCreate(ctx)
	case admissionv1.Update:
		old := newObj()
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return nil, nil, fmt.Errorf("decoding the old %s: %w", req.Resource.Resource, err)
		}
		ctx = apis.WithinUpdate(ctx, old)
		if req.SubResource != "" {
			ctx = apis.WithinSubResourceUpdate(ctx, old, req.SubResource)
		}
	}
	return obj, ctx, nil
}

// defaults answers with the patch of Knative's defaults.
func defaults(ctx context.Context, req admission.Request) admission.Response {
	obj, ctx, err := decode(ctx, req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	obj.SetDefaults(ctx)
	out, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}

// validation answers with Knative's validation of the (defaulted) object.
func validation(ctx context.Context, req admission.Request) admission.Response {
	obj, ctx, err := decode(ctx, req)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	v, ok := obj.(apis.Validatable)
	if !ok {
		return admission.Allowed("")
	}
	if fe := v.Validate(ctx); fe != nil {
		if errs := fe.Filter(apis.ErrorLevel); errs != nil {
			return admission.Denied(errs.Error())
		}
	}
	return admission.Allowed("")
}
