package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestUpdate_Base(t *testing.T) {
	window, err := ParseWindow("Sat 02:00-06:00")
	if err != nil {
		t.Fatal(err)
	}
	last := Defaults()
	last.Base.Updates = "Rebase"
	tests := []struct {
		name    string
		data    map[string]string
		want    Base
		invalid []string // keys named in the errors
	}{{
		name: "defaults",
		want: DefaultBase(),
	}, {
		name: "every key",
		data: map[string]string{"baseUpdates": " RebaseAndRebuild ", "baseImageMirrors": "docker.io/paketobuildpacks=127.0.0.1:5000/paketo, ghcr.io=127.0.0.1:5000/ghcr",
			"baseCheckInterval": "1h", "rebaseTimeout": "2m", "maintenanceWindow": "Sat 02:00-06:00", "maintenanceWindowCauses": "Base, Middleware"},
		want: Base{Updates: "RebaseAndRebuild", Mirrors: map[string]string{"docker.io/paketobuildpacks": "127.0.0.1:5000/paketo", "ghcr.io": "127.0.0.1:5000/ghcr"},
			CheckInterval: time.Hour, RebaseTimeout: 2 * time.Minute, Window: window, WindowCauses: []string{"Base", "Middleware"}},
	}, {
		name: "invalid values keep the last good ones",
		data: map[string]string{"baseUpdates": "Always", "baseImageMirrors": "docker.io", "baseCheckInterval": "10s", "rebaseTimeout": "soon",
			"maintenanceWindow": "weekends", "maintenanceWindowCauses": "Source"},
		want:    Base{Updates: "Rebase", CheckInterval: 10 * time.Minute, RebaseTimeout: 10 * time.Minute, WindowCauses: []string{"Base"}},
		invalid: []string{"baseCheckInterval", "baseImageMirrors", "baseUpdates", "maintenanceWindow", "maintenanceWindowCauses", "rebaseTimeout"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, invalid, unknown := Update(last, &corev1.ConfigMap{Data: tt.data})
			if diff := cmp.Diff(tt.want, got.Base); diff != "" {
				t.Errorf("Base (-want +got):\n%s", diff)
			}
			if len(unknown) != 0 {
				t.Errorf("unknown keys %v", unknown)
			}
			var keys []string
			for _, err := range invalid {
				k, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "key "), ":")
				keys = append(keys, k)
			}
			if diff := cmp.Diff(tt.invalid, keys); diff != "" {
				t.Errorf("invalid keys (-want +got):\n%s\n%v", diff, invalid)
			}
		})
	}
}

func TestBase_Holds(t *testing.T) {
	b := DefaultBase()
	if b.Holds("Base") {
		t.Error("no window configured, yet it holds base updates")
	}
	b.Window, _ = ParseWindow("Sat 02:00-06:00")
	if !b.Holds("Base") || b.Holds("Middleware") {
		t.Errorf("window %q holds Base %v, Middleware %v; want true, false", b.Window, b.Holds("Base"), b.Holds("Middleware"))
	}
}
