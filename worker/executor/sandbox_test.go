package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/proctest"
	"github.com/flopsnet/flops/testutil/testdirs"
	"github.com/flopsnet/flops/testutil/testimage"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// newSandboxExecutor is newTestExecutor with the sandbox on (as flops-worker runs it).
func newSandboxExecutor(t *testing.T, mod func(*Options)) *Executor {
	t.Helper()
	testimage.NeedSandbox(t)
	return newTestExecutor(t, func(o *Options) {
		o.WorkDir = testdirs.Reachable(t, t.TempDir())
		o.Sandbox = Sandbox{Required: true}
		if mod != nil {
			mod(o)
		}
	})
}

// running reports whether a process whose command line holds marker is alive.
func running(marker string) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) && !proctest.Gone(atoi(p.Name())) {
			return true
		}
	}
	return false
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// A sandboxed task sees its directories where a container's are, HOME and TMPDIR its own
// /tmp, runs as nobody when the worker is root, and can write only its output,
// checkpoint and tmp directories.
func TestSandboxEnvironment(t *testing.T) {
	e := newSandboxExecutor(t, nil)
	script := `set -u
{ pwd; echo "$FLOPS_INPUT_DIR $FLOPS_OUTPUT_DIR $FLOPS_CHECKPOINT_DIR $HOME $TMPDIR"; id -u; } > "$FLOPS_OUTPUT_DIR/env"
echo x > "$FLOPS_CHECKPOINT_DIR/c" && echo x > /tmp/t && echo x > "$FLOPS_OUTPUT_DIR/.flops/progress" && echo writable >> "$FLOPS_OUTPUT_DIR/env"
for p in "$FLOPS_INPUT_DIR/x" /usr/x /etc/x /x; do (echo x > "$p") 2>/dev/null && echo "wrote $p" >> "$FLOPS_OUTPUT_DIR/env"; done
true`
	res, err := e.Run(context.Background(), shellSpec(200, script), Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "env"))
	require.NoError(t, err)
	uid := strconv.Itoa(os.Getuid())
	if os.Getuid() == 0 {
		uid = strconv.Itoa(NobodyID)
	}
	require.Equal(t, "/flops/input\n/flops/input /flops/output /flops/checkpoint /tmp /tmp\n"+uid+"\nwritable\n", string(b))
	require.Equal(t, "x", e.Progress(200))
}

// TestAttackJobTellsItsVerificationRun: a job that can tell its verification runs (an
// audit, a committee) from its primary run makes them disagree at will, and the
// committee's majority overturns the primary's honest result (x/market/README.md,
// Limits). Two runs of one shard under different task ids, as a primary and its audit
// are, see the same environment and hostname and so produce the same result root; before,
// FLOPS_TASK_ID told them apart, and a sandboxed task saw the machine's hostname.
func TestAttackJobTellsItsVerificationRun(t *testing.T) {
	e := newSandboxExecutor(t, nil)
	script := `{ env | grep '^FLOPS_' | grep -v '^FLOPS_PROGRESS_FILE=' | sort; hostname; pwd; } > "$FLOPS_OUTPUT_DIR/seen"`
	primary, err := e.Run(context.Background(), shellSpec(400, script), Hooks{})
	require.NoError(t, err)
	audit, err := e.Run(context.Background(), shellSpec(401, script), Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(audit.OutputDir, "seen"))
	require.NoError(t, err)
	require.NotContains(t, string(b), "FLOPS_TASK_ID")
	require.Contains(t, string(b), "\n"+TaskHostname+"\n")
	require.Equal(t, primary.Root, audit.Root, "the two runs see the same and answer the same:\n%s", b)
}

// probeFindings runs the malicious client's probe job (issue 16) on e, next to a worker
// key, another task's outputs and the worker's state, pinned to one of two fake GPUs,
// and returns what it got away with.
func probeFindings(t *testing.T, e *Executor, devDir string) []string {
	return probeWith(t, e, func(script string) Spec {
		spec := shellSpec(301, script)
		spec.Command = []string{"bash", "-c", script}
		spec.GPUs = []string{"GPU-a"}
		return spec
	})
}

// probeWith runs the probe as the Spec that spec makes of its script (task 301).
func probeWith(t *testing.T, e *Executor, spec func(script string) Spec) []string {
	t.Helper()
	home := filepath.Dir(e.opts.WorkDir)
	key := filepath.Join(home, "keyring-test", "provider.info")
	require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o700))
	require.NoError(t, os.WriteFile(key, []byte("PRIVATE KEY"), 0o600))
	state := filepath.Join(home, "state", "state.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(state), 0o700))
	require.NoError(t, os.WriteFile(state, []byte("{}"), 0o600))

	// another client's task, finished, its outputs still here
	_, err := e.Run(context.Background(), shellSpec(300, `echo "other client's secret" > "$FLOPS_OUTPUT_DIR/secret"`), Hooks{})
	require.NoError(t, err)
	other := filepath.Join(e.dirs(300).output, "secret")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("reached the host\n"))
			_ = c.Close()
		}
	}()

	d := e.dirs(301)
	script := fmt.Sprintf(`out="$FLOPS_OUTPUT_DIR"
cat %[1]q > "$out/key" 2>/dev/null
cat %[2]q > "$out/other" 2>/dev/null
ls %[3]q > "$out/home" 2>/dev/null
echo '{"pid":1}' > %[4]q 2>/dev/null && echo rewrote > "$out/record"
echo 0 > %[5]q 2>/dev/null && echo forged > "$out/exit"
ls /dev | grep nvidia > "$out/gpus"
(exec 3<>/dev/tcp/127.0.0.1/%[6]d && cat <&3 > "$out/net") 2>/dev/null
python3 -c 'import socket; s=socket.create_connection(("127.0.0.1", %[6]d), 1); open("'"$out"'/net", "wb").write(s.recv(100))' 2>/dev/null
[ -s "$out/net" ] || nc -w 1 127.0.0.1 %[6]d < /dev/null > "$out/net" 2>/dev/null
setsid sh -c 'echo $$ > "$1"; exec sleep 31.4159' sh "$out/escaped" &
i=0; while [ ! -s "$out/escaped" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
exit 3`, key, other, home, filepath.Join(d.root, runFile), filepath.Join(d.root, exitFile), port)
	_, err = e.Run(context.Background(), spec(script), Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "the task fails with its own exit status: %v", err)

	var found []string
	for _, f := range []string{"key", "other", "home", "record", "exit", "net"} {
		if b, err := os.ReadFile(filepath.Join(d.output, f)); err == nil && len(bytes.TrimSpace(b)) > 0 {
			found = append(found, f+": "+strings.TrimSpace(string(b)))
		}
	}
	if b, _ := os.ReadFile(filepath.Join(d.output, "gpus")); strings.Contains(string(b), "nvidia1") {
		found = append(found, "unassigned gpu: "+strings.TrimSpace(string(b)))
	}
	if exit.Code != 3 {
		found = append(found, fmt.Sprintf("exit status %d, not 3", exit.Code))
	}
	// the probe exits only once its escaped process has left the task's session, so a
	// look shortly after the task says whether it outlived it
	time.Sleep(200 * time.Millisecond)
	if running("31.4159") {
		found = append(found, "outlived its task")
	}
	return found
}

// fakeGPUs are two files standing for /dev/nvidia0 and /dev/nvidia1 (GPU-a, GPU-b).
func fakeGPUs(t *testing.T) (string, func([]string) ([]string, error)) {
	dir := testdirs.Reachable(t, t.TempDir())
	for _, n := range []string{"nvidia0", "nvidia1"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o666))
	}
	return dir, func(gpus []string) ([]string, error) {
		var out []string
		for _, g := range gpus {
			out = append(out, filepath.Join(dir, map[string]string{"GPU-a": "nvidia0", "GPU-b": "nvidia1"}[g]))
		}
		return out, nil
	}
}

// The probe job of issue 16, unconfined and then sandboxed: unconfined it reads the
// worker's key and another client's outputs, rewrites the run record and its exit
// status, reaches the host's network and leaves a process behind; in the sandbox it
// gets none of these, sees only its own GPU's device node, and fails with its own status.
func TestAttackProbeJobInTheSandbox(t *testing.T) {
	testimage.NeedSandbox(t)
	defer pkill("31.4159")
	dir, devices := fakeGPUs(t)
	home := testdirs.Reachable(t, t.TempDir())
	unconfined := newTestExecutor(t, func(o *Options) { o.WorkDir = filepath.Join(home, "work") })
	found := probeFindings(t, unconfined, dir)
	joined := strings.Join(found, "\n")
	for _, leak := range []string{"key: PRIVATE KEY", "other: other client's secret", "home:", "record: rewrote", "exit: forged", "net: reached the host", "outlived its task"} {
		require.Contains(t, joined, leak, "unconfined, the probe gets this")
	}
	pkill("31.4159")

	home = testdirs.Reachable(t, t.TempDir())
	sandboxed := newSandboxExecutor(t, func(o *Options) {
		o.WorkDir = filepath.Join(home, "work")
		o.Sandbox.Devices = devices
	})
	require.Empty(t, probeFindings(t, sandboxed, dir), "the sandbox lets the probe get nothing")
	b, err := os.ReadFile(filepath.Join(sandboxed.dirs(301).output, "gpus"))
	require.NoError(t, err)
	require.Equal(t, "nvidia0\n", string(b), "its own GPU's device node only")
}

func psOf(marker string) string {
	out, _ := osexec.Command("sh", "-c", "ps -eo pid,ppid,pgid,stat,user,args | grep "+marker).CombinedOutput()
	return string(out)
}

// pkill kills the processes whose command line holds marker.
func pkill(marker string) {
	_ = osexec.Command("pkill", "-f", marker).Run()
}

// A task that allocates more than its memory, or starts more processes than its limit,
// fails cleanly, and the executor runs the next task as usual.
func TestSandboxLimits(t *testing.T) {
	e := newSandboxExecutor(t, func(o *Options) {
		o.Sandbox.MemoryPerGPU = 64 << 20
		o.Sandbox.Processes = 16
	})
	_, err := e.Run(context.Background(), shellSpec(400, `dd if=/dev/zero of=/dev/null bs=200M count=1`), Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "memory: %v", err)
	require.NotZero(t, exit.Code)
	require.Contains(t, exit.Stderr, "memory exhausted")

	res, err := e.Run(context.Background(), shellSpec(401, `n=0; for i in $(seq 1 40); do sleep 3 & n=$((n+1)); done; echo started > "$FLOPS_OUTPUT_DIR/x"; exit 0`), Hooks{})
	if err == nil {
		b, _ := os.ReadFile(filepath.Join(res.OutputDir, "x"))
		require.NotEqual(t, "started\n", string(b), "40 processes cannot all start under a limit of 16")
	}
	logs, rerr := os.ReadFile(filepath.Join(e.dirs(401).output, LogDir, "stderr.log"))
	require.NoError(t, rerr)
	require.Contains(t, strings.ToLower(string(logs)), "fork", "the shell could not fork past the limit")

	res, err = e.Run(context.Background(), shellSpec(402, `echo fine > "$FLOPS_OUTPUT_DIR/ok"`), Hooks{})
	require.NoError(t, err)
	require.Len(t, res.Files, 1)
}

// A cancelled sandboxed task dies with everything it started, even a process in a
// session of its own.
func TestSandboxCancelKillsTheTree(t *testing.T) {
	e := newSandboxExecutor(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, shellSpec(500, `setsid sleep 27.1828 & echo up > "$FLOPS_OUTPUT_DIR/up"; sleep 1000`), Hooks{})
		done <- err
	}()
	require.Eventually(t, func() bool { return running("27.1828") }, 5*time.Second, 20*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return !running("27.1828") }, 3*time.Second, 20*time.Millisecond, "%s", psOf("27.1828"))
}

// New refuses a sandbox that would show tasks the worker's work directory or a private
// path, and a required sandbox that cannot be set up; an optional one fails only the
// PROCESS tasks.
func TestSandboxSetup(t *testing.T) {
	testimage.NeedSandbox(t)
	work := testdirs.Reachable(t, t.TempDir())
	_, err := New(Options{WorkDir: work, Sandbox: Sandbox{Required: true, ReadOnly: []string{filepath.Dir(work)}}})
	require.ErrorIs(t, err, ErrNoSandbox)
	_, err = New(Options{WorkDir: work, Sandbox: Sandbox{Required: true, ReadOnly: []string{"/usr", "/etc"}, Private: []string{"/etc/flops-worker/key"}}})
	require.ErrorIs(t, err, ErrNoSandbox)
	_, err = New(Options{WorkDir: work, Sandbox: Sandbox{Required: true, Bwrap: "no-such-bwrap"}})
	require.ErrorIs(t, err, ErrNoSandbox)
	e, err := New(Options{WorkDir: work, Sandbox: Sandbox{Bwrap: "no-such-bwrap"}})
	require.NoError(t, err)
	_, err = e.Run(context.Background(), shellSpec(600, "true"), Hooks{})
	require.ErrorIs(t, err, ErrNoSandbox)
	res, err := e.Run(context.Background(), Spec{TaskID: 601, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinChecksum, Builtin: markettypes.BuiltinArgs{ChecksumBytes: 1}}, Hooks{})
	require.NoError(t, err, "other runtimes run")
	require.NotEmpty(t, res.Files)

	if os.Geteuid() == 0 {
		closed := filepath.Join(t.TempDir(), "closed")
		require.NoError(t, os.Mkdir(closed, 0o700))
		_, err = New(Options{WorkDir: filepath.Join(closed, "work"), Sandbox: Sandbox{Required: true}})
		require.ErrorIs(t, err, ErrNoSandbox)
		require.Contains(t, err.Error(), "o+x")
	}
}

// The probe job as a CONTAINER task on podman: the key, another client's outputs, the
// worker's state and run record, the host's network are out of its reach, it fails with
// its own status and nothing of it outlives the task.
func TestAttackProbeJobInAContainer(t *testing.T) {
	image := testimage.Busybox(t)
	defer pkill("31.4159")
	home := testdirs.Reachable(t, t.TempDir())
	e := newTestExecutor(t, func(o *Options) { o.WorkDir = filepath.Join(home, "work"); o.ContainerRuntime = "podman" })
	found := probeWith(t, e, func(script string) Spec {
		return Spec{TaskID: 301, JobID: 7, Runtime: markettypes.RUNTIME_CONTAINER, Image: image, Command: []string{"/bin/sh", "-c", script}}
	})
	require.Empty(t, found, "the container lets the probe get nothing")
}
