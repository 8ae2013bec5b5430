package operator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/test/gitserver"
)

// monorepoFunctions is how many function directories the monorepo tests hold.
const monorepoFunctions = 10

// monorepo is one repository of monorepoFunctions function directories, a Function
// on each, and the operator checking them with its metrics served.
type monorepo struct {
	// url is the repository's; uploads counts the upload-packs its server ran (over
	// SSH, listings among them: see transfers).
	url      string
	uploads  func() int
	ssh      bool
	repo     *gitserver.Repo
	ns       string
	metrics  string
	interval time.Duration
	// system is the operator's own namespace (its ConfigMap's).
	system string
}

// startMonorepo commits the function directories (each func.yaml padded with a
// comment of padding bytes), starts the operator with the ConfigMap's data (nil: none,
// the check interval given) and creates a Function on each directory, over smart HTTP
// or, with sshd, over SSH with a key and known_hosts; it returns once all have read
// their func.yaml at the first commit.
func startMonorepo(t *testing.T, padding int, interval time.Duration, data map[string]string, sshd *gitserver.SSHServer) *monorepo {
	t.Helper()
	root := gitserver.NewRepoRoot(t)
	m := &monorepo{ns: newNamespace(t), metrics: freeAddr(t), interval: interval}
	m.repo = gitserver.CreateRepo(t, root, "mono")
	var auth *corev1.LocalObjectReference
	if sshd == nil {
		srv := gitserver.StartHTTP(t, root)
		m.url, m.uploads = srv.URL("mono"), func() int { return srv.UploadPacks("mono") }
	} else {
		m.url, m.uploads, m.ssh = sshd.URL(m.repo.Dir), func() int { return sshd.UploadPacks(m.repo.Dir) }, true
		mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: "git-ssh"}, Data: map[string][]byte{
			"ssh-privatekey": sshd.ClientPrivateKeyPEM(), "known_hosts": sshd.KnownHosts(),
		}})
		auth = &corev1.LocalObjectReference{Name: "git-ssh"}
	}
	files := map[string]string{}
	for i := 0; i < monorepoFunctions; i++ {
		files[fmt.Sprintf("fn%d/func.yaml", i)] = funcYAML(fmt.Sprintf("fn%d", i), "go") + "\n# " + strings.Repeat("x", padding) + "\n"
		files[fmt.Sprintf("fn%d/handle.go", i)] = "package function\n"
	}
	c1 := m.repo.Commit(t, "main", files, "functions")

	cfg := config.Defaults()
	cfg.CheckInterval, cfg.GitTimeout = interval, 10*time.Second
	m.system, _, _ = startOperatorServing(t, cfg, data, m.metrics, m.ns)
	ctx := context.Background()
	for i := 0; i < monorepoFunctions; i++ {
		if err := k8sClient.Create(ctx, &v1alpha1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: fmt.Sprintf("fn%d", i)},
			Spec: v1alpha1.FunctionSpec{Repository: v1alpha1.Repository{URL: m.url, Branch: "main", Path: fmt.Sprintf("fn%d", i), AuthSecretRef: auth}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < monorepoFunctions; i++ {
		eventually(t, 30*time.Second, sourceReady(m.ns, fmt.Sprintf("fn%d", i), corev1.ConditionTrue, v1alpha1.ReasonFuncYamlRead))
	}
	eventually(t, 10*time.Second, m.observed(t, c1))
	return m
}

// observed says which Function does not show commit yet, "" when all do.
func (m *monorepo) observed(t *testing.T, commit string) func() string {
	return func() string {
		for i := 0; i < monorepoFunctions; i++ {
			if g := getFunction(t, m.ns, fmt.Sprintf("fn%d", i)).Status.Git; g == nil || g.ObservedCommit != commit {
				return fmt.Sprintf("fn%d: status.git = %+v, want commit %s", i, g, commit)
			}
		}
		return ""
	}
}

// pushToAll commits a change to every function directory and waits until every
// Function shows it.
func (m *monorepo) pushToAll(t *testing.T) {
	t.Helper()
	changed := map[string]string{}
	for i := 0; i < monorepoFunctions; i++ {
		changed[fmt.Sprintf("fn%d/handle.go", i)] = "package function\n\n// changed\n"
	}
	c2 := m.repo.Commit(t, "main", changed, "change every function")
	// The listing is shared for an interval (and its jitter): a push is seen within two,
	// and the reads after.
	eventually(t, 4*m.interval, m.observed(t, c2))
}

// transfers counts the object transfers the server made of the repository: its
// upload-packs, less, over SSH (where each listing is an upload-pack too), the
// listings the operator made (func_operator_git_fetch_duration_seconds_count of
// ls-remote: this operator lists no other repository) and the transfers it made again
// after go-git's close race (func_operator_git_transfer_retries_total).
func (m *monorepo) transfers(t *testing.T) int {
	t.Helper()
	if !m.ssh {
		return m.uploads()
	}
	scraped := scrape(t, m.metrics)
	listings, _ := value(scraped, "func_operator_git_fetch_duration_seconds", map[string]string{"operation": "ls-remote"})
	if listings < 1 {
		t.Fatalf("over SSH: the operator's metrics show %g listings, want at least the first", listings)
	}
	retries, _ := value(scraped, "func_operator_git_transfer_retries_total", nil)
	return m.uploads() - int(listings) - int(retries)
}

// wantTransfers waits until transfers counts want: over SSH, sshd logs a listing as
// it starts and the operator counts it when it ends, so one in flight reads one high
// for a moment. Any other count that lasts fails.
func (m *monorepo) wantTransfers(t *testing.T, want int, what string) {
	t.Helper()
	eventually(t, 5*time.Second, func() string {
		if got := m.transfers(t); got != want {
			return fmt.Sprintf("%s: %d transfers at the server in all, want %d", what, got, want)
		}
		return ""
	})
}

// commitStore reads the commit store's series from the operator's metrics.
func (m *monorepo) commitStore(t *testing.T) (bytes, commits, evictions float64) {
	t.Helper()
	f := scrape(t, m.metrics)
	for name, to := range map[string]*float64{
		"func_operator_git_commit_store_bytes":           &bytes,
		"func_operator_git_commit_store_commits":         &commits,
		"func_operator_git_commit_store_evictions_total": &evictions,
	} {
		v, ok := value(f, name, nil)
		if !ok {
			t.Fatalf("the operator's metrics lack %s", name)
		}
		*to = v
	}
	return bytes, commits, evictions
}

// TestOperator_OneTransferPerCommit: the Functions of a monorepo cost one object
// transfer of each commit, counted at the server, over smart HTTP and over SSH: one
// for their first check, one for a push that changes every one of them (without
// sharing, one per Function each time: the code before this measured 10 and 20 over
// HTTP). The commit store's metrics show each commit kept, none dropped.
func TestOperator_OneTransferPerCommit(t *testing.T) {
	sshd := gitserver.StartSSH(t)
	for _, tt := range []struct {
		name string
		sshd *gitserver.SSHServer
	}{{"smart HTTP", nil}, {"SSH", sshd}} {
		t.Run(tt.name, func(t *testing.T) {
			m := startMonorepo(t, 0, 4*time.Second, nil, tt.sshd)
			m.wantTransfers(t, 1, fmt.Sprintf("first check of %d Functions on one commit", monorepoFunctions))
			if bytes, commits, evictions := m.commitStore(t); bytes <= 0 || commits != 1 || evictions != 0 {
				t.Errorf("commit store after the first check: %g bytes, %g commits, %g evictions; want some bytes, 1 commit, 0 evictions", bytes, commits, evictions)
			}

			m.pushToAll(t)
			m.wantTransfers(t, 2, "after one push (one per commit)")
			if _, commits, evictions := m.commitStore(t); commits != 2 || evictions != 0 {
				t.Errorf("commit store after a push: %g commits, %g evictions; want 2 kept (within the default %d MiB), 0 evictions",
					commits, evictions, config.DefaultCommitStoreMaxBytes>>20)
			}
			// Steady state: no transfer.
			time.Sleep(2 * m.interval)
			m.wantTransfers(t, 2, "steady state")
		})
	}
}

// TestOperator_CommitStoreMaxBytes: the ConfigMap's commitStoreMaxBytes bounds what
// the operator keeps of the commits it fetched, and a lower value takes effect at
// once. Commits of a monorepo whose func.yaml files take about 0.9 MiB each: with the
// default bound both are kept (the positive control, same payload); set to 1Mi, the
// older is dropped without waiting for a push; a third commit drops the second. Every
// commit still costs one transfer for all its Functions.
func TestOperator_CommitStoreMaxBytes(t *testing.T) {
	const padding = 90 << 10 // 10 func.yaml files of about 90 KiB: 0.9 MiB a commit
	m := startMonorepo(t, padding, config.MinCheckInterval, map[string]string{config.KeyCheckInterval: config.MinCheckInterval.String()}, nil)
	type store struct{ bytes, commits, evictions float64 }
	read := func() store {
		b, c, e := m.commitStore(t)
		return store{b, c, e}
	}
	if got := read(); got.bytes < monorepoFunctions*padding || got.commits != 1 || got.evictions != 0 {
		t.Errorf("commit store after the first check: %+v; want at least %d bytes (the func.yaml files), 1 commit, 0 evictions", got, monorepoFunctions*padding)
	}
	m.pushToAll(t)
	if got := read(); got.bytes < 2*monorepoFunctions*padding || got.commits != 2 || got.evictions != 0 {
		t.Errorf("commit store after a push, default bound: %+v; want both commits kept, 0 evictions", got)
	}

	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: m.system, Name: config.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data[config.KeyCommitStoreMaxBytes] = "1Mi"
	if err := k8sClient.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if got := read(); got.bytes > 1<<20 || got.commits != 1 || got.evictions != 1 {
			return fmt.Sprintf("commit store after the bound was lowered to 1Mi: %+v; want within 1Mi, 1 commit, 1 eviction", got)
		}
		return ""
	})
	m.pushToAll(t)
	if got := read(); got.bytes > 1<<20 || got.commits != 1 || got.evictions != 2 {
		t.Errorf("commit store after a push, bound 1Mi: %+v; want within 1Mi, 1 commit, 2 evictions", got)
	}
	m.wantTransfers(t, 3, "three commits (one per commit, whatever the bound)")
}
