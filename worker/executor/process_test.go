package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/proctest"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A PROCESS task runs in its working directory with the FLOPS_* variables, its GPUs in
// CUDA_VISIBLE_DEVICES and the job's env, and nothing else of the worker's environment.
// Its root is the manifest root of its outputs; the captured logs are not in it.
func TestProcessEnvironment(t *testing.T) {
	t.Setenv("FLOPS_TEST_WORKER_SECRET", "hunter2")
	e := newTestExecutor(t, nil)
	spec := shellSpec(11, `env > "$FLOPS_OUTPUT_DIR/env.txt"; pwd > "$FLOPS_OUTPUT_DIR/pwd.txt"; echo to-stdout; echo to-stderr >&2`)
	spec.GPUs = []string{"GPU-6f1c5a0e-1111-2222-3333-444455556666", "MIG-8f2d0d3a-aaaa-bbbb-cccc-ddddeeeeffff"}
	spec.Env = []markettypes.EnvVar{{Name: "MODEL", Value: "llama 3"}, {Name: "FLOPS_TASK_ID", Value: "999"}, {Name: "CUDA_VISIBLE_DEVICES", Value: "0,1,2,3"}}

	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	d := e.dirs(11)

	envTxt, err := os.ReadFile(filepath.Join(res.OutputDir, "env.txt"))
	require.NoError(t, err)
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(envTxt)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	_, told := env["FLOPS_TASK_ID"]
	require.False(t, told, "no task id (it tells a verification run from the primary), and the job's own is dropped")
	require.Equal(t, "7", env["FLOPS_JOB_ID"])
	require.Equal(t, "2", env["FLOPS_SHARD_INDEX"])
	require.Equal(t, d.work, env["FLOPS_INPUT_DIR"])
	require.Equal(t, d.output, env["FLOPS_OUTPUT_DIR"])
	require.Equal(t, d.checkpoint, env["FLOPS_CHECKPOINT_DIR"])
	require.Equal(t, strings.Join(spec.GPUs, ","), env["CUDA_VISIBLE_DEVICES"])
	require.Equal(t, "llama 3", env["MODEL"])
	require.Equal(t, d.tmp, env["HOME"])
	require.NotContains(t, env, "FLOPS_TEST_WORKER_SECRET", "the worker's environment must not leak into tasks")
	pwd, err := os.ReadFile(filepath.Join(res.OutputDir, "pwd.txt"))
	require.NoError(t, err)
	require.Equal(t, d.work, strings.TrimSpace(string(pwd)))

	// The root covers env.txt and pwd.txt, not the logs.
	require.Len(t, res.Files, 2)
	require.Equal(t, "env.txt", res.Files[0].Path)
	require.Equal(t, "pwd.txt", res.Files[1].Path)
	want, err := ManifestRoot(res.Files)
	require.NoError(t, err)
	require.Equal(t, want, res.Root)
	require.Len(t, res.Logs, 2)
	stdout, err := os.ReadFile(filepath.Join(res.OutputDir, LogDir, "stdout.log"))
	require.NoError(t, err)
	require.Equal(t, "to-stdout\n", string(stdout))
	stderr, err := os.ReadFile(filepath.Join(res.OutputDir, LogDir, "stderr.log"))
	require.NoError(t, err)
	require.Equal(t, "to-stderr\n", string(stderr))
}

// A task without GPUs sees CUDA_VISIBLE_DEVICES set and empty: no GPU at all.
func TestProcessNoGPUs(t *testing.T) {
	e := newTestExecutor(t, nil)
	res, err := e.Run(context.Background(), shellSpec(12, `printf '%s' "${CUDA_VISIBLE_DEVICES-unset}" > "$FLOPS_OUTPUT_DIR/cvd"`), Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "cvd"))
	require.NoError(t, err)
	require.Equal(t, "", string(b))
}

// A non-zero exit fails the task with its code and the end of its stderr; the logs are
// still returned.
func TestProcessNonZeroExit(t *testing.T) {
	e := newTestExecutor(t, nil)
	res, err := e.Run(context.Background(), shellSpec(13, `echo "cuda error: out of memory" >&2; exit 3`), Hooks{})
	var xe *ExitError
	require.ErrorAs(t, err, &xe)
	require.Equal(t, 3, xe.Code)
	require.Contains(t, xe.Stderr, "out of memory")
	require.Contains(t, err.Error(), "code 3")
	require.Len(t, res.Logs, 2)

	_, err = e.Run(context.Background(), shellSpec(14, `kill -KILL $$`), Hooks{})
	require.ErrorAs(t, err, &xe)
	require.Equal(t, -1, xe.Code)
	require.Equal(t, "killed", xe.Signal)

	_, err = e.Run(context.Background(), Spec{TaskID: 15, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"/no/such/binary"}}, Hooks{})
	require.ErrorContains(t, err, "/no/such/binary")
}

// A task that outlives its max duration is stopped with its whole process group:
// SIGTERM first, SIGKILL after the grace for a group that ignores SIGTERM.
func TestProcessMaxDurationKillsGroup(t *testing.T) {
	cases := []struct {
		name   string
		script string
	}{
		{"obeys SIGTERM", `sleep 1000 & echo $! > "$FLOPS_OUTPUT_DIR/child.pid"; sleep 1000`},
		{"ignores SIGTERM", `trap "" TERM; sleep 1000 & echo $! > "$FLOPS_OUTPUT_DIR/child.pid"; sleep 1000`},
	}
	for x, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestExecutor(t, nil)
			spec := shellSpec(uint64(20+x), tc.script)
			spec.MaxDuration = 500 * time.Millisecond
			start := time.Now()
			res, err := e.Run(context.Background(), spec, Hooks{})
			require.ErrorIs(t, err, ErrMaxDuration)
			require.Less(t, time.Since(start), 5*time.Second)
			child := readPID(t, filepath.Join(res.OutputDir, "child.pid"))
			killOnCleanup(t, child)
			require.Eventually(t, func() bool { return proctest.Gone(child) }, 3*time.Second, 20*time.Millisecond, "the background child must die with the task")
		})
	}
}

// Cancelling the context stops the task and its children.
func TestProcessCancel(t *testing.T) {
	e := newTestExecutor(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	spec := shellSpec(30, `(sleep 1000; echo never) & echo $! > "$FLOPS_OUTPUT_DIR/child.pid"; sleep 1000`)
	pidFile := filepath.Join(e.dirs(30).output, "child.pid")
	var wg sync.WaitGroup
	wg.Go(func() {
		defer cancel()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(b)) != "" {
				return
			}
		}
	})
	_, err := e.Run(ctx, spec, Hooks{})
	wg.Wait()
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, ErrMaxDuration)
	child := readPID(t, pidFile)
	killOnCleanup(t, child)
	require.Eventually(t, func() bool { return proctest.Gone(child) }, 3*time.Second, 20*time.Millisecond)
}

// What a successful command leaves running in its group is killed, and does not hold
// the task open through its inherited stdout.
func TestProcessStrayChildrenKilledAtExit(t *testing.T) {
	e := newTestExecutor(t, nil)
	start := time.Now()
	res, err := e.Run(context.Background(), shellSpec(31, `sleep 1000 & echo $! > "$FLOPS_OUTPUT_DIR/child.pid"; echo done`), Hooks{})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second, "a stray child holding stdout does not hold the task open")
	child := readPID(t, filepath.Join(res.OutputDir, "child.pid"))
	killOnCleanup(t, child)
	require.Eventually(t, func() bool { return proctest.Gone(child) }, 3*time.Second, 20*time.Millisecond)
}

// Run refuses a second run of a task that is running.
func TestProcessTaskAlreadyRunning(t *testing.T) {
	e := newTestExecutor(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := filepath.Join(e.dirs(32).output, "started")
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = e.Run(ctx, shellSpec(32, `touch "$FLOPS_OUTPUT_DIR/started"; sleep 1000`), Hooks{}) })
	require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil }, 5*time.Second, 10*time.Millisecond)
	_, err := e.Run(ctx, shellSpec(32, `true`), Hooks{})
	require.ErrorIs(t, err, ErrTaskRunning)
	require.ErrorIs(t, e.Cleanup(32), ErrTaskRunning)
	cancel()
	wg.Wait()
	require.NoError(t, e.Cleanup(32))
	_, err = os.Stat(e.TaskDir(32))
	require.True(t, os.IsNotExist(err))
}

// checkpointRecorder collects the checkpoints a run reports.
type checkpointRecorder struct {
	mu  sync.Mutex
	got []Checkpoint
}

func (r *checkpointRecorder) hook(c Checkpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, c)
}

func (r *checkpointRecorder) digests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.got {
		out = append(out, c.SHA256)
	}
	return out
}

const writeCheckpoint = `ckpt() { printf '%s' "$1" > "$FLOPS_CHECKPOINT_DIR/.ckpt.tmp" && mv "$FLOPS_CHECKPOINT_DIR/.ckpt.tmp" "$FLOPS_CHECKPOINT_DIR/state.ckpt"; }; `

// Checkpoints are reported while the task runs (once complete) and at its end, each
// new content once; a resumed task finds its checkpoint in place, under its name, and
// the resumed checkpoint itself is not reported again.
func TestProcessCheckpointAndResume(t *testing.T) {
	e := newTestExecutor(t, nil)
	var rec checkpointRecorder
	script := writeCheckpoint + `ckpt one; sleep 0.5; ckpt one; sleep 0.3; ckpt two`
	spec := shellSpec(40, script)
	spec.CheckpointInterval = 40 * time.Millisecond // every scan
	_, err := e.Run(context.Background(), spec, Hooks{Checkpoint: rec.hook})
	require.NoError(t, err)
	require.Equal(t, []string{sha256Hex([]byte("one")), sha256Hex([]byte("two"))}, rec.digests())
	last := rec.got[1]
	require.Equal(t, filepath.Join(e.dirs(40).checkpoint, "state.ckpt"), last.Path)
	require.Empty(t, last.URI)

	cases := []struct {
		name   string
		taskID uint64
	}{
		// Another task resumes from the file.
		{"another task", 41},
		// The same task restarts on this node: its checkpoint lives in the directory
		// the restart empties.
		{"same task", 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rec2 checkpointRecorder
			spec := shellSpec(tc.taskID, `cp "$FLOPS_CHECKPOINT_DIR/state.ckpt" "$FLOPS_OUTPUT_DIR/resumed"; sleep 0.2`)
			spec.Resume = &Checkpoint{SHA256: last.SHA256, Path: last.Path}
			spec.CheckpointInterval = 40 * time.Millisecond
			res, err := e.Run(context.Background(), spec, Hooks{Checkpoint: rec2.hook})
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(res.OutputDir, "resumed"))
			require.NoError(t, err)
			require.Equal(t, "two", string(b))
			require.Empty(t, rec2.digests(), "an unchanged resumed checkpoint is not reported")
		})
	}
}

// A checkpoint to resume from is fetched from its URI when the file is not here, and
// verified like an input.
func TestProcessResumeFromURI(t *testing.T) {
	state := []byte("model weights after epoch 3")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(state)
	}))
	defer srv.Close()
	e := newTestExecutor(t, nil)

	spec := shellSpec(42, `cat "$FLOPS_CHECKPOINT_DIR/epoch3.bin" > "$FLOPS_OUTPUT_DIR/resumed"`)
	spec.Resume = &Checkpoint{SHA256: sha256Hex(state), URI: srv.URL + "/checkpoints/epoch3.bin", Path: "/gone/elsewhere/epoch3.bin"}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "resumed"))
	require.NoError(t, err)
	require.Equal(t, state, b)

}

// A previous run's checkpoint that cannot be had fails nothing: its URI gone with the
// machine that wrote it, content that does not match its digest, or more than the task's
// disk, the task starts from the beginning. It had failed with the job's fault
// (FAILURE_REASON_INPUT), which another operator's run of the task confirmed, so a
// provider that recorded a checkpoint no one could fetch, then abandoned the task, failed
// its client's job.
func TestAttackUnusableCheckpointFailsTheJob(t *testing.T) {
	state := []byte("model weights after epoch 3")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			http.NotFound(w, r)
		case "/huge":
			_, _ = w.Write(make([]byte, 2<<20))
		default:
			_, _ = w.Write(state)
		}
	}))
	defer srv.Close()
	e := newTestExecutor(t, nil)
	script := `if [ -f "$FLOPS_CHECKPOINT_DIR/epoch3.bin" ]; then cat "$FLOPS_CHECKPOINT_DIR/epoch3.bin"; else echo from the beginning; fi > "$FLOPS_OUTPUT_DIR/resumed"`
	huge := sha256.Sum256(make([]byte, 2<<20))
	for id, cp := range map[uint64]Checkpoint{
		43: {SHA256: sha256Hex([]byte("something else")), URI: srv.URL + "/checkpoints/epoch3.bin"},
		44: {SHA256: sha256Hex(state), URI: srv.URL + "/gone"},
		45: {SHA256: hex.EncodeToString(huge[:]), URI: srv.URL + "/huge/epoch3.bin"},
		46: {SHA256: sha256Hex(state), Path: "/gone/elsewhere/epoch3.bin"},
	} {
		spec := shellSpec(id, script)
		spec.MaxDiskBytes = 1 << 20
		spec.Resume = &cp
		res, err := e.Run(context.Background(), spec, Hooks{})
		require.NoError(t, err, "task %d", id)
		b, err := os.ReadFile(filepath.Join(res.OutputDir, "resumed"))
		require.NoError(t, err)
		require.Equal(t, "from the beginning\n", string(b), "task %d", id)
	}
}

// The captured log keeps its head and tail and says how much it left out.
func TestLogCaptureBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.log")
	l, err := newLogCapture(p, 20)
	require.NoError(t, err)
	for _, chunk := range []string{"0123456789", "abcdefghij", "klmnopqrst", "uvwxyz"} {
		n, err := l.Write([]byte(chunk))
		require.NoError(t, err)
		require.Equal(t, len(chunk), n)
	}
	l.Close()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "0123456789\n[flops: 16 bytes omitted]\nqrstuvwxyz", string(b))
	require.Equal(t, "0123456789abcdefghijklmnopqrstuvwxyz", l.Tail(), "the tail quotes the stream's last KiB")

	// Below the bound the stream is kept whole.
	l, err = newLogCapture(p, 20)
	require.NoError(t, err)
	_, _ = l.Write([]byte("0123456789abcde"))
	l.Close()
	b, err = os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "0123456789abcde", string(b))
	require.Equal(t, "0123456789abcde", l.Tail())
}

// A malformed spec is refused before anything runs.
func TestCheckSpec(t *testing.T) {
	e := newTestExecutor(t, nil)
	bad := []Spec{
		{TaskID: 1, Runtime: markettypes.RUNTIME_PROCESS},
		{TaskID: 1, Runtime: markettypes.RUNTIME_UNSPECIFIED},
		{TaskID: 1, Runtime: markettypes.RUNTIME_BUILTIN, Image: "mine"},
		{TaskID: 1, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm},
		{TaskID: 1, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinChecksum},
		{TaskID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: "ubuntu:latest"},
		{TaskID: 1, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"true"}, GPUs: []string{`GPU-1,GPU-2`}},
		{TaskID: 1, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"true"}, Inputs: []markettypes.Input{{Uri: "https://x/y", Sha256: sha256Hex(nil), Path: "../escape"}}},
		{TaskID: 1, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"true"}, Resume: &Checkpoint{SHA256: "abc"}},
	}
	for x, s := range bad {
		_, err := e.Run(context.Background(), s, Hooks{})
		require.ErrorIs(t, err, ErrInvalidSpec, "case %d", x)
	}
	require.True(t, errors.Is(checkSpec(shellSpec(1, "true")), nil))
}

// checkpoint_interval: the task gets it as FLOPS_CHECKPOINT_INTERVAL, and a task that
// writes a new checkpoint every 0.3 s for 2.4 s with an interval of 1 s (the directory
// scanned every 40 ms) has one reported per second (the first once complete, then one
// an interval later, ...) and the last at its exit, not all eight; with an interval of 0
// none is watched.
func TestProcessCheckpointInterval(t *testing.T) {
	e := newTestExecutor(t, nil)
	script := writeCheckpoint + `echo "$FLOPS_CHECKPOINT_INTERVAL" > "$FLOPS_OUTPUT_DIR/interval"
for i in $(seq 1 8); do ckpt "state $i"; sleep 0.3; done`
	var rec checkpointRecorder
	spec := shellSpec(50, script)
	spec.CheckpointInterval = time.Second
	start := time.Now()
	res, err := e.Run(context.Background(), spec, Hooks{Checkpoint: rec.hook})
	require.NoError(t, err)
	ran := time.Since(start)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "interval"))
	require.NoError(t, err)
	require.Equal(t, "1\n", string(b))
	got := len(rec.digests())
	require.GreaterOrEqual(t, got, 3, "one at the start, one a second later, the last at the exit")
	// the script's 2.4 s of sleeps take longer on a loaded machine (its forks are slow),
	// and every whole interval it ran may add one report: the bound follows the run (4 or
	// 5 on a quiet machine, below the 8 checkpoints written while it ran under 6 s)
	require.LessOrEqual(t, got, int(ran/spec.CheckpointInterval)+2, "at most one per interval, and the last at the exit (ran %s)", ran)
	require.Equal(t, sha256Hex([]byte("state 8")), rec.digests()[got-1], "the last one is reported at the exit")

	var none checkpointRecorder
	spec = shellSpec(51, script)
	res, err = e.Run(context.Background(), spec, Hooks{Checkpoint: none.hook})
	require.NoError(t, err)
	require.Empty(t, none.digests(), "checkpoint_interval 0: not watched")
	_, err = os.Stat(filepath.Join(res.OutputDir, "interval"))
	require.NoError(t, err)
	b, err = os.ReadFile(filepath.Join(res.OutputDir, "interval"))
	require.NoError(t, err)
	require.Equal(t, "\n", string(b), "no interval given")
}

// A running task's logs are readable where it writes them, line by line, while it runs
// (the output server's live log route reads them through TaskLogs); after the run they
// stay there, no longer running, until the task is cleaned up.
func TestTaskLogsWhileRunning(t *testing.T) {
	e := newTestExecutor(t, nil)
	_, _, ok := e.TaskLogs(33)
	require.False(t, ok, "no run, no logs")
	goOn := filepath.Join(t.TempDir(), "go-on")
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(context.Background(), shellSpec(33, `echo first; while [ ! -e "`+goOn+`" ]; do sleep 0.02; done; echo second`), Hooks{})
		done <- err
	}()
	var dir string
	require.Eventually(t, func() bool {
		d, running, ok := e.TaskLogs(33)
		if !ok || !running {
			return false
		}
		b, _ := os.ReadFile(filepath.Join(d, "stdout.log"))
		dir = d
		return string(b) == "first\n"
	}, 5*time.Second, 10*time.Millisecond, "the first line is readable while the task runs")
	require.NoError(t, os.WriteFile(goOn, nil, 0o644))
	require.NoError(t, <-done)
	d, running, ok := e.TaskLogs(33)
	require.True(t, ok)
	require.False(t, running)
	require.Equal(t, dir, d)
	b, err := os.ReadFile(filepath.Join(d, "stdout.log"))
	require.NoError(t, err)
	require.Equal(t, "first\nsecond\n", string(b))
	require.NoError(t, e.Cleanup(33))
	_, _, ok = e.TaskLogs(33)
	require.False(t, ok)
}

// A task's progress is the last line of the file FLOPS_PROGRESS_FILE names, made
// printable and bounded; a link the job makes to another file is not read.
func TestTaskProgress(t *testing.T) {
	e := newTestExecutor(t, nil)
	require.Empty(t, e.Progress(34))
	_, err := e.Run(context.Background(), shellSpec(34, `printf 'epoch 1\nepoch 2\007 of 3\n\n' > "$FLOPS_PROGRESS_FILE"`), Hooks{})
	require.NoError(t, err)
	require.Equal(t, "epoch 2  of 3", e.Progress(34))
	_, err = e.Run(context.Background(), shellSpec(35, `head -c 300 /dev/zero | tr '\0' x > "$FLOPS_PROGRESS_FILE"`), Hooks{})
	require.NoError(t, err)
	require.Len(t, e.Progress(35), markettypes.MaxProgressLen)

	secret := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(secret, []byte("-----BEGIN KEY-----\nsecret material\n"), 0o600))
	_, err = e.Run(context.Background(), shellSpec(36, `ln -s "`+secret+`" "$FLOPS_PROGRESS_FILE"`), Hooks{})
	require.NoError(t, err)
	require.Empty(t, e.Progress(36), "a symbolic link is not followed")
	_, err = e.Run(context.Background(), shellSpec(37, `ln "`+secret+`" "$FLOPS_PROGRESS_FILE"`), Hooks{})
	if err == nil { // a hard link needs the same file system
		require.Empty(t, e.Progress(37), "a hard link is not read")
	}
}

// A task that, before it ends, swaps its captured logs for links to the worker's files
// gets neither read nor written through them: its stderr is a link to the worker's key
// (which the failure's message would quote) and the name the bounded copy of its stdout
// is written to is a link to another of the worker's files (which would be truncated).
func TestAttackTaskLinksItsLogsToWorkerFiles(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.MaxLogBytes = 1024 })
	home := t.TempDir()
	key, victim := filepath.Join(home, "key"), filepath.Join(home, "state.json")
	require.NoError(t, os.WriteFile(key, []byte("PRIVATE KEY"), 0o600))
	require.NoError(t, os.WriteFile(victim, []byte(`{"salts":"precious"}`), 0o600))
	script := fmt.Sprintf(`logs="$FLOPS_OUTPUT_DIR/.flops"
head -c 5000 /dev/zero | tr '\0' x
ln -sf %q "$logs/stdout.log.bounded"
rm -f "$logs/stderr.log"; ln -s %q "$logs/stderr.log"
exit 1`, victim, key)
	_, err := e.Run(context.Background(), shellSpec(900, script), Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.NotContains(t, exit.Stderr, "PRIVATE KEY", "the key is not read through the task's link")
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, `{"salts":"precious"}`, string(b), "the worker's file is not written through the task's link")
}
