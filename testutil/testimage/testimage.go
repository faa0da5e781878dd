// Package testimage builds, for tests, a tiny container image from the machine's static
// busybox and imports it into podman: no registry is needed. Tests that need a real
// runtime or sandbox call Need* first, which skips them with what to install, or fails
// them where FLOPS_CI is set (CI installs every tool, so a skip there would hide a
// missing test).
package testimage

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// missing skips t, or fails it under FLOPS_CI.
func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("FLOPS_CI") != "" {
		t.Fatalf("%s (FLOPS_CI is set: CI installs it)", what)
	}
	t.Skip(what)
}

// NeedSandbox skips t where PROCESS tasks cannot be sandboxed (bubblewrap missing).
func NeedSandbox(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"bwrap", "prlimit", "setpriv"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing(t, bin+" is not installed: apt-get install bubblewrap util-linux")
		}
	}
}

// containersConf is the podman configuration tests run with: runc (crun cannot run on a
// machine with cgroups in hybrid mode) and no default ulimits (a container may not raise
// them on a machine whose limits are lower).
const containersConf = "[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\n"

var (
	once   sync.Once
	image  string
	reason string
)

// Busybox returns a local podman image, pinned by digest (localhost/flops-test-busybox@
// sha256:...), holding a static busybox with its applets linked in /bin; it sets
// CONTAINERS_CONF for the test (the worker's runtime client inherits it). It skips t
// where podman or busybox-static is missing or podman cannot run a container.
func Busybox(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "flops-podman-conf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONTAINERS_CONF", conf)
	once.Do(func() { image, reason = build(conf) })
	if image == "" {
		missing(t, reason)
	}
	return image
}

func build(conf string) (string, string) {
	if _, err := exec.LookPath("podman"); err != nil {
		return "", "podman is not installed: apt-get install podman runc busybox-static"
	}
	busybox := ""
	for _, p := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if out, err := exec.Command("file", "-L", p).Output(); err == nil && strings.Contains(string(out), "statically linked") {
			busybox = p
			break
		}
		if _, err := os.Stat(p); err == nil && busybox == "" {
			busybox = p // "file" may be missing: try it
		}
	}
	if busybox == "" {
		return "", "busybox is not installed: apt-get install busybox-static"
	}
	root, err := os.MkdirTemp("", "flops-busybox-root")
	if err != nil {
		return "", err.Error()
	}
	defer func() { _ = os.RemoveAll(root) }()
	bz, err := os.ReadFile(busybox)
	if err != nil {
		return "", err.Error()
	}
	for _, d := range []string{"bin", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return "", err.Error()
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil { // as in any image
		return "", err.Error()
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), bz, 0o755); err != nil {
		return "", err.Error()
	}
	for _, applet := range []string{"sh", "cat", "ls", "echo", "sha256sum", "sleep", "head", "dd", "mkdir", "id", "touch", "wc", "seq", "true", "false", "grep", "nc", "wget", "ps", "kill", "setsid"} {
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			return "", err.Error()
		}
	}
	sum := sha256.Sum256(bz)
	tag := "localhost/flops-test-busybox:" + hex.EncodeToString(sum[:6]) + "-2"
	env := append(os.Environ(), "CONTAINERS_CONF="+conf)
	// Test binaries of several packages run at once: each imported the image anew, which
	// moved the tag to its own import and left another binary's pinned reference naming
	// nothing (podman then tried to pull it). One import at a time, and the tag, once
	// there, is used as it is (its name holds the busybox digest and the layout's version).
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "flops-testimage.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return "", err.Error()
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", "lock: " + err.Error()
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if ref, ok := pinnedRef(env, tag); ok {
		return runnable(env, ref)
	}
	tar := filepath.Join(root, "..", filepath.Base(root)+".tar")
	defer func() { _ = os.Remove(tar) }()
	if out, err := exec.Command("tar", "-C", root, "-cf", tar, ".").CombinedOutput(); err != nil {
		return "", "tar: " + string(out)
	}
	imp := exec.Command("podman", "import", tar, tag)
	imp.Env = env
	if out, err := imp.CombinedOutput(); err != nil {
		return "", "podman import: " + strings.TrimSpace(string(out))
	}
	ref, ok := pinnedRef(env, tag)
	if !ok {
		return "", "podman image inspect " + tag + ": no digest"
	}
	return runnable(env, ref)
}

// pinnedRef is tag's image pinned by digest, if podman holds it.
func pinnedRef(env []string, tag string) (string, bool) {
	insp := exec.Command("podman", "image", "inspect", tag, "--format", "{{index .RepoDigests 0}}")
	insp.Env = env
	out, err := insp.Output()
	ref := strings.TrimSpace(string(out))
	return ref, err == nil && ref != ""
}

// runnable returns ref if podman runs a container of it, else why not.
func runnable(env []string, ref string) (string, string) {
	run := exec.Command("podman", "run", "--rm", "--network", "none", ref, "/bin/true")
	run.Env = env
	if out, err := run.CombinedOutput(); err != nil {
		return "", "podman cannot run a container here: " + strings.TrimSpace(string(out))
	}
	return ref, ""
}
