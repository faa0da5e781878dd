package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/outputs"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

func processSpec(a interface{ BlockTime() time.Time }, script string, env ...markettypes.EnvVar) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS,
		Command: []string{"sh", "-c", script}, Env: env, TaskCount: 1, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin("udps", 2_000_000), MaxDuration: 10 * time.Minute, Deadline: a.BlockTime().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin("udps", 0), Mode: markettypes.ALLOCATION_MODE_ASSIGN, VerificationBudget: sdk.NewInt64Coin("udps", 0),
	}
}

// exact makes spec verified EXACT, with a verification budget for runs more runs at its
// max price (an audit, a committee's members).
func exact(spec markettypes.JobSpec, runs int64) markettypes.JobSpec {
	spec.Verification = markettypes.VERIFICATION_CLASS_EXACT
	spec.VerificationBudget = sdk.NewCoin("udps", spec.MaxPricePerTask.Amount.MulRaw(runs))
	return spec
}

func slashCount(t *testing.T, a interface {
	Ctx() sdk.Context
}, q sstypes.QueryClient, addr sdk.AccAddress) int {
	res, err := q.SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: addr.String()})
	require.NoError(t, err)
	return len(res.Slashes)
}

// A PROCESS job whose command exits 2 on every machine: each worker reports the failure
// with the root of its captured logs; the second report, from the other operator,
// confirms the first. The job ends FAILED, both providers are paid the confirmed time and
// neither is slashed; the owner can read the logs the root names.
func TestWorkersReportAFailingJob(t *testing.T) {
	a := appWithProviders(t, "p1", "p2")
	var mu sync.Mutex
	w1, w2 := newWorker(t, &mu, a, "p1", nil), newWorker(t, &mu, a, "p2", nil)
	j := job(t, a, processSpec(a, `echo "starting"; echo "boom" >&2; exit 2`))
	q := markettypesQuery(a)
	until(t, a, 60, "job failed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_FAILED
	}, w1, w2)
	fs := confirmedByBoth(t, a, 1)
	for _, f := range fs {
		require.Equal(t, markettypes.FAILURE_REASON_EXIT, f.Reason)
		require.Equal(t, int32(2), f.ExitCode)
		require.Equal(t, "command exited with code 2", f.Detail)
		require.True(t, f.Paid.IsPositive(), "paid the confirmed time")
	}
	require.Equal(t, fs[0].LogRoot, fs[1].LogRoot, "the same job writes the same logs everywhere")
	// the owner reads the logs the root names, from the machine that reported first
	w := w1
	if fs[0].Provider == a.Account("p2").String() {
		w = w2
	}
	f, _, err := w.store.OpenFile(1, ".flops/stderr.log")
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 64)
	n, _ := f.Read(b)
	require.Equal(t, "boom\n", string(b[:n]))
}

// A job that fills its provider's disk: it writes up to 3 GiB where the chain lets a
// task fill 1 GiB per GPU (task_disk_mib_per_gpu at its minimum), then waits out its
// max_duration. Each worker stops it at that limit, not its max_duration, and reports
// FAILURE_REASON_DISK; the second report, from the other operator, confirms the first:
// the job ends FAILED and neither provider is slashed. Without the limit the first
// machine holds the whole 3 GiB and the task runs on for its 10 minutes.
func TestAttackJobFillsTheProvidersDisk(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1", "p2"}, func(m *markettypes.Params) { m.TaskDiskMibPerGpu = markettypes.MinTaskDiskMiBPerGPU })
	var mu sync.Mutex
	w1, w2 := newWorker(t, &mu, a, "p1", nil), newWorker(t, &mu, a, "p2", nil)
	j := job(t, a, processSpec(a, `i=0; while [ $i -lt 48 ]; do dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/fill.$i" bs=1M count=64 2>/dev/null; i=$((i+1)); done; sleep 600`))
	require.True(t, failsWithinAMinute(t, a, j.Id, w1, w2), "the job failed on both machines within a minute")
	for _, f := range confirmedByBoth(t, a, 1) {
		require.Equal(t, markettypes.FAILURE_REASON_DISK, f.Reason)
		require.Contains(t, f.Detail, "more than 1073741824 bytes of disk")
	}
}

// A worker whose work directory cannot hold what its tasks may fill (the chain's
// task_disk_mib_per_gpu for each of its GPUs) says so when it starts: there a job that
// stays within its disk would fail on a full disk, and the report be refuted. One with
// the room says nothing.
func TestWorkerWarnsOfAWorkDirTooSmallForItsTasks(t *testing.T) {
	free, err := executor.FreeSpace(t.TempDir())
	require.NoError(t, err)
	for _, c := range []struct {
		perGPU uint64
		warns  bool
	}{
		{markettypes.MaxTaskDiskMiBPerGPU, free < 2*markettypes.MaxTaskDiskMiBPerGPU<<20},
		{markettypes.MinTaskDiskMiBPerGPU, free < 2*markettypes.MinTaskDiskMiBPerGPU<<20},
	} {
		a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) { m.TaskDiskMibPerGpu = c.perGPU })
		var logs strings.Builder
		var mu sync.Mutex
		newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{log: &logs}, nil)
		warned := strings.Contains(logs.String(), "the work directory has less free space than the tasks this machine may run can fill")
		require.Equal(t, c.warns, warned, "%d MiB per GPU x 2 GPUs, %d bytes free", c.perGPU, free)
		if warned {
			require.Contains(t, logs.String(), fmt.Sprintf("tasks_may_fill_bytes=%d", 2*c.perGPU<<20))
		}
	}
}

// failsWithinAMinute ticks the workers every 100 ms (runs that take the time of their
// writes) until the job has FAILED, for at most a minute, and says whether it did.
func failsWithinAMinute(t *testing.T, a *apptest.App, jobID uint64, ws ...*worker) bool {
	t.Helper()
	failed := func() bool {
		res, err := markettypesQuery(a).Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: jobID})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_FAILED
	}
	for deadline := time.Now().Add(time.Minute); !failed() && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		tick(t, a, ws...)
	}
	return failed()
}

// confirmedByBoth is a task's two failure reports, from p1's and p2's runs, the second
// confirming the first; neither provider is slashed.
func confirmedByBoth(t *testing.T, a *apptest.App, taskID uint64) []markettypes.FailureReport {
	t.Helper()
	task, err := markettypesQuery(a).Task(a.Ctx(), &markettypes.QueryTaskRequest{TaskId: taskID})
	require.NoError(t, err)
	fs := task.Task.Failures
	require.Len(t, fs, 2)
	require.NotEqual(t, fs[0].Provider, fs[1].Provider)
	for _, f := range fs {
		require.Equal(t, markettypes.FAILURE_STATUS_CONFIRMED, f.Status)
	}
	ss := sstypes.NewQueryClient(a.QueryConn())
	require.Zero(t, slashCount(t, a, ss, a.Account("p1").Address))
	require.Zero(t, slashCount(t, a, ss, a.Account("p2").Address))
	return fs
}

// A job that fails on the first machine only (a broken node; here the first run leaves a
// mark and fails, every later run succeeds): the first worker reports the failure, the
// task is reassigned and succeeds on another operator's machine, its result audited (as
// every result that would refute a report is) by a third run that agrees, and the report
// is refuted: its provider is slashed, the owner pays only the runs that succeeded. (A
// NONE job's result verifies nothing, and refutes no report: TestWiredAttackMadeUpResultOnANoneJob.)
func TestWorkersFailureOnOneNodeOnlyIsRefuted(t *testing.T) {
	a := appWithProviders(t, "p1", "p2", "p3")
	var mu sync.Mutex
	w1, w2, w3 := newWorker(t, &mu, a, "p1", nil), newWorker(t, &mu, a, "p2", nil), newWorker(t, &mu, a, "p3", nil)
	mark := filepath.Join(t.TempDir(), "broken-once")
	j := job(t, a, exact(processSpec(a, `if [ ! -e "$MARK" ]; then touch "$MARK"; exit 3; fi; echo ok > "$FLOPS_OUTPUT_DIR/out"`,
		markettypes.EnvVar{Name: "MARK", Value: mark}), 4))
	q := markettypesQuery(a)
	until(t, a, 80, "job completed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w1, w2, w3)
	task, err := q.Task(a.Ctx(), &markettypes.QueryTaskRequest{TaskId: 1})
	require.NoError(t, err)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, task.Task.Status)
	fs := task.Task.Failures
	require.Len(t, fs, 1)
	require.Equal(t, markettypes.FAILURE_STATUS_REFUTED, fs[0].Status)
	require.Equal(t, int32(3), fs[0].ExitCode)
	require.NotEqual(t, fs[0].Provider, task.Task.Provider)
	ss := sstypes.NewQueryClient(a.QueryConn())
	liar := sdk.MustAccAddressFromBech32(fs[0].Provider)
	res, err := ss.SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: liar.String()})
	require.NoError(t, err)
	require.Len(t, res.Slashes, 1)
	require.Equal(t, sstypes.SLASH_REASON_FALSE_FAILURE, res.Slashes[0].Reason)
	require.True(t, task.Task.Paid.IsPositive())
	tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
	require.NoError(t, err)
	var audits []markettypes.Task
	for _, tk := range tasks.Tasks {
		if tk.Role == markettypes.TASK_ROLE_AUDIT {
			audits = append(audits, tk)
		}
	}
	require.Len(t, audits, 1, "the result that refutes the report is audited")
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, audits[0].Status)
}

// A running task writes its progress to FLOPS_PROGRESS_FILE; the worker carries it to
// the chain in its heartbeat, and the task shows it (q market tasks).
func TestWorkerCarriesProgressToTheChain(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "p1"), apptest.WithGenesis(apptest.SmallPoCP(60*time.Second)),
		apptest.WithGenesis(func(e apptest.GenesisEditor) {
			var g gfltypes.GenesisState
			e.Edit(gfltypes.ModuleName, &g, func() {
				g.Params.ChallengeIntervalBlocks = 30
				g.Params.ChallengeRevealBlocks = 40
			})
			var m markettypes.GenesisState
			e.Edit(markettypes.ModuleName, &m, func() {
				m.Params.ChallengeWindowBlocks = 3
				// a heartbeat every block: the run ends inside the tick that starts it here
				m.Params.HeartbeatTimeoutBlocks = 3
			})
		}))
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	j := job(t, a, processSpec(a, `echo "step 1/10" > "$FLOPS_PROGRESS_FILE"; echo "step 7/10" >> "$FLOPS_PROGRESS_FILE"; echo ok > "$FLOPS_OUTPUT_DIR/out"`))
	q := markettypesQuery(a)
	until(t, a, 60, "job completed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w)
	res, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
	require.NoError(t, err)
	require.Equal(t, "step 7/10", res.Tasks[0].Progress, "the last line, carried by a heartbeat while the task ran")
	require.Positive(t, res.Tasks[0].ProgressHeight)
}

// A checkpoint the task swapped for a link to one of the worker's files after it was
// hashed is not published: the key would be served to whoever resumes the task.
func TestAttackCheckpointLinkedToTheWorkerKey(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte("PRIVATE KEY"), 0o600))
	sum := sha256.Sum256([]byte("PRIVATE KEY"))
	ckpt := filepath.Join(dir, "checkpoint", "step-1")
	require.NoError(t, os.MkdirAll(filepath.Dir(ckpt), 0o755))
	require.NoError(t, os.Symlink(key, ckpt))
	store, err := outputs.Open(filepath.Join(dir, "outputs"))
	require.NoError(t, err)
	p := &agent.LocalPublisher{Store: store, BaseURL: "https://n.example", Dir: filepath.Join(dir, "published")}
	_, err = p.PublishCheckpoint(context.Background(), 1, executor.Checkpoint{SHA256: hex.EncodeToString(sum[:]), Path: ckpt})
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(dir, "published", hex.EncodeToString(sum[:])))
	require.True(t, os.IsNotExist(err), "nothing published")
}
