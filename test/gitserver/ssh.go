package gitserver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

const (
	sshdPath = "/usr/sbin/sshd"
	// RequireSSHDEnv, when non-empty, turns a missing sshd into a test
	// failure instead of a skip.
	RequireSSHDEnv = "FUNC_OPERATOR_REQUIRE_SSHD"
	sshdStartWait  = 10 * time.Second
)

// SSHServer is a real OpenSSH daemon on 127.0.0.1 that accepts the current
// OS user with a generated client key, so git can fetch any repository on
// disk by its absolute path.
type SSHServer struct {
	user    string
	port    int
	hostKey ssh.PublicKey
	other   ssh.PublicKey // an unrelated host key, for mismatch tests

	clientKey ed25519.PrivateKey
	clientPEM []byte
	// uploadLog holds a line for every git-upload-pack sshd ran (see UploadPacks).
	uploadLog string
}

// StartSSH starts sshd for the duration of the test. It skips the test when
// sshd is not installed, unless FUNC_OPERATOR_REQUIRE_SSHD is set.
func StartSSH(t testing.TB) *SSHServer {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		if os.Getenv(RequireSSHDEnv) != "" {
			t.Fatalf("gitserver: sshd required (%s set) but unusable: %v", RequireSSHDEnv, err)
		}
		t.Skip("sshd not installed: apt-get install -y openssh-server")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("gitserver: look up current user: %v", err)
	}
	dir, err := filepath.Abs(t.TempDir())
	if err != nil {
		t.Fatalf("gitserver: resolve sshd dir: %v", err)
	}

	s := &SSHServer{user: u.Username}
	hostSigner, hostPEM := mustGenerateKey(t)
	s.hostKey = hostSigner.PublicKey()
	otherSigner, _ := mustGenerateKey(t)
	s.other = otherSigner.PublicKey()
	clientSigner, clientPEM := mustGenerateKey(t)
	s.clientPEM = clientPEM
	s.clientKey = clientSigner.key

	hostKeyFile := filepath.Join(dir, "ssh_host_ed25519_key")
	authKeysFile := filepath.Join(dir, "authorized_keys")
	mustWriteFile(t, hostKeyFile, hostPEM)
	mustWriteFile(t, authKeysFile, ssh.MarshalAuthorizedKey(clientSigner.PublicKey()))

	// Privilege separation directory; sshd refuses to start without it.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("gitserver: create sshd privilege separation dir: %v", err)
	}
	s.port = mustFreePort(t)
	// Every command goes through a script that logs the upload-packs (the transfers
	// and listings a client asks for) before it runs them as sshd would.
	s.uploadLog = filepath.Join(dir, "upload-packs.log")
	countScript := filepath.Join(dir, "count.sh")
	mustWriteFile(t, countScript, []byte(fmt.Sprintf(`case "$SSH_ORIGINAL_COMMAND" in
git-upload-pack*) printf '%%s\n' "$SSH_ORIGINAL_COMMAND" >> '%s' ;;
esac
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
`, s.uploadLog)))
	cfgFile := filepath.Join(dir, "sshd_config")
	mustWriteSSHDConfig(t, cfgFile, sshdConfig{
		port:           s.port,
		hostKeyFile:    hostKeyFile,
		authKeysFile:   authKeysFile,
		pidFile:        filepath.Join(dir, "sshd.pid"),
		forceCommand:   "/bin/sh " + countScript,
		noPenaltyLimit: true,
	})

	s.start(t, cfgFile)
	return s
}

// start runs sshd in the foreground as a child process, waits until it
// accepts connections and registers a cleanup that kills exactly that process.
func (s *SSHServer) start(t testing.TB, cfgFile string) {
	t.Helper()
	var startLog lockedBuffer
	logw := newTestLogWriter(t, "sshd: ")
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", cfgFile)
	cmd.Stdout = io.MultiWriter(&startLog, logw)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("gitserver: start sshd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-exited:
			t.Logf("gitserver: sshd had exited: %v", err)
			return
		default:
		}
		if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("gitserver: kill sshd (pid %d): %v", cmd.Process.Pid, err)
		}
		t.Logf("gitserver: sshd stopped: %v", <-exited)
	})

	deadline := time.Now().Add(sshdStartWait)
	for {
		err := s.probe()
		if err == nil {
			return
		}
		var handshakeErr *sshHandshakeError
		if errors.As(err, &handshakeErr) {
			t.Fatalf("gitserver: sshd on %s rejects its own client key: %v\n%s", s.addr(), err, startLog.String())
		}
		select {
		case werr := <-exited:
			exited <- werr // let the cleanup see it too
			t.Fatalf("gitserver: sshd exited before listening on %s: %v\n%s", s.addr(), werr, startLog.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitserver: sshd not ready on %s after %s: %v\n%s", s.addr(), sshdStartWait, err, startLog.String())
		}
	}
}

// sshHandshakeError means sshd accepted the TCP connection but the SSH
// handshake or login failed, which retrying will not fix.
type sshHandshakeError struct{ err error }

func (e *sshHandshakeError) Error() string { return e.err.Error() }
func (e *sshHandshakeError) Unwrap() error { return e.err }

// probe logs in once with the client key, verifying the host key, so that a
// ready server is also known to be usable.
func (s *SSHServer) probe() error {
	conn, err := net.DialTimeout("tcp", s.addr(), time.Second)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close() }()
	signer, err := ssh.NewSignerFromKey(s.clientKey)
	if err != nil {
		return &sshHandshakeError{fmt.Errorf("wrap client key: %w", err)}
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	c, chans, reqs, err := ssh.NewClientConn(conn, s.addr(), &ssh.ClientConfig{
		User:            s.user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(s.hostKey),
	})
	if err != nil {
		return &sshHandshakeError{fmt.Errorf("log in as %s: %w", s.user, err)}
	}
	client := ssh.NewClient(c, chans, reqs)
	defer func() { _ = client.Close() }()
	// Opening a session waits for sshd's post-login messages, so closing
	// afterwards does not make it log a broken pipe.
	session, err := client.NewSession()
	if err != nil {
		return &sshHandshakeError{fmt.Errorf("open session as %s: %w", s.user, err)}
	}
	return session.Close()
}

// UploadPacks returns how many git-upload-pack sessions sshd ran for the repository
// at repoDir: over SSH each listing and each fetch is one.
func (s *SSHServer) UploadPacks(repoDir string) int {
	content, err := os.ReadFile(s.uploadLog)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(content), "\n") {
		if strings.HasPrefix(line, "git-upload-pack") && strings.Contains(line, "'"+repoDir+"'") {
			n++
		}
	}
	return n
}

// User returns the login user (the current OS user).
func (s *SSHServer) User() string { return s.user }

// Port returns the port sshd listens on.
func (s *SSHServer) Port() int { return s.port }

// URL returns an ssh:// clone URL for the repository at the absolute path
// repoDir (for example Repo.Dir).
func (s *SSHServer) URL(repoDir string) string {
	return fmt.Sprintf("ssh://%s@%s%s", s.user, s.addr(), repoDir)
}

// ClientPrivateKeyPEM returns the authorised client key as an unencrypted
// OpenSSH PEM private key.
func (s *SSHServer) ClientPrivateKeyPEM() []byte {
	return bytes.Clone(s.clientPEM)
}

// EncryptedClientPrivateKeyPEM returns the authorised client key as an
// OpenSSH PEM private key protected by passphrase.
func (s *SSHServer) EncryptedClientPrivateKeyPEM(passphrase string) []byte {
	block, err := ssh.MarshalPrivateKeyWithPassphrase(s.clientKey, "", []byte(passphrase))
	if err != nil {
		// Only fails for unsupported key types; ed25519 is supported.
		panic(fmt.Sprintf("gitserver: encrypt client key: %v", err))
	}
	return pem.EncodeToMemory(block)
}

// HostPublicKey returns sshd's host public key.
func (s *SSHServer) HostPublicKey() ssh.PublicKey { return s.hostKey }

// KnownHosts returns a known_hosts line trusting sshd's host key.
func (s *SSHServer) KnownHosts() []byte { return s.knownHostsLine(s.hostKey) }

// OtherKnownHosts returns a known_hosts line for the same host and port but
// an unrelated key, to provoke host-key mismatches.
func (s *SSHServer) OtherKnownHosts() []byte { return s.knownHostsLine(s.other) }

func (s *SSHServer) knownHostsLine(key ssh.PublicKey) []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.addr())}, key) + "\n")
}

func (s *SSHServer) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

type sshdConfig struct {
	port         int
	hostKeyFile  string
	authKeysFile string
	pidFile      string
	forceCommand string
	// noPenaltyLimit disables OpenSSH >= 9.8 per-source penalties, which
	// would otherwise throttle tests that deliberately fail handshakes.
	noPenaltyLimit bool
}

func (c sshdConfig) render() string {
	lines := []string{
		"ListenAddress 127.0.0.1",
		"Port " + strconv.Itoa(c.port),
		"HostKey " + c.hostKeyFile,
		"AuthorizedKeysFile " + c.authKeysFile,
		"PidFile " + c.pidFile,
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"UsePAM no",
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"LogLevel ERROR",
	}
	if c.forceCommand != "" {
		lines = append(lines, "ForceCommand "+c.forceCommand)
	}
	if c.noPenaltyLimit {
		lines = append(lines, "PerSourcePenalties no")
	}
	return strings.Join(lines, "\n") + "\n"
}

// mustWriteSSHDConfig writes cfg to file and validates it with `sshd -t`,
// dropping options this sshd version does not know.
func mustWriteSSHDConfig(t testing.TB, file string, cfg sshdConfig) {
	t.Helper()
	mustWriteFile(t, file, []byte(cfg.render()))
	out, err := exec.Command(sshdPath, "-t", "-f", file).CombinedOutput()
	if err != nil && cfg.noPenaltyLimit && bytes.Contains(out, []byte("PerSourcePenalties")) {
		cfg.noPenaltyLimit = false
		mustWriteFile(t, file, []byte(cfg.render()))
		out, err = exec.Command(sshdPath, "-t", "-f", file).CombinedOutput()
	}
	if err != nil {
		t.Fatalf("gitserver: sshd rejects its config: %v\n%s", err, out)
	}
}

// ed25519Signer keeps the raw private key next to its ssh.Signer.
type ed25519Signer struct {
	ssh.Signer
	key ed25519.PrivateKey
}

// mustGenerateKey returns a fresh ed25519 key and its OpenSSH PEM encoding.
func mustGenerateKey(t testing.TB) (ed25519Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("gitserver: generate ed25519 key: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatalf("gitserver: wrap ed25519 key: %v", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatalf("gitserver: marshal ed25519 key: %v", err)
	}
	return ed25519Signer{Signer: signer, key: priv}, pem.EncodeToMemory(block)
}

// mustFreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func mustFreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gitserver: pick free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// mustWriteFile writes data to path with mode 0o600 (read and write by the owner
// only), which sshd's checks of its key files accept.
func mustWriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	const perm os.FileMode = 0o600
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatalf("gitserver: write %s: %v", path, err)
	}
	// WriteFile keeps the mode of an existing file; enforce it.
	if err := os.Chmod(path, perm); err != nil {
		t.Fatalf("gitserver: chmod %s: %v", path, err)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
