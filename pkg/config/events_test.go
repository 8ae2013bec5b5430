package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseEventSink(t *testing.T) {
	tests := []struct {
		value   string
		want    EventSink
		wantErr bool
	}{
		{value: "", want: EventSink{}},
		{value: "  ", want: EventSink{}},
		{value: "https://events.example.com/hooks/func", want: EventSink{URL: "https://events.example.com/hooks/func"}},
		{value: " http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default\n",
			want: EventSink{URL: "http://broker-ingress.knative-eventing.svc.cluster.local/team-a/default"}},
		{value: "http://10.0.0.1:8080", want: EventSink{URL: "http://10.0.0.1:8080"}},
		{value: "broker:team-a/default", want: EventSink{Broker: types.NamespacedName{Namespace: "team-a", Name: "default"}}},
		// Credentials and queries do not belong in a ConfigMap.
		{value: "https://user:token@events.example.com/", wantErr: true},
		{value: "https://events.example.com/?token=abc", wantErr: true},
		{value: "ftp://events.example.com/", wantErr: true},
		{value: "events.example.com", wantErr: true},
		{value: "https://Events.Example.com/", wantErr: true},
		{value: "http://[::1]:8080/", wantErr: true},
		{value: "http://host:0/", wantErr: true},
		{value: "http://host:65536/", wantErr: true},
		{value: "broker:default", wantErr: true},
		{value: "broker:Team/default", wantErr: true},
		{value: "broker:team-a/default/x", wantErr: true},
		{value: "broker:" + strings.Repeat("a", 64) + "/b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := ParseEventSink(tt.value)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseEventSink(%q) error = %v, want error %t", tt.value, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseEventSink(%q) (-want +got):\n%s", tt.value, diff)
			}
		})
	}
}

func TestUpdate_Events(t *testing.T) {
	last := Defaults()
	last.Events.Sink = EventSink{URL: "https://last.example.com/"}
	last.Events.Sinks = map[string]EventSink{"team-a": {URL: "https://a-last.example.com/"}}
	last.Events.QueueSize = 50
	tests := []struct {
		name        string
		data        map[string]string
		want        Events
		wantInvalid []string
		wantUnknown []string
	}{{
		name: "absent: no sink, default bounds",
		data: map[string]string{},
		want: DefaultEvents(),
	}, {
		name: "a sink, a namespace's own, bounds",
		data: map[string]string{KeyEventSink: "broker:platform/default", KeyEventSinkPrefix + "team-a": "https://a.example.com/x",
			KeyEventSinkPrefix + "team-b": "", KeyEventQueueSize: " 10 ", KeyEventTimeout: "2s"},
		want: Events{Sink: EventSink{Broker: types.NamespacedName{Namespace: "platform", Name: "default"}},
			Sinks: map[string]EventSink{"team-a": {URL: "https://a.example.com/x"}, "team-b": {}}, QueueSize: 10, Timeout: 2 * time.Second},
	}, {
		name: "invalid values keep their last good ones",
		data: map[string]string{KeyEventSink: "https://u:p@x.example.com/", KeyEventSinkPrefix + "team-a": "nowhere",
			KeyEventQueueSize: "0", KeyEventTimeout: "500ms"},
		want: Events{Sink: last.Events.Sink, Sinks: last.Events.Sinks, QueueSize: 50, Timeout: DefaultEventTimeout},
		wantInvalid: []string{
			`key eventQueueSize: 0 is outside 1 to 20000`,
			`key eventSink.team-a: "nowhere" is neither an http:// or https:// URL (a host, a port and a path; no credentials, no query) nor broker:<namespace>/<name>`,
			`key eventSink: "https://u:p@x.example.com/" is neither an http:// or https:// URL (a host, a port and a path; no credentials, no query) nor broker:<namespace>/<name>`,
			`key eventTimeout: 500ms is shorter than the minimum 1s`,
		},
	}, {
		name:        "a malformed namespace key is unknown",
		data:        map[string]string{KeyEventSinkPrefix + "Team_A": "https://a.example.com/", KeyEventSinkPrefix: "https://a.example.com/"},
		want:        DefaultEvents(),
		wantUnknown: []string{"eventSink.", "eventSink.Team_A"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, invalid, unknown := Update(last, configMap(tt.data))
			if diff := cmp.Diff(tt.want, got.Events); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
			var gotInvalid []string
			for _, err := range invalid {
				gotInvalid = append(gotInvalid, err.Error())
			}
			if diff := cmp.Diff(tt.wantInvalid, gotInvalid); diff != "" {
				t.Errorf("invalid (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnknown, unknown); diff != "" {
				t.Errorf("unknown (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvents_SinkFor(t *testing.T) {
	e := Events{Sink: EventSink{URL: "https://all.example.com/"},
		Sinks: map[string]EventSink{"team-a": {URL: "https://a.example.com/"}, "quiet": {}}}
	for ns, want := range map[string]EventSink{
		"team-a": {URL: "https://a.example.com/"},
		"team-b": {URL: "https://all.example.com/"},
		"quiet":  {},
	} {
		if got := e.SinkFor(ns); got != want {
			t.Errorf("SinkFor(%s) = %v, want %v", ns, got, want)
		}
	}
}
