//go:build scale

package scale

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fnops/func-operator/api/v1alpha1"
)

// observeEvery is how often the push phase lists the Functions while waiting for
// every one to show the pushed commit: the resolution of its time to all observed.
const observeEvery = time.Second

// pushResult is what one push to every repository cost and how soon the fleet saw it.
type pushResult struct {
	// commit is what was pushed.
	commit string
	// pushing is how long writing the commit into every repository took.
	pushing time.Duration
	// toObserved is from the first repository's push to the last Function showing
	// the commit (status.git.observedCommit), polled every observeEvery.
	toObserved time.Duration
	// clones are the upload-packs (object transfers) the git server served meanwhile;
	// listings its ref advertisements.
	clones, listings int
	// writes are the API server's writes but of notObjectWrites meanwhile (every
	// client: the benchmark writes nothing then), by resource in writesByResource.
	writes           float64
	writesByResource map[string]float64
	// perRepo is the most upload-packs one repository served.
	perRepo int
	// disk is the most the operator's work directory held meanwhile (sampled).
	disk int64
}

// push writes, into every repository, one commit that changes every function
// directory (its handle.go), as a push to a monorepo that touches all its functions,
// and waits until every Function shows it. The operator learns of it from its
// periodic listing (no webhook is called): the time to all observed holds up to an
// interval of that.
func (b *bench) push(t *testing.T) pushResult {
	t.Helper()
	most := b.p.mostPerRepo()
	files := make(map[string]string, most)
	for i := 0; i < most; i++ {
		files["fns/"+fnName(i)+"/handle.go"] = "package function\n\n// changed by one push to every function\n"
	}
	res := pushResult{commit: b.template.Commit(t, "main", files, "a change to every function")}
	uploads := func() map[string]int {
		m := make(map[string]int, len(b.repos))
		for _, r := range b.repos {
			m[r.name] = b.git.UploadPacks(r.name)
		}
		return m
	}
	before, beforeUploads := b.take(t), uploads()
	b.disk.take()
	for _, r := range b.repos {
		// The bare copy takes the template's new tip: the same commit in every repository.
		cmd := exec.Command("git", "--git-dir", filepath.Join(b.gitRoot, r.name+".git"), "fetch", "--quiet", "--no-tags",
			b.template.Dir, "+refs/heads/main:refs/heads/main")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pushing to %s: %v\n%s", r.name, err, out)
		}
	}
	res.pushing = time.Since(before.at)
	t.Logf("pushed %s to %d repositories in %s; waiting for all %d Functions to show it", res.commit[:7], len(b.repos), res.pushing.Round(time.Millisecond), b.p.n)
	ctx := context.Background()
	best, progressed := -1, time.Now()
	for {
		if msg := b.op.alive(); msg != "" {
			t.Fatal(msg)
		}
		seen, err := b.observedCount(ctx, res.commit)
		now := time.Now()
		switch {
		case err != nil:
			t.Logf("listing Functions: %v", err)
		case seen == b.p.n:
			res.toObserved = now.Sub(before.at)
			after, afterUploads := b.take(t), uploads()
			res.clones, res.listings = after.clones-before.clones, after.listings-before.listings
			res.disk = b.disk.take()
			for name, n := range afterUploads {
				res.perRepo = max(res.perRepo, n-beforeUploads[name])
			}
			writes := diff(before.apiserv.byLabel(apiRequests, "resource", "verb", writeVerbs), after.apiserv.byLabel(apiRequests, "resource", "verb", writeVerbs))
			res.writesByResource = writes
			for resource, v := range writes {
				if !notObjectWrites[resource] {
					res.writes += v
				}
			}
			return res
		case seen > best:
			best, progressed = seen, now
		}
		if now.Sub(progressed) > stallAfter {
			t.Fatalf("%d/%d Functions show the pushed commit after %s, none more for %s", best, b.p.n, now.Sub(before.at).Round(time.Second), stallAfter)
		}
		time.Sleep(observeEvery)
	}
}

// observedCount lists the Functions and counts those whose status shows commit.
func (b *bench) observedCount(ctx context.Context, commit string) (int, error) {
	seen := 0
	err := b.eachFunction(ctx, func(fn *v1alpha1.Function) {
		if g := fn.Status.Git; g != nil && g.ObservedCommit == commit {
			seen++
		}
	})
	return seen, err
}

// log reports the push phase.
func (r pushResult) log(t *testing.T, p params) {
	t.Helper()
	t.Logf("\none push to every repository (%d function directories each, every one changed): %s\n"+
		"  %-44s %s (writing the commit: %s)\n  %-44s %d (%.2f per repository, at most %d)\n  %-44s %d\n  %-44s %g (%s)\n  %-44s %s",
		p.mostPerRepo(), r.commit[:7],
		"to every Function showing it", r.toObserved.Round(time.Millisecond), r.pushing.Round(time.Millisecond),
		"object transfers (upload-packs)", r.clones, float64(r.clones)/float64(p.r), r.perRepo,
		"listings meanwhile", r.listings,
		"writes (not Lease, reviews)", r.writes, formatMap(r.writesByResource),
		"work directory, most sampled", kib(float64(r.disk)))
}

// goals checks the push phase against the goal: one transfer per commit,
// whatever the functions a repository holds.
func (r pushResult) goals(t *testing.T, p params, check func(ok bool, goal, format string, args ...any)) {
	t.Helper()
	check(r.perRepo == 1 && r.clones == p.r, "1 object transfer per repository per push, whatever M",
		"%d transfers for %d repositories of up to %d functions, at most %d of one", r.clones, p.r, p.mostPerRepo(), r.perRepo)
}
