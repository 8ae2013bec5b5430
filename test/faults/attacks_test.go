package faults

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fnops/func-operator/api/v1alpha1"
	"github.com/fnops/func-operator/pkg/config"
	"github.com/fnops/func-operator/pkg/git"
	"github.com/fnops/func-operator/test/envtest"
	"github.com/fnops/func-operator/test/gitserver"
	"github.com/fnops/func-operator/test/registrytest"
)

// attackConfig are bounds small enough for attacks of a test's size: each attack
// is over them by a factor of two at least.
var attackConfig = map[string]string{
	config.KeyCloneMaxBytes:   "4Mi",
	config.KeyInspectMaxBytes: "1Gi",
	// The zip bomb's first GiB (gunzip at about 1 GB/s) is read within it.
	config.KeyRegistryTimeout: "10s",
	// git-trickle never ends, so any bound catches it; the controls' clones (an SSH
	// one forks sshd and two shells) must fit in it with both cores busy beside the
	// suite: 3s did not (a cold CI run, the SSH control timed out).
	config.KeyGitTimeout: "10s",
}

// rssBound is the most memory the operator may use through every attack: its peak
// resident set (VmHWM), against the Deployment's limit of 1Gi. Measured (see
// docs/hostile-input.md): about 90 MiB.
const rssBound = 192 << 20

// attack is a Function that points at hostile input, and the condition reason it
// must end in.
type attack struct {
	name   string
	cond   apis.ConditionType
	reason string
}

// TestAttacks points Functions at hostile repositories, func.yamls, images and
// registries, with the operator binary run as shipped (its user, a read-only
// temporary directory, the Deployment's arguments): each must end in its own
// reason, no message may carry what a server sent beyond the caps, the operator must
// not restart, and its memory must stay under rssBound. Functions over HTTPS and SSH,
// an inspected image and a build work beside them (the positive controls), and a
// namespace of Functions on a hanging registry does not keep others' checks waiting.
func TestAttacks(t *testing.T) {
	// The HTTPS git server's certificate, as a pod would get a CA bundle mounted.
	httpsRoot := gitserver.NewRepoRoot(t)
	https := gitserver.StartHTTPS(t, httpsRoot)
	certs := newShippedRoot(t)
	caFile := certs.path("ca.pem")
	if err := os.WriteFile(caFile, https.CertificatePEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := setUpWithBuilds(t, attackConfig, []string{"SSL_CERT_FILE=" + caFile})

	// Positive controls: a private repository and registry, a build, HTTPS, SSH.
	ctl := s.newFleet(t, "ctl", 1, 1, false)
	s.fleets = append(s.fleets, ctl)
	httpsFn := s.controlFunction(t, ctl.ns, "over-https", func(files map[string]string) string {
		repo := gitserver.CreateRepo(t, httpsRoot, "https-fn")
		repo.Commit(t, "main", files, "init")
		return https.URL("https-fn")
	}, nil)
	ssh := gitserver.StartSSH(t)
	sshFn := s.controlFunction(t, ctl.ns, "over-ssh", func(files map[string]string) string {
		repo := gitserver.CreateRepo(t, gitserver.NewRepoRoot(t), "ssh-fn")
		repo.Commit(t, "main", files, "init")
		return ssh.URL(repo.Dir)
	}, map[string][]byte{git.KeySSHPrivateKey: ssh.ClientPrivateKeyPEM(), git.KeyKnownHosts: ssh.KnownHosts()})

	ns := envtest.NewNamespace(t, s.env.Config, "attacks-", true)
	s.createSecrets(t, ns)
	attacks := s.launchAttacks(t, ns)

	for _, name := range []string{ctl.healthy[0], httpsFn, sshFn} {
		until(t, 2*time.Minute, name+" Ready", func() string { return s.ready(ctl.ns, name) })
	}
	until(t, 2*time.Minute, "the outdated control rebuilt", func() string { return s.rebuilt(ctl.ns, ctl.outdated[0]) })
	for _, a := range attacks {
		until(t, 2*time.Minute, a.name+" "+a.reason, func() string {
			fn := s.function(ns, a.name)
			if fn == nil {
				return "not read"
			}
			if c := fn.Status.GetCondition(a.cond); c == nil || c.Reason != a.reason {
				return fmt.Sprintf("%s: %s %+v, want reason %s", a.name, a.cond, c, a.reason)
			}
			return ""
		})
	}
	// The padded executable was read, not skipped: its middleware version shows.
	if fn := s.function(ns, "padded-elf"); fn.Status.Middleware == nil || fn.Status.Middleware.Current != registrytest.FuncGoVersion {
		t.Errorf("padded-elf: status.middleware %+v, want current %s read from the padded executable", fn.Status.Middleware, registrytest.FuncGoVersion)
	}
	s.checkMessages(t, ns)
	// The attacks are over: their Functions go, so that the retries of those that time
	// out (git-trickle, registry-trickle: retried within 9s, each holding a worker up to
	// its timeout) take no worker from what comes next, how long a Function of another
	// namespace waits beside one namespace's hanging reads.
	if err := s.admin.DeleteAllOf(context.Background(), &v1alpha1.Function{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	until(t, 2*time.Minute, "the attacks' Functions gone", func() string {
		fns := &v1alpha1.FunctionList{}
		if err := s.admin.List(context.Background(), fns, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		if len(fns.Items) > 0 {
			return fmt.Sprintf("%d Functions left", len(fns.Items))
		}
		return ""
	})

	// A namespace whose Functions hang on their registry (registryTimeout 20s)
	// holds at most half the workers: a Function of another namespace is checked at
	// once, not after the hanging reads.
	s.setConfig(t, map[string]string{config.KeyRegistryTimeout: "20s"})
	// Three registries, so that the per-host cap (half the workers each) would let
	// them hold every worker: the namespace's cap is what keeps two free.
	var hanging [3]*registrytest.Registry
	var imgs [3]string
	slow := envtest.NewNamespace(t, s.env.Config, "attacks-slow-", true)
	s.createSecrets(t, slow)
	for i := range hanging {
		hanging[i] = registrytest.Start(t)
		imgs[i] = hanging[i].Push(t, "slow/fn", s.middleware)
		hanging[i].Trickle(time.Second)
	}
	slowNames := make([]string, 12)
	files := map[string]string{}
	for i := range slowNames {
		slowNames[i] = fmt.Sprintf("hang-%d", i)
		files["fns/"+slowNames[i]+"/func.yaml"] = funcYAMLFor(slowNames[i])
	}
	gitserver.CreateRepo(t, s.gitRoot, slow).Commit(t, "main", files, "hanging images")
	for i, name := range slowNames {
		s.createService(t, slow, name, imgs[i%len(imgs)])
		s.createFunction(t, slow, name, s.git.URL(slow), "fns/"+name, "")
	}
	until(t, time.Minute, "the hanging reads under way", func() string {
		if s.function(slow, slowNames[len(slowNames)-1]) == nil {
			return "not created"
		}
		var n int64
		for _, h := range hanging {
			n += h.Requests()
		}
		if n < 2 {
			return fmt.Sprintf("%d requests to the hanging registries", n)
		}
		return ""
	})
	late := s.newFleet(t, "late", 1, 0, false)
	s.fleets = append(s.fleets, late)
	waited := until(t, 15*time.Second, "a Function of another namespace Ready beside the hanging ones", func() string { return s.ready(late.ns, late.healthy[0]) })
	t.Logf("a Function of another namespace was Ready %s after it was created, beside 12 Functions of one namespace hanging 20s on 3 registries", waited.Round(100*time.Millisecond))

	// A second namespace hanging on the same registries: the two hold all but one
	// worker between them (pkg/lanes), the last kept for a namespace that reads
	// nothing yet, so a third namespace's Function is checked at once. (Before, the
	// two held every worker, half each, and it was not Ready within 35s.)
	slow2 := envtest.NewNamespace(t, s.env.Config, "attacks-slow2-", true)
	s.createSecrets(t, slow2)
	gitserver.CreateRepo(t, s.gitRoot, slow2).Commit(t, "main", files, "hanging images")
	for i, name := range slowNames {
		s.createService(t, slow2, name, imgs[i%len(imgs)])
		s.createFunction(t, slow2, name, s.git.URL(slow2), "fns/"+name, "")
	}
	var before int64
	for _, h := range hanging {
		before += h.Requests()
	}
	until(t, time.Minute, "the second namespace's hanging reads under way", func() string {
		var n int64
		for _, h := range hanging {
			n += h.Requests()
		}
		if n < before+2 {
			return fmt.Sprintf("%d requests to the hanging registries, want %d", n, before+2)
		}
		return ""
	})
	late2 := s.newFleet(t, "late2", 1, 0, false)
	s.fleets = append(s.fleets, late2)
	waited2 := until(t, 15*time.Second, "a Function of a third namespace Ready beside two namespaces' hanging ones",
		func() string { return s.ready(late2.ns, late2.healthy[0]) })
	t.Logf("a Function of a third namespace was Ready %s after it was created, beside 12 Functions each of two namespaces hanging 20s on 3 registries",
		waited2.Round(100*time.Millisecond))

	if n := s.kubelet.Starts(); n != 1 {
		t.Errorf("the operator was started %d times, want 1: an attack crashed it", n)
	}
	hwm := peakRSS(t, s.kubelet.pid())
	t.Logf("operator peak RSS (VmHWM) through every attack: %d MiB", hwm>>20)
	if hwm > rssBound {
		t.Errorf("operator peak RSS %d MiB, over the bound of %d MiB", hwm>>20, rssBound>>20)
	}
	if f := os.Getenv("FUNC_OPERATOR_ATTACKS_TABLE"); f != "" {
		writeAttackTable(t, f, attacks, hwm, waited, waited2)
	}
	s.checkCounters(t)
}

// launchAttacks creates the hostile servers and the Functions that point at them.
func (s *suite) launchAttacks(t *testing.T, ns string) []attack {
	t.Helper()
	var attacks []attack
	add := func(name string, cond apis.ConditionType, reason string) {
		attacks = append(attacks, attack{name: name, cond: cond, reason: reason})
	}
	src, ready := v1alpha1.FunctionConditionSourceReady, v1alpha1.FunctionConditionMiddlewareUpToDate

	// Repositories.
	large := gitserver.CreateRepo(t, s.gitRoot, ns+"-large")
	large.CommitLarge(t, "main", 8, 1<<20) // 8 MiB that do not compress, over cloneMaxBytes 4Mi
	s.createFunction(t, ns, "clone-too-large", s.git.URL(ns+"-large"), "", "")
	add("clone-too-large", src, v1alpha1.ReasonCloneTooLarge)

	errRoot := gitserver.NewRepoRoot(t)
	gitserver.CreateRepo(t, errRoot, "fn").Commit(t, "main", map[string]string{"func.yaml": funcYAMLFor("git-error-body")}, "init")
	errGit := gitserver.StartHTTP(t, errRoot)
	errGit.ErrorBody(502, 10<<20)
	s.createFunction(t, ns, "git-error-body", errGit.URL("fn"), "", "")
	add("git-error-body", src, v1alpha1.ReasonBranchListFailed)

	slowRoot := gitserver.NewRepoRoot(t)
	gitserver.CreateRepo(t, slowRoot, "fn").Commit(t, "main", map[string]string{"func.yaml": funcYAMLFor("git-trickle")}, "init")
	slowGit := gitserver.StartHTTP(t, slowRoot)
	slowGit.Trickle(500 * time.Millisecond)
	s.createFunction(t, ns, "git-trickle", slowGit.URL("fn"), "", "")
	add("git-trickle", src, v1alpha1.ReasonGitTimedOut)

	// The API server, at the address and port the operator's client uses: a readable
	// port scanner of the cluster's own control plane, refused before any byte.
	s.createFunction(t, ns, "git-api-server", s.front.URL+"/repo.git", "", "")
	add("git-api-server", src, v1alpha1.ReasonHostNotAllowed)

	// func.yaml.
	yamls := map[string]string{
		"yaml-nested":  "specVersion: 0.36.0\nname: yaml-nested\nruntime: go\nx: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n",
		"yaml-aliases": "specVersion: 0.36.0\nname: yaml-aliases\nruntime: go\n" + aliasBomb(9),
		"yaml-entries": "specVersion: 0.36.0\nname: yaml-entries\nruntime: go\nx: [" + strings.Repeat("0,", 100000) + "0]\n",
	}
	files := map[string]string{}
	for name, content := range yamls {
		files["fns/"+name+"/func.yaml"] = content
	}
	gitserver.CreateRepo(t, s.gitRoot, ns+"-yaml").Commit(t, "main", files, "hostile func.yamls")
	for name := range yamls {
		s.createFunction(t, ns, name, s.git.URL(ns+"-yaml"), "fns/"+name, "")
		add(name, src, v1alpha1.ReasonFuncYamlInvalid)
	}

	// Images: each from a valid source, deployed as its Knative Service.
	hostile := registrytest.Start(t)
	errReg := registrytest.Start(t)
	slowReg := registrytest.Start(t)
	images := map[string]string{
		"zip-bomb":            hostile.PushZipBomb(t, "attacks/bomb", 2), // 2 GiB of zeros, over inspectMaxBytes 1Gi
		"padded-elf":          hostile.PushPaddedFuncGoELF(t, "attacks/padded", 256),
		"registry-error-body": errReg.Push(t, "attacks/err", s.middleware),
		"registry-trickle":    slowReg.Push(t, "attacks/slow", s.middleware),
		"registry-api-server": strings.TrimPrefix(s.front.URL, "http://") + "/attacks/fn:v1",
	}
	errReg.ErrorBody(10<<20, 400)
	slowReg.Trickle(time.Second)
	files = map[string]string{}
	for name := range images {
		files["fns/"+name+"/func.yaml"] = funcYAMLFor(name)
	}
	gitserver.CreateRepo(t, s.gitRoot, ns+"-images").Commit(t, "main", files, "functions of hostile images")
	for name, img := range images {
		s.createService(t, ns, name, img)
		s.createFunction(t, ns, name, s.git.URL(ns+"-images"), "fns/"+name, "")
	}
	add("zip-bomb", ready, v1alpha1.ReasonImageTooLarge)
	// Its executable, padded to 256 MiB, is read for its build info: func-go
	// FuncGoVersion, what the linked func builds.
	add("padded-elf", ready, v1alpha1.ReasonUpToDate)
	add("registry-error-body", ready, v1alpha1.ReasonImageInspectFailed)
	add("registry-trickle", ready, v1alpha1.ReasonRegistryTimedOut)
	add("registry-api-server", ready, v1alpha1.ReasonHostNotAllowed)
	return attacks
}

// controlFunction creates a Function of ns named name, from the repository repo
// makes with the files it is given (returning its URL), read with the Secret data
// auth when not nil, with its Service on an image of the newest middleware.
func (s *suite) controlFunction(t *testing.T, ns, name string, repo func(files map[string]string) string, auth map[string][]byte) string {
	t.Helper()
	url := repo(map[string]string{"func.yaml": funcYAMLFor(name)})
	secret := ""
	if auth != nil {
		secret = name + "-git"
		if err := s.admin.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret}, Data: auth}); err != nil {
			t.Fatal(err)
		}
	}
	s.createService(t, ns, name, s.reg.Push(t, ns+"/"+name, s.middleware))
	s.createFunction(t, ns, name, url, "", secret)
	return name
}

// checkMessages fails the test when a condition or Event message of ns is over the
// shipped caps.
func (s *suite) checkMessages(t *testing.T, ns string) {
	t.Helper()
	var fns v1alpha1.FunctionList
	if err := s.admin.List(context.Background(), &fns, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, fn := range fns.Items {
		for _, c := range fn.Status.Conditions {
			if len(c.Message) > config.DefaultConditionMessageMaxBytes {
				t.Errorf("%s: condition %s has a message of %d bytes", fn.Name, c.Type, len(c.Message))
			}
		}
	}
	var events corev1.EventList
	if err := s.admin.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if len(e.Message) > config.DefaultEventMessageMaxBytes {
			t.Errorf("event %s %s: %d bytes", e.InvolvedObject.Name, e.Reason, len(e.Message))
		}
	}
	if len(events.Items) == 0 {
		t.Errorf("no Events in %s: the check of their size checked nothing", ns)
	}
}

// setConfig sets keys of the operator's ConfigMap.
func (s *suite) setConfig(t *testing.T, values map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: s.dep.systemNamespace, Name: config.ConfigMapName}
	if err := s.admin.Get(context.Background(), key, cm); err != nil {
		t.Fatal(err)
	}
	for k, v := range values {
		cm.Data[k] = v
	}
	if err := s.admin.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

func funcYAMLFor(name string) string {
	return "specVersion: 0.36.0\nname: " + name + "\nruntime: go\nbuild:\n  builder: pack\n"
}

// aliasBomb is a "billion laughs" document: each level names the one below ten
// times, so that expanded it holds 10^levels strings.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i < levels; i++ {
		ref := "*l" + strconv.Itoa(i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(ref+",", 10), ","))
	}
	return b.String()
}

// peakRSS is the peak resident set (VmHWM) of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the operator's memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// writeAttackTable writes the table of attacks of docs/hostile-input.md: what each ended in, and
// the figures.
func writeAttackTable(t *testing.T, path string, attacks []attack, hwm int64, waited, waited2 time.Duration) {
	t.Helper()
	var b strings.Builder
	b.WriteString("| Attack (Function) | Condition | Reason |\n|---|---|---|\n")
	for _, a := range attacks {
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", a.name, a.cond, a.reason)
	}
	fmt.Fprintf(&b, "\nOperator peak RSS through every attack: %d MiB (bound %d MiB; Deployment limit 1 GiB). "+
		"A Function of another namespace Ready %s after creation beside 12 Functions of one namespace hanging on 3 registries; "+
		"%s beside two such namespaces (registryTimeout 20s).\n",
		hwm>>20, rssBound>>20, waited.Round(100*time.Millisecond), waited2.Round(100*time.Millisecond))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
