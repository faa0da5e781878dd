package executor

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/proctest"
)

// shutdownOnceStarted runs spec and, once file exists, cancels the run with the
// worker's shutdown cause; it returns how long Run took after the cancel, and Run's error.
func shutdownOnceStarted(t *testing.T, e *Executor, spec Spec, file string) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var cancelled time.Time
	var wg sync.WaitGroup
	wg.Go(func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(file); err == nil {
				break
			}
		}
		cancelled = time.Now()
		cancel(ErrWorkerShutdown)
	})
	_, err := e.Run(ctx, spec, Hooks{})
	wg.Wait()
	return time.Since(cancelled), err
}

// A worker shutdown leaves a PROCESS task running with its run record; a new executor
// on the same work directory adopts it and returns the result a plain run would have
// (root over the outputs, logs), and the task's process is the one started first.
func TestProcessDetachAndAdopt(t *testing.T) {
	e := newTestExecutor(t, nil)
	script := `echo $$ > "$FLOPS_OUTPUT_DIR/start.pid"; echo begin; sleep 2; echo $$ > "$FLOPS_OUTPUT_DIR/end.pid"; echo end; echo warn >&2`
	spec := shellSpec(60, script)
	spec.MaxDuration = time.Minute
	started := filepath.Join(e.dirs(60).output, "start.pid")
	took, err := shutdownOnceStarted(t, e, spec, started)
	require.ErrorIs(t, err, ErrDetached)
	require.ErrorIs(t, err, ErrWorkerShutdown)
	require.Less(t, took, time.Second, "a shutdown does not wait for the task")
	pid := readPID(t, started)
	killOnCleanup(t, pid)
	require.NoError(t, syscall.Kill(pid, 0), "the task process is still alive")
	require.False(t, proctest.Gone(pid))
	got, ok := e.Detached(60)
	require.True(t, ok)
	require.Equal(t, spec.Command, got.Command)
	require.Equal(t, []uint64{60}, e.DetachedTasks())

	// the worker's next start, on the same work directory
	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir })
	res, err := e2.Adopt(context.Background(), 60, Hooks{})
	require.NoError(t, err)
	_, ok = e2.Detached(60)
	require.False(t, ok, "the record is gone once the task ended")
	require.Equal(t, pid, readPID(t, filepath.Join(res.OutputDir, "end.pid")), "the same process ran to the end")
	require.Len(t, res.Files, 2)
	want, err := ManifestRoot(res.Files)
	require.NoError(t, err)
	require.Equal(t, want, res.Root)
	require.Len(t, res.Logs, 2)
	stdout, err := os.ReadFile(filepath.Join(res.OutputDir, LogDir, "stdout.log"))
	require.NoError(t, err)
	require.Equal(t, "begin\nend\n", string(stdout), "the logs are written by the task itself, across the restart")

}

// A non-zero exit of an adopted task is an *ExitError with its stderr, also when it ended
// while no worker watched it.
func TestProcessAdoptNonZeroExit(t *testing.T) {
	e := newTestExecutor(t, nil)
	spec := shellSpec(61, `touch "$FLOPS_OUTPUT_DIR/started"; sleep 0.5; echo "cuda error" >&2; exit 4`)
	_, err := shutdownOnceStarted(t, e, spec, filepath.Join(e.dirs(61).output, "started"))
	require.ErrorIs(t, err, ErrDetached)
	time.Sleep(time.Second) // it ends with no worker watching
	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir })
	res, err := e2.Adopt(context.Background(), 61, Hooks{})
	var xe *ExitError
	require.ErrorAs(t, err, &xe)
	require.Equal(t, 4, xe.Code)
	require.Contains(t, xe.Stderr, "cuda error")
	require.Len(t, res.Logs, 2)
}

// An adopted task still obeys the deadline of its run: its group is killed when it
// passes.
func TestProcessAdoptDeadline(t *testing.T) {
	e := newTestExecutor(t, nil)
	spec := shellSpec(62, `sleep 1000 & echo $! > "$FLOPS_OUTPUT_DIR/child.pid"; sleep 1000`)
	spec.MaxDuration = 1500 * time.Millisecond
	pidFile := filepath.Join(e.dirs(62).output, "child.pid")
	_, err := shutdownOnceStarted(t, e, spec, pidFile)
	require.ErrorIs(t, err, ErrDetached)
	child := readPID(t, pidFile)
	killOnCleanup(t, child)
	require.False(t, proctest.Gone(child))

	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir })
	start := time.Now()
	_, err = e2.Adopt(context.Background(), 62, Hooks{})
	require.ErrorIs(t, err, ErrMaxDuration)
	require.Less(t, time.Since(start), 3*time.Second)
	require.Eventually(t, func() bool { return proctest.Gone(child) }, 3*time.Second, 20*time.Millisecond, "the group dies at the deadline")
	_, ok := e2.Detached(62)
	require.False(t, ok)
}

// A recorded process that is gone without an exit status cannot be adopted: the task
// is lost, and its record removed.
func TestProcessAdoptLost(t *testing.T) {
	e := newTestExecutor(t, nil)
	spec := shellSpec(63, `touch "$FLOPS_OUTPUT_DIR/started"; sleep 1000`)
	_, err := shutdownOnceStarted(t, e, spec, filepath.Join(e.dirs(63).output, "started"))
	require.ErrorIs(t, err, ErrDetached)
	rec, err := readRunRecord(e.TaskDir(63))
	require.NoError(t, err)
	require.NotZero(t, rec.StartTicks)
	require.NoError(t, syscall.Kill(-rec.PID, syscall.SIGKILL)) // the wrapper with it
	require.Eventually(t, func() bool { return proctest.Gone(rec.PID) }, 3*time.Second, 20*time.Millisecond)

	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir })
	_, err = e2.Adopt(context.Background(), 63, Hooks{})
	require.ErrorIs(t, err, ErrTaskLost)
	_, ok := e2.Detached(63)
	require.False(t, ok)

	// a live pid with another start time is another process: not ours
	rec.PID, rec.StartTicks = os.Getpid(), rec.StartTicks+1
	require.NoError(t, writeRunRecord(e.TaskDir(63), rec))
	_, err = e2.Adopt(context.Background(), 63, Hooks{})
	require.ErrorIs(t, err, ErrTaskLost)
}

// Abandon kills a detached task's group (a task no longer this machine's).
func TestProcessAbandon(t *testing.T) {
	e := newTestExecutor(t, nil)
	spec := shellSpec(64, `sleep 1000 & echo $! > "$FLOPS_OUTPUT_DIR/child.pid"; sleep 1000`)
	pidFile := filepath.Join(e.dirs(64).output, "child.pid")
	_, err := shutdownOnceStarted(t, e, spec, pidFile)
	require.ErrorIs(t, err, ErrDetached)
	child := readPID(t, pidFile)
	killOnCleanup(t, child)
	e2 := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir })
	e2.Abandon(context.Background(), 64)
	require.Eventually(t, func() bool { return proctest.Gone(child) }, 3*time.Second, 20*time.Millisecond)
	require.Empty(t, e2.DetachedTasks())
}

// A finished task's logs are bounded to MaxLogBytes each, head and tail kept.
func TestProcessLogBounded(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.MaxLogBytes = 20 })
	res, err := e.Run(context.Background(), shellSpec(65, `printf 0123456789abcdefghijklmnopqrstuvwxyz; printf 'short' >&2`), Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, LogDir, "stdout.log"))
	require.NoError(t, err)
	require.Equal(t, "0123456789\n[flops: 16 bytes omitted]\nqrstuvwxyz", string(b))
	b, err = os.ReadFile(filepath.Join(res.OutputDir, LogDir, "stderr.log"))
	require.NoError(t, err)
	require.Equal(t, "short", string(b))
	entries, err := os.ReadDir(filepath.Join(res.OutputDir, LogDir))
	require.NoError(t, err)
	require.Len(t, entries, 2)
}
