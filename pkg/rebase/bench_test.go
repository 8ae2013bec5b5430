package rebase

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/fnops/func-operator/test/registrytest"
)

// BenchmarkRebase rebases a realistic function image, random content: a run image
// of 30 MiB in 3 layers under 60 MiB of app layers (3), onto a run image whose 2
// top layers (20 MiB) are new. Each rebase writes to a new repository:
//   - same-registry: the layers are mounted from the app's and run image's
//     repositories, the config alone is uploaded;
//   - other-registry: every layer is downloaded and uploaded (~90 MiB);
//   - again: the rebase of an image already rebased to that repository, which
//     pushes nothing (the same digest).
func BenchmarkRebase(b *testing.B) {
	const mib = 1 << 20
	reg := registrytest.Start(b)
	reg.ScopeBlobs()
	s := newSceneIn(b, reg, sceneSpec{
		run: runSpec{layers: []int64{10 * mib, 10 * mib, 10 * mib}},
		app: appSpec{layers: []int64{30 * mib, 20 * mib, 10 * mib}},
	}, nil)
	other := registrytest.Start(b)
	other.ScopeBlobs()
	// A new repository per rebase, across runs too (-count).
	var seq atomic.Int64

	for _, bc := range []struct {
		name   string
		target func() string
		warm   bool // rebase once before timing
	}{
		{name: "same-registry", target: func() string { return fmt.Sprintf("%s/rebased-%d", reg.Host, seq.Add(1)) }},
		{name: "other-registry", target: func() string { return fmt.Sprintf("%s/rebased-%d", other.Host, seq.Add(1)) }},
		{name: "again", target: func() string { return reg.Host + "/app" }, warm: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := rebaser()
			if bc.warm {
				req := s.request()
				req.Target = bc.target()
				if _, err := r.Rebase(context.Background(), req); err != nil {
					b.Fatalf("Rebase: %v", err)
				}
			}
			var mounted, uploaded, bytes int64
			n := 0
			for ; b.Loop(); n++ {
				req := s.request()
				req.Target = bc.target()
				res, err := r.Rebase(context.Background(), req)
				if err != nil {
					b.Fatalf("Rebase: %v", err)
				}
				mounted += int64(res.Mounted)
				uploaded += int64(res.Uploaded)
				bytes += res.UploadedBytes
			}
			b.ReportMetric(float64(mounted)/float64(n), "mounted/op")
			b.ReportMetric(float64(uploaded)/float64(n), "uploaded/op")
			b.ReportMetric(float64(bytes)/float64(n)/mib, "MiB-uploaded/op")
		})
	}
}
