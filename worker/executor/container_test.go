package executor

import (
	"context"
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/testimage"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

const testImage = "ghcr.io/flopsnet/train@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// The command line of each runtime, exactly.
func TestContainerArgs(t *testing.T) {
	p := containerParams{
		name: "flops-task-5-aa", taskID: 5, jobID: 2, uid: 1000, gid: 1001,
		input: "/w/tasks/5/work", output: "/w/tasks/5/output", checkpoint: "/w/tasks/5/checkpoint",
		env:   []string{"HOME=/tmp", "FLOPS_JOB_ID=5"},
		gpus:  []string{"GPU-aaa", "MIG-bbb"},
		image: testImage, command: []string{"python", "train.py", "--epochs", "3"},
		rootless: true,
	}
	common := []string{
		"run", "--rm", "--name", "flops-task-5-aa", "--hostname", TaskHostname, "--label", "flops.task=5", "--label", "flops.job=2",
		"--network", "none", "--init", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777",
	}
	mounts := []string{
		"--mount", "type=bind,source=/w/tasks/5/work,target=/flops/input,readonly",
		"--mount", "type=bind,source=/w/tasks/5/output,target=/flops/output",
		"--mount", "type=bind,source=/w/tasks/5/checkpoint,target=/flops/checkpoint",
		"--env", "HOME=/tmp", "--env", "FLOPS_JOB_ID=5",
	}
	tail := []string{testImage, "python", "train.py", "--epochs", "3"}

	p.flavor = "docker"
	want := slices.Concat(common, []string{"--user", "1000:1001"}, mounts, []string{"--gpus", `"device=GPU-aaa,MIG-bbb"`}, tail)
	require.Equal(t, want, containerArgs(p))

	p.flavor = "podman"
	want = slices.Concat(common, []string{"--userns", "keep-id"}, mounts,
		[]string{"--device", "nvidia.com/gpu=GPU-aaa", "--device", "nvidia.com/gpu=MIG-bbb"}, tail)
	require.Equal(t, want, containerArgs(p))

	// Root podman maps the uid directly (the sandbox's user); no GPU means no GPU flag at
	// all.
	p.uid, p.gid, p.gpus, p.rootless = 65534, 65534, nil, false
	want = slices.Concat(common, []string{"--user", "65534:65534"}, mounts, tail)
	require.Equal(t, want, containerArgs(p))

	// Limits, and a network when the provider allows it.
	p.memory, p.processes, p.cpus, p.network = 1<<30, 512, 4, true
	limited := slices.Concat(slices.Delete(slices.Clone(common), 10, 12), // without "--network", "none"
		[]string{"--memory", "1073741824", "--memory-swap", "1073741824", "--pids-limit", "512", "--cpus", "4"})
	want = slices.Concat(limited, []string{"--user", "65534:65534"}, mounts, tail)
	require.Equal(t, want, containerArgs(p))
}

// fakeRuntime is a docker or podman stand-in that records each invocation's arguments
// (NUL-separated, in <dir>/<subcommand>.args), and for "run" writes a file into the
// output mount, prints a line, then sleeps for $FAKE_RUNTIME_SLEEP and exits with
// $FAKE_RUNTIME_EXIT; "image" (inspect) says the image is there under its own name
// (or under the names $FAKE_RUNTIME_IMAGE_NAMES lists, JSON) unless
// $FAKE_RUNTIME_IMAGE_ABSENT is set.
const fakeRuntime = `#!/bin/sh
: > "$FAKE_RUNTIME_DIR/$1.args"
for a in "$@"; do printf '%s\0' "$a" >> "$FAKE_RUNTIME_DIR/$1.args"; done
case "$1" in
run)
  for a in "$@"; do
    case "$a" in
      *target=/flops/output) src=${a#type=bind,source=}; src=${src%,target=/flops/output} ;;
    esac
  done
  echo "result of the container" > "$src/result.txt"
  echo "hello from the fake runtime"
  [ -n "$FAKE_RUNTIME_SLEEP" ] && sleep "$FAKE_RUNTIME_SLEEP"
  exit "${FAKE_RUNTIME_EXIT:-0}"
  ;;
image)
  [ -n "$FAKE_RUNTIME_IMAGE_ABSENT" ] && exit 1
  if [ -n "$FAKE_RUNTIME_IMAGE_NAMES" ]; then echo "$FAKE_RUNTIME_IMAGE_NAMES"; else echo "[\"$5\"]"; fi
  ;;
esac
exit 0
`

// installFakeRuntime puts a fake runtime named name first in a PATH that holds no
// real docker or podman.
func installFakeRuntime(t *testing.T, name string) string {
	bin, rec := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte(fakeRuntime), 0o755))
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("FAKE_RUNTIME_DIR", rec)
	t.Setenv("FAKE_RUNTIME_SLEEP", "")
	t.Setenv("FAKE_RUNTIME_EXIT", "")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "")
	t.Setenv("FAKE_RUNTIME_IMAGE_NAMES", "")
	return rec
}

func recordedArgs(t *testing.T, dir, sub string) []string {
	b, err := os.ReadFile(filepath.Join(dir, sub+".args"))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func containerSpec(taskID uint64) Spec {
	return Spec{
		TaskID: taskID, JobID: 4, Index: 0,
		Runtime: markettypes.RUNTIME_CONTAINER, Image: testImage,
		Command: []string{"python", "train.py"},
		Env:     []markettypes.EnvVar{{Name: "EPOCHS", Value: "3"}},
		GPUs:    []string{"GPU-6f1c5a0e-1111-2222-3333-444455556666"},
	}
}

// A CONTAINER task runs the auto-detected runtime with the command line above, captures
// its output and takes the manifest root of what the container wrote.
func TestContainerWithFakeRuntime(t *testing.T) {
	for _, flavor := range []string{"docker", "podman"} {
		t.Run(flavor, func(t *testing.T) {
			rec := installFakeRuntime(t, flavor)
			e := newTestExecutor(t, nil)
			res, err := e.Run(context.Background(), containerSpec(100), Hooks{})
			require.NoError(t, err)
			d := e.dirs(100)

			args := recordedArgs(t, rec, "run")
			require.Equal(t, "run", args[0])
			require.Equal(t, []string{testImage, "python", "train.py"}, args[len(args)-3:])
			require.Subset(t, args, []string{"--network", "none", "--rm",
				"type=bind,source=" + d.work + ",target=/flops/input,readonly",
				"--hostname", TaskHostname, "FLOPS_JOB_ID=4", "FLOPS_SHARD_INDEX=0", "EPOCHS=3",
				"FLOPS_INPUT_DIR=/flops/input", "FLOPS_OUTPUT_DIR=/flops/output", "FLOPS_CHECKPOINT_DIR=/flops/checkpoint",
				"CUDA_VISIBLE_DEVICES=GPU-6f1c5a0e-1111-2222-3333-444455556666"})
			if flavor == "docker" {
				require.Subset(t, args, []string{"--gpus", `"device=GPU-6f1c5a0e-1111-2222-3333-444455556666"`})
			} else {
				require.Subset(t, args, []string{"--device", "nvidia.com/gpu=GPU-6f1c5a0e-1111-2222-3333-444455556666"})
			}

			require.Equal(t, []string{"result.txt"}, []string{res.Files[0].Path})
			want, err := ManifestRoot([]OutputFile{{Path: "result.txt", Size: 24, SHA256: sha256Hex([]byte("result of the container\n"))}})
			require.NoError(t, err)
			require.Equal(t, want, res.Root)
			stdout, err := os.ReadFile(filepath.Join(res.OutputDir, LogDir, "stdout.log"))
			require.NoError(t, err)
			require.Equal(t, "hello from the fake runtime\n", string(stdout))
		})
	}
}

// A cancelled CONTAINER task removes its container (killing the client would leave it
// running); the runtime's exit status fails the task.
func TestContainerCancelAndExit(t *testing.T) {
	rec := installFakeRuntime(t, "docker")
	e := newTestExecutor(t, nil)

	t.Setenv("FAKE_RUNTIME_SLEEP", "1000")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(e.dirs(101).output, "result.txt")); err == nil {
				return
			}
		}
	})
	_, err := e.Run(ctx, containerSpec(101), Hooks{})
	wg.Wait()
	require.ErrorIs(t, err, context.Canceled)
	run := recordedArgs(t, rec, "run")
	name := run[slices.Index(run, "--name")+1]
	require.True(t, strings.HasPrefix(name, "flops-task-101-"), name)
	require.Equal(t, []string{"rm", "-f", name}, recordedArgs(t, rec, "rm"))

	t.Setenv("FAKE_RUNTIME_SLEEP", "")
	t.Setenv("FAKE_RUNTIME_EXIT", "125")
	_, err = e.Run(context.Background(), containerSpec(102), Hooks{})
	var xe *ExitError
	require.ErrorAs(t, err, &xe)
	require.Equal(t, 125, xe.Code)
}

// Without docker or podman a CONTAINER task fails clearly.
func TestContainerNoRuntime(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, rt := range []string{"", "docker", "podman"} {
		e := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = rt })
		_, err := e.Run(context.Background(), containerSpec(103), Hooks{})
		require.ErrorIs(t, err, ErrNoContainerRuntime, rt)
	}
	_, err := New(Options{WorkDir: t.TempDir(), ContainerRuntime: "lxc"})
	require.Error(t, err)
}

// A real CONTAINER task (podman, a local busybox image): it writes its outputs, runs as
// nobody when the worker is root, cannot write its inputs or its root filesystem, has
// only a loopback interface, and a task that outgrows its memory limit fails cleanly.
func TestContainerReal(t *testing.T) {
	image := testimage.Busybox(t)
	e := newTestExecutor(t, func(o *Options) {
		o.ContainerRuntime = "podman"
		o.Sandbox.MemoryPerGPU, o.Sandbox.Processes, o.Sandbox.CPUsPerGPU = 64<<20, 64, 1
	})
	spec := Spec{
		TaskID: 104, JobID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: image,
		Command: []string{"/bin/sh", "-c", `out="$FLOPS_OUTPUT_DIR"; { echo "$FLOPS_JOB_ID"; hostname; } > "$out/id"; id -u > "$out/uid"
touch "$FLOPS_INPUT_DIR/x" 2>/dev/null && echo input >> "$out/bad"
touch /x 2>/dev/null && echo root >> "$out/bad"
echo t > /tmp/t || { echo tmp; ls -ld /tmp; id; } >> "$out/bad"
ls /sys/class/net > "$out/net"; true`},
	}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(res.OutputDir, name))
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "1\n"+TaskHostname+"\n", read("id"))
	uid := strconv.Itoa(os.Getuid())
	if os.Getuid() == 0 {
		uid = strconv.Itoa(NobodyID)
	}
	require.Equal(t, uid+"\n", read("uid"))
	require.Equal(t, "lo\n", read("net"), "no network but the loopback")
	_, err = os.Stat(filepath.Join(res.OutputDir, "bad"))
	require.True(t, os.IsNotExist(err), "inputs and root are read-only, /tmp writable: %s", readIf(filepath.Join(res.OutputDir, "bad")))

	spec.TaskID, spec.Command = 105, []string{"/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"}
	_, err = e.Run(context.Background(), spec, Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "over its memory limit the task fails: %v", err)
	require.NotZero(t, exit.Code)

	spec.TaskID, spec.Command = 108, []string{"/bin/sh", "-c", `for i in $(seq 1 100); do sleep 2 & done; wait; exit 0`}
	_, _ = e.Run(context.Background(), spec, Hooks{})
	logs, err := os.ReadFile(filepath.Join(e.dirs(108).output, LogDir, "stderr.log"))
	require.NoError(t, err)
	require.Contains(t, strings.ToLower(string(logs)), "fork", "100 processes cannot start under a limit of 64")

	spec.TaskID, spec.Command = 109, []string{"/bin/sh", "-c", `echo fine > "$FLOPS_OUTPUT_DIR/ok"`}
	res, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err, "the executor runs the next task as usual")
	require.Len(t, res.Files, 1)
}

// A worker restarted while a real container runs re-attaches to it: the container keeps
// running through the shutdown and the next executor returns its result.
func TestContainerRealSurvivesAWorkerRestart(t *testing.T) {
	image := testimage.Busybox(t)
	e := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = "podman" })
	spec := Spec{TaskID: 106, JobID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: image, MaxDuration: time.Minute,
		Command: []string{"/bin/sh", "-c", `echo begin > "$FLOPS_OUTPUT_DIR/begin"; sleep 2; echo end > "$FLOPS_OUTPUT_DIR/end"`}}
	_, err := shutdownOnceStarted(t, e, spec, filepath.Join(e.dirs(106).output, "begin"))
	require.ErrorIs(t, err, ErrDetached)
	_, ok := e.Detached(106)
	require.True(t, ok)
	rec, err := readRunRecord(e.TaskDir(106))
	require.NoError(t, err)
	require.NotEmpty(t, rec.Container)
	out, err := osexec.Command("podman", "inspect", "--format", "{{.State.Status}}", rec.Container).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "running", strings.TrimSpace(string(out)), "the container runs on without the worker")

	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir; o.ContainerRuntime = "podman" })
	res, err := e2.Adopt(context.Background(), 106, Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "end"))
	require.NoError(t, err)
	require.Equal(t, "end\n", string(b), "the container ran to its end")
	require.Len(t, res.Files, 2)
}

// detachAndKillClient runs a CONTAINER task until it wrote "begin" to its outputs, shuts
// the executor down (the task detaches), then kills the task's wrapper and runtime client
// as a service manager that kills the worker's cgroup would; the container runs on.
func detachAndKillClient(t *testing.T, e *Executor, spec Spec) runRecord {
	t.Helper()
	_, err := shutdownOnceStarted(t, e, spec, filepath.Join(e.dirs(spec.TaskID).output, "begin"))
	require.ErrorIs(t, err, ErrDetached)
	rec, err := readRunRecord(e.TaskDir(spec.TaskID))
	require.NoError(t, err)
	t.Cleanup(func() { _ = osexec.Command("podman", "rm", "-f", rec.Container).Run() })
	require.NoError(t, syscall.Kill(-rec.PID, syscall.SIGKILL), "the wrapper and the runtime client are killed")
	require.Eventually(t, func() bool { return !processAlive(rec.PID, rec.StartTicks) }, 5*time.Second, 20*time.Millisecond)
	return rec
}

func readIf(p string) string { b, _ := os.ReadFile(p); return string(b) }

// A worker restarted after its CONTAINER task's runtime client was killed (a service
// manager that killed the whole control group) finds the container still running and
// re-attaches to it by its name: the task ends with the container's result.
func TestContainerRealReattachedByName(t *testing.T) {
	image := testimage.Busybox(t)
	e := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = "podman" })
	spec := Spec{TaskID: 107, JobID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: image, MaxDuration: time.Minute,
		Command: []string{"/bin/sh", "-c", `echo begin > "$FLOPS_OUTPUT_DIR/begin"; sleep 3; echo end > "$FLOPS_OUTPUT_DIR/end"; exit 4`}}
	detachAndKillClient(t, e, spec)

	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir; o.ContainerRuntime = "podman" })
	res, err := e2.Adopt(context.Background(), 107, Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "the container's own exit status: %v", err)
	require.Equal(t, 4, exit.Code)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "end"))
	require.NoError(t, err)
	require.Equal(t, "end\n", string(b), "the container ran to its end")
}

// podman records a container as running only once its client has seen it start. A
// client killed in that window (with the worker's cgroup) leaves a container that runs
// under its conmon while podman's records say "initialized"; its exit status then reaches
// no record of podman's, and podman wait answers 0 when it ends, whatever its status. A
// worker restarted then must report the container's own status, not a success that
// earns a failed run a result: it watches the conmon and reads the status the conmon
// writes. The window is made here with no race: the container is created and
// initialized through podman and started behind its back, with runc.
func TestContainerRealReattachedWhenPodmanMissedItsStart(t *testing.T) {
	image := testimage.Busybox(t)
	if os.Getuid() != 0 {
		t.Skip("starts a container with runc behind podman's back: needs root podman")
	}
	e := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = "podman" })
	spec := Spec{TaskID: 108, JobID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: image, MaxDuration: time.Minute,
		Command: []string{"/bin/sh", "-c", `echo begin > "$FLOPS_OUTPUT_DIR/begin"; sleep 30`}}
	rec := detachAndKillClient(t, e, spec)

	// the same container name, now in the state a client killed mid-start leaves
	podman := func(args ...string) string {
		out, err := osexec.Command("podman", args...).CombinedOutput()
		require.NoError(t, err, "podman %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	podman("rm", "-f", "-t", "0", rec.Container)
	podman("create", "--name", rec.Container, "--network", "none", "--init",
		"--mount", "type=bind,source="+e.dirs(108).output+",target="+ContainerOutputDir,
		image, "/bin/sh", "-c", "sleep 6; echo end > "+ContainerOutputDir+"/end; exit 4")
	podman("init", rec.Container)
	id := podman("inspect", "--format", "{{.Id}}", rec.Container)
	if _, err := os.Stat(filepath.Join("/run/runc", id)); err != nil {
		t.Skipf("podman's runc state is not under /run/runc here: %v", err)
	}
	out, err := osexec.Command("runc", "--root", "/run/runc", "start", id).CombinedOutput()
	require.NoError(t, err, "runc start: %s", out)
	require.Equal(t, "initialized", podman("inspect", "--format", "{{.State.Status}}", rec.Container),
		"the container runs while podman's records say it does not")

	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir; o.ContainerRuntime = "podman" })
	res, err := e2.Adopt(context.Background(), 108, Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "the container's own exit status: %v", err)
	require.Equal(t, 4, exit.Code)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "end"))
	require.NoError(t, err, "the task is collected once its container ended, not before")
	require.Equal(t, "end\n", string(b))
}
