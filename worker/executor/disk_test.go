package executor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// duBytes is what du counts under the task's writable directories, measured without a
// limit.
func duBytes(t *testing.T, d taskDirs) uint64 {
	t.Helper()
	why, use, err := overDisk([]string{d.output, d.checkpoint, d.tmp}, 0, MaxOutputFiles)
	require.NoError(t, err)
	require.Empty(t, why)
	return use.bytes
}

// A job that writes without end, in each of the places a task may write (its outputs,
// its scratch directory, its checkpoints, its own stdout), is stopped once it holds more
// than its disk, with ErrDiskQuota, and what it left is about its limit, not the disk's
// size: without the watch each of these runs until the machine's disk is full.
func TestAttackJobFillsTheDisk(t *testing.T) {
	const limit = 32 << 20
	for i, c := range []struct{ where, script string }{
		{"outputs", `i=0; while :; do dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/fill.$i" bs=1M count=1 2>/dev/null; i=$((i+1)); done`},
		{"scratch", `i=0; while :; do dd if=/dev/zero of="$TMPDIR/fill.$i" bs=1M count=1 2>/dev/null; i=$((i+1)); done`},
		{"checkpoints", `while :; do dd if=/dev/zero bs=1M count=1 2>/dev/null >> "$FLOPS_CHECKPOINT_DIR/ckpt"; done`},
		{"logs", `while :; do dd if=/dev/zero bs=1M count=1 2>/dev/null; done`},
	} {
		t.Run(c.where, func(t *testing.T) {
			e := newTestExecutor(t, func(o *Options) { o.DiskPoll = 50 * time.Millisecond })
			spec := shellSpec(uint64(700+i), c.script)
			spec.MaxDuration, spec.MaxDiskBytes = time.Minute, limit
			start := time.Now()
			res, err := e.Run(context.Background(), spec, Hooks{})
			require.ErrorIs(t, err, ErrDiskQuota)
			require.ErrorContains(t, err, fmt.Sprintf("more than %d bytes of disk", limit))
			require.Less(t, time.Since(start), 30*time.Second, "stopped at its limit, long before its max duration")
			require.Equal(t, e.dirs(spec.TaskID).output, res.OutputDir, "the logs stay for the failure report")
			if c.where != "logs" { // (the log is cut to MaxLogBytes once the task ends)
				left := duBytes(t, e.dirs(spec.TaskID))
				require.Greater(t, left, uint64(limit), "it was over its limit when stopped")
				require.Less(t, left, uint64(limit+(1<<30)), "stopped within a poll of its limit")
			}
			_, running, ok := e.TaskLogs(spec.TaskID)
			require.True(t, ok)
			require.False(t, running)
		})
	}
}

// The same job in the sandbox (bubblewrap, the task's directories bound into it): the
// worker measures the directories the sandbox binds, and stops it the same way.
func TestAttackJobFillsTheDiskInTheSandbox(t *testing.T) {
	e := newSandboxExecutor(t, func(o *Options) { o.DiskPoll = 50 * time.Millisecond })
	spec := shellSpec(710, `i=0; while :; do dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/fill.$i" bs=1M count=1 2>/dev/null; dd if=/dev/zero of="$TMPDIR/fill.$i" bs=1M count=1 2>/dev/null; i=$((i+1)); done`)
	spec.MaxDuration, spec.MaxDiskBytes = time.Minute, 32<<20
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrDiskQuota)
	require.Less(t, duBytes(t, e.dirs(710)), uint64(32<<20+(1<<30)))
}

// A job that writes past its disk and exits before the next measure fails all the
// same: its end is measured too, so the outcome does not depend on when the polls fell.
// One that stays within its disk runs to its result, and a run without a limit is not
// measured.
func TestDiskMeasuredAtTheTasksEnd(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.DiskPoll = time.Hour })
	spec := shellSpec(720, `dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/big" bs=1M count=40 2>/dev/null`)
	spec.MaxDiskBytes = 32 << 20
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrDiskQuota)

	spec = shellSpec(721, `dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/fits" bs=1M count=8 2>/dev/null; dd if=/dev/zero of="$TMPDIR/scratch" bs=1M count=8 2>/dev/null`)
	spec.MaxDiskBytes = 32 << 20
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	require.Len(t, res.Files, 1)
	require.EqualValues(t, 8<<20, res.Files[0].Size)

	spec = shellSpec(722, `dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/big" bs=1M count=40 2>/dev/null`)
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err, "MaxDiskBytes 0: no bound")
}

// A worker restarted while a task runs adopts it with the disk limit its run record
// keeps, and stops it at that limit.
func TestAdoptedTaskKeepsItsDisk(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.DiskPoll = 50 * time.Millisecond })
	script := `touch "$FLOPS_OUTPUT_DIR/started"; sleep 1; i=0; while :; do dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/fill.$i" bs=1M count=1 2>/dev/null; i=$((i+1)); done`
	spec := shellSpec(730, script)
	spec.MaxDuration, spec.MaxDiskBytes = time.Minute, 32<<20
	_, err := shutdownOnceStarted(t, e, spec, filepath.Join(e.dirs(730).output, "started"))
	require.ErrorIs(t, err, ErrDetached)
	rec, err := readRunRecord(e.dirs(730).root)
	require.NoError(t, err)
	killOnCleanup(t, rec.PID)
	require.EqualValues(t, 32<<20, rec.MaxDiskBytes)

	again := newTestExecutor(t, func(o *Options) {
		o.WorkDir = e.opts.WorkDir
		o.DiskPoll = 50 * time.Millisecond
	})
	_, err = again.Adopt(context.Background(), 730, Hooks{})
	require.ErrorIs(t, err, ErrDiskQuota)
}

// overDisk counts what the disk holds: a sparse file its blocks, a file linked twice
// once, and every entry against the file limit (a job of empty files fills the inodes).
func TestOverDiskCountsTheDisksBlocks(t *testing.T) {
	dir := t.TempDir()
	sparse, err := os.Create(filepath.Join(dir, "sparse"))
	require.NoError(t, err)
	require.NoError(t, sparse.Truncate(1<<40)) // 1 TiB long, no block written
	require.NoError(t, sparse.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), make([]byte, 4<<20), 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "data"), filepath.Join(dir, "again")))
	why, use, err := overDisk([]string{dir, filepath.Join(dir, "missing")}, 8<<20, 100)
	require.NoError(t, err)
	require.Empty(t, why)
	require.GreaterOrEqual(t, use.bytes, uint64(4<<20))
	require.Less(t, use.bytes, uint64(5<<20), "the sparse file takes no block, the linked one counts once")
	require.Equal(t, 4, use.files)

	why, _, err = overDisk([]string{dir}, 2<<20, 100)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("more than %d bytes of disk", 2<<20), why)

	for i := range 100 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprint("empty.", i)), nil, 0o644))
	}
	why, use, err = overDisk([]string{dir}, 8<<20, 100)
	require.NoError(t, err)
	require.Equal(t, "more than 100 files", why)
	require.Equal(t, 101, use.files, "counting stops at the first file over")
}

// A job that nests its directories past PATH_MAX, where no path-based read reaches, and
// writes there: the worker cannot measure that part of its disk, and stops it for that
// (a walk that only logged the error measured nothing, every time, and let it fill the
// disk, the final measure included).
func TestAttackJobHidesItsDiskPastPathMax(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.DiskPoll = 50 * time.Millisecond })
	name := strings.Repeat("d", 200)
	spec := shellSpec(740, `cd "$FLOPS_OUTPUT_DIR"; i=0; while [ $i -lt 30 ]; do mkdir `+name+` && cd `+name+`; i=$((i+1)); done; j=0; while [ $j -lt 64 ]; do head -c 1048576 /dev/zero >> fill; j=$((j+1)); done; sleep 600`)
	spec.MaxDuration, spec.MaxDiskBytes = 20*time.Second, 1<<40
	start := time.Now()
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrDiskQuota)
	require.ErrorContains(t, err, "paths longer than the system allows")
	require.Less(t, time.Since(start), 15*time.Second, "stopped long before its max duration")
}

// So that the measures of a task's disk take at most a tenth of a core, one that took
// longer than a tenth of DiskPoll is followed by a wait of ten times its own time.
func TestNextDiskMeasureWaitsTenTimesTheLast(t *testing.T) {
	for _, c := range []struct{ took, want time.Duration }{
		{0, 2 * time.Second},
		{10 * time.Millisecond, 2 * time.Second},
		{200 * time.Millisecond, 2 * time.Second},
		{time.Second, 10 * time.Second},
		{30 * time.Second, 300 * time.Second},
	} {
		require.Equal(t, c.want, nextDiskPoll(DefaultDiskPoll, c.took), "a measure of %s", c.took)
	}
}

// A measure is due at its time, or sooner when the filesystem lost more free space since
// the last one than the task may still write: a task of many files, measured seldom,
// cannot fill the disk between two measures.
func TestDiskMeasureBroughtForwardByAFillingDisk(t *testing.T) {
	now := time.Unix(1000, 0)
	later := now.Add(20 * time.Second)
	for _, c := range []struct {
		name             string
		next             time.Time
		then, free, room uint64
		due              bool
	}{
		{"first measure", time.Time{}, 0, 50 << 30, 0, true},
		{"its time", now, 50 << 30, 50 << 30, 1 << 30, true},
		{"not yet, the disk steady", later, 50 << 30, 50 << 30, 1 << 30, false},
		{"not yet, the disk filling within the task's room", later, 50 << 30, 50<<30 - 1<<29, 1 << 30, false},
		{"the disk lost more than the task's room", later, 50 << 30, 50<<30 - 1<<30 - 1, 1 << 30, true},
		{"the disk freed space", later, 50 << 30, 60 << 30, 0, false},
		{"free space unknown", later, 0, 50 << 30, 0, false},
	} {
		require.Equal(t, c.due, measureDue(now, c.next, c.then, c.free, c.room), c.name)
	}
}

// A job that first makes tens of thousands of files, so that each measure takes long
// and the next waits ten times as long, then writes as fast as it can: the free space
// the filesystem loses brings the next measure forward, and the job is stopped within
// a poll of its limit. Without that, it wrote on until the stretched measure (1,769 MiB
// left under a 64 MiB limit here, against 69 MiB with it).
func TestAttackJobOfManyFilesFillsTheDiskBetweenMeasures(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.DiskPoll = 20 * time.Millisecond })
	spec := shellSpec(750, `cd "$FLOPS_OUTPUT_DIR"; mkdir many; cd many; seq 1 40000 | xargs touch; cd ..; while :; do head -c 4194304 /dev/zero >> fill; done`)
	spec.MaxDuration, spec.MaxDiskBytes = time.Minute, 64<<20
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrDiskQuota)
	require.Less(t, duBytes(t, e.dirs(750)), uint64(64<<20+256<<20), "stopped within a poll of its limit")
}

// What the task's own doing keeps the worker from measuring ends the measure as an
// excess, named from the task's directory: the report's detail is public, and the
// machine's paths are not in it. Another error is the measure's own.
func TestDiskMeasureStoppedByTheTask(t *testing.T) {
	m := diskMeasure{top: "/srv/flops/work/tasks/12/output"}
	require.ErrorIs(t, m.taskMade("/srv/flops/work/tasks/12/output/a/b", fs.ErrPermission), errOverDisk)
	require.Equal(t, "output/a/b cannot be read by the worker", m.why)
	require.ErrorIs(t, m.taskMade("/srv/flops/work/tasks/12/output/d/d/d", syscall.ENAMETOOLONG), errOverDisk)
	require.Equal(t, "paths longer than the system allows (37 bytes and more)", m.why)
	require.ErrorIs(t, m.taskMade("/srv/x", syscall.EIO), syscall.EIO)
}
