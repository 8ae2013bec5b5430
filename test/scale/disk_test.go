//go:build scale

package scale

import (
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// diskEvery is how often the work directory's size is sampled.
const diskEvery = 100 * time.Millisecond

// diskSampler samples the bytes under the operator's work directory (its clones in
// flight, the func library's kubeconfig) in the background, and keeps the largest.
type diskSampler struct {
	mu   sync.Mutex
	peak int64
}

// sampleDisk samples dir every diskEvery until the test ends.
func sampleDisk(t *testing.T, dir string) *diskSampler {
	d := &diskSampler{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(diskEvery)
		defer tick.Stop()
		for {
			n := dirBytes(dir)
			d.mu.Lock()
			d.peak = max(d.peak, n)
			d.mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return d
}

// take returns the largest size sampled since the last take.
func (d *diskSampler) take() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.peak
	d.peak = 0
	return p
}

// dirBytes adds the sizes of the regular files under dir (what is gone by the time
// it is reached counts nothing).
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.Type().IsRegular() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
