// Package hygiene tests the repository checks of hack/ on throw-away git repositories.
package hygiene

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fnops/func-operator/test/envtest"
)

// TestVerifyTrackedFiles runs hack/verify-tracked-files.sh on repositories that track
// source only (it passes) and a build output or an oversized file (it fails, naming it).
func TestVerifyTrackedFiles(t *testing.T) {
	script := filepath.Join(envtest.RepoRoot(), "hack", "verify-tracked-files.sh")
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatalf("reading an ELF binary to commit: %v", err)
	}
	tests := []struct {
		name     string
		files    map[string][]byte
		ignore   string
		wantFail string // substring of the failure; "" for success
	}{{
		name:  "source only",
		files: map[string][]byte{"main.go": []byte("package main\n"), "README.md": []byte("# x\n")},
	}, {
		name:     "a committed binary",
		files:    map[string][]byte{"main.go": []byte("package main\n"), "run": elf},
		wantFail: "run: an ELF binary",
	}, {
		name:     "a file over the size limit",
		files:    map[string][]byte{"data.json": bytes.Repeat([]byte("x"), 2048)},
		wantFail: "data.json: 2048 bytes, over the limit of 1024",
	}, {
		name:     "a tracked file that .gitignore excludes",
		files:    map[string][]byte{"out/report.txt": []byte("r\n")},
		ignore:   "/out/\n",
		wantFail: "out/report.txt: tracked but ignored",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			git(t, dir, "init", "-q")
			for name, content := range tt.files {
				writeFile(t, filepath.Join(dir, name), content)
			}
			git(t, dir, "add", "-A")
			if tt.ignore != "" { // after add: the file is tracked, then ignored
				writeFile(t, filepath.Join(dir, ".gitignore"), []byte(tt.ignore))
			}
			hack := filepath.Join(dir, "hack")
			writeFile(t, filepath.Join(hack, "verify-tracked-files.sh"), mustRead(t, script))
			cmd := exec.Command("bash", filepath.Join(hack, "verify-tracked-files.sh"))
			cmd.Env = append(os.Environ(), "MAX_TRACKED_BYTES=1024")
			out, err := cmd.CombinedOutput()
			switch {
			case tt.wantFail == "" && err != nil:
				t.Fatalf("want success, got %v:\n%s", err, out)
			case tt.wantFail != "" && err == nil:
				t.Fatalf("want a failure naming %q, got success:\n%s", tt.wantFail, out)
			case tt.wantFail != "" && !strings.Contains(string(out), tt.wantFail):
				t.Fatalf("want a failure naming %q, got:\n%s", tt.wantFail, out)
			}
		})
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@example.invalid", "-c", "user.name=t"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFile(t *testing.T, path string, content []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
