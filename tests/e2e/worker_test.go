package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/testimage"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/outputs"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// TestWorkerEndToEnd runs three flops-worker daemons (mock GPUs, no NVML) against an
// in-process chain with real CometBFT and gRPC: two honest providers and one configured to
// cheat. It checks, on chain, what a user would see:
//
//	a) both honest nodes registered, bonded, and passed a PoCP challenge;
//	b) a BUILTIN GEMM job under ASSIGN and one under AUCTION settle, every task verified by
//	   sampling, and the owner fetches each task's manifest from the worker's output server
//	   with the result root the chain holds; then a batch of small GEMM tasks for the
//	   dispatch latency figures;
//	c) a worker killed mid-task loses the task after its heartbeat lapses, and the other
//	   worker resumes it from the checkpoint on chain and settles it;
//	d) the cheater's GEMM result does not verify: it cannot open its commitment, is slashed
//	   for it, and its collateral falls by exactly its slash records.
//
// Dispatch latency (the assigning block's time to the task's process start) is logged
// over every GEMM task that ran, not asserted.
func TestWorkerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process chain with worker daemons: skipped with -short")
	}
	if !config.CheatBuild {
		t.Skip("its cheating provider needs a test build: go test -tags flopscheat (make test uses it)")
	}
	image := testimage.Busybox(t) // and CONTAINERS_CONF for the workers' podman
	began := time.Now()
	wc := startWorkerChain(t, "client", "p1", "p2", "cheater")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	binaries(t, root) // flops-worker for its status command, built before any task runs
	ctx := context.Background()
	q := wc.client.Market

	// d) the cheater's job is queued before any node exists, so the cheater is assigned it
	// in the block it registers: before its own wrong PoCP answer jails it.
	cheatJob := wc.submitJob(t, gemmJob(markettypes.ALLOCATION_MODE_ASSIGN, 1, cheatRegion))

	p1 := wc.startWorker(t, "p1", honestRegion, nil)
	p2 := wc.startWorker(t, "p2", honestRegion, nil)
	cheater := wc.startWorker(t, "cheater", cheatRegion, func(c *config.Config) { c.Cheat = true })
	for _, w := range []*testWorker{p1, p2, cheater} {
		w.waitReady(t, wc, 2*time.Minute)
	}
	t.Logf("workers ready after %s", time.Since(began).Round(time.Second))

	// a) registered, bonded, challenged and passed
	for _, w := range []*testWorker{p1, p2} {
		n, err := wc.client.GFL.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: w.nodeID})
		require.NoError(t, err)
		require.Equal(t, gfltypes.NODE_STATUS_ACTIVE, n.Node.Status, w.name)
		require.Len(t, n.Node.Gpus, providerGPUs, w.name)
		c, err := wc.client.Collateral.Collateral(ctx, &sstypes.QueryCollateralRequest{Provider: w.addr.String()})
		require.NoError(t, err)
		require.Equal(t, sdkmath.NewInt(providerBond), c.Collateral.Bonded, "%s bonded", w.name)
	}
	passed := map[string]bool{}
	eventually(t, 90*time.Second, "both honest nodes passed a PoCP challenge", func() (bool, string) {
		for _, w := range []*testWorker{p1, p2} {
			res, err := wc.client.GFL.NodeStats(ctx, &gfltypes.QueryNodeStatsRequest{NodeId: w.nodeID})
			if err != nil {
				return false, err.Error()
			}
			// stats are per epoch: remember a pass seen before an epoch boundary
			passed[w.name] = passed[w.name] || res.Stats.Passed > 0
		}
		return passed["p1"] && passed["p2"], fmt.Sprint(passed)
	})
	t.Logf("a) PoCP passed by both after %s", time.Since(began).Round(time.Second))

	// b) ASSIGN and AUCTION GEMM jobs to settlement, outputs fetched by the owner
	assign := wc.submitJob(t, gemmJob(markettypes.ALLOCATION_MODE_ASSIGN, 2, honestRegion))
	auction := wc.submitJob(t, gemmJob(markettypes.ALLOCATION_MODE_AUCTION, 2, honestRegion))
	wc.waitJobCompleted(t, assign, 2*time.Minute)
	wc.waitJobCompleted(t, auction, 2*time.Minute)
	var ran []markettypes.Task
	for _, id := range []uint64{assign, auction} {
		tasks := wc.tasksOf(t, id)
		require.Len(t, tasks, 2)
		for _, tk := range tasks {
			require.Equal(t, markettypes.TASK_STATUS_SETTLED, tk.Status, "task %d", tk.Id)
			require.Len(t, tk.ResultRoot, 32, "task %d result root", tk.Id)
			require.Contains(t, []string{p1.addr.String(), p2.addr.String()}, tk.Provider)
			if id == auction {
				require.NotZero(t, tk.BidNode, "auction task %d was won by a bid", tk.Id)
			}
			m, err := outputs.FetchManifest(ctx, http.DefaultClient, baseURL(t, tk.OutputUri), tk.Id, wc.keys["client"])
			require.NoError(t, err, "owner fetches task %d's manifest", tk.Id)
			require.Equal(t, hex.EncodeToString(tk.ResultRoot), m.ResultRoot, "task %d: the served result root is the chain's", tk.Id)
			// only the owner may read it
			_, err = outputs.FetchManifest(ctx, http.DefaultClient, baseURL(t, tk.OutputUri), tk.Id, wc.keys["p1"])
			require.Error(t, err, "a stranger must not read task %d's outputs", tk.Id)
		}
		ran = append(ran, tasks...)
	}
	t.Logf("b) ASSIGN job %d and AUCTION job %d settled after %s", assign, auction, time.Since(began).Round(time.Second))
	checkRevokeSessions(t, wc, ran) // a dashboard's session key leaked: the owner ends its sessions

	// a batch of small tasks for the dispatch latency figures
	batch := wc.submitJob(t, gemmJob(markettypes.ALLOCATION_MODE_ASSIGN, 32, honestRegion))
	wc.waitJobCompleted(t, batch, 3*time.Minute)
	ran = append(ran, wc.tasksOf(t, batch)...)
	t.Logf("batch job %d settled after %s", batch, time.Since(began).Round(time.Second))
	for _, w := range []*testWorker{p1, p2} {
		require.Empty(t, w.logs.startedWithoutGPU(), "%s started tasks with no GPU pinned", w.name)
	}

	// e) a job whose command exits 2 on every machine: reported by one worker, confirmed by
	// the other; FAILED, both paid the confirmed time, neither slashed; the owner reads the
	// logs, live while a task runs (flops-worker logs --follow), and nobody else does
	slashesBefore := len(wc.slashes(t, p1.addr)) + len(wc.slashes(t, p2.addr))
	failing := wc.submitJob(t, processJob(`echo "starting"; echo "boom" >&2; exit 2`))
	eventually(t, 2*time.Minute, "the failing job ends FAILED", func() (bool, string) {
		res, err := q.Job(ctx, &markettypes.QueryJobRequest{JobId: failing})
		if err != nil {
			return false, err.Error()
		}
		return res.Job.Status == markettypes.JOB_STATUS_FAILED, res.Job.Status.String()
	})
	failed := wc.tasksOf(t, failing)[0]
	require.Len(t, failed.Failures, 2)
	for _, f := range failed.Failures {
		require.Equal(t, markettypes.FAILURE_STATUS_CONFIRMED, f.Status)
		require.Equal(t, int32(2), f.ExitCode)
		require.True(t, f.Paid.IsPositive())
	}
	require.NotEqual(t, failed.Failures[0].Provider, failed.Failures[1].Provider)
	require.Equal(t, slashesBefore, len(wc.slashes(t, p1.addr))+len(wc.slashes(t, p2.addr)), "nobody is slashed for the job's fault")
	reporter := wc.byAddress(failed.Failures[0].Provider)
	var stderr strings.Builder
	require.NoError(t, outputs.CopyLog(ctx, http.DefaultClient, wc.endpoint(t, reporter.nodeID), failed.Id, "stderr", wc.keys["client"], true, 100*time.Millisecond, &stderr))
	require.Equal(t, "boom\n", stderr.String(), "the owner reads the failed run's logs")
	t.Logf("e) failing job %d: FAILED, reports confirmed, logs read, after %s", failing, time.Since(began).Round(time.Second))

	chatty := wc.submitJob(t, processJob(`for i in 1 2 3 4 5 6; do echo "line $i"; sleep 1; done; echo done > "$FLOPS_OUTPUT_DIR/out"`))
	var runner *testWorker
	var chattyTask markettypes.Task
	eventually(t, time.Minute, "the chatty task runs", func() (bool, string) {
		chattyTask = wc.tasksOf(t, chatty)[0]
		runner = wc.byAddress(chattyTask.Provider)
		return chattyTask.Status == markettypes.TASK_STATUS_RUNNING, chattyTask.Status.String()
	})
	statusShown := checkWorkerStatus(t, runner, chattyTask.Id) // while the task runs
	drained := checkWorkerDrain(t, wc, runner)                 // its provider takes the machine down meanwhile
	var live syncBuffer
	followed := make(chan error, 1)
	go func() {
		followed <- outputs.CopyLog(ctx, http.DefaultClient, wc.endpoint(t, runner.nodeID), chattyTask.Id, "stdout", wc.keys["client"], true, 200*time.Millisecond, &live)
	}()
	eventually(t, 30*time.Second, "a line shown while the task runs", func() (bool, string) {
		return strings.Contains(live.String(), "line 1"), live.String()
	})
	require.NotContains(t, live.String(), "line 6", "shown before the task ended")
	require.NoError(t, <-followed)
	require.Equal(t, "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n", live.String())
	statusShown()
	drained() // and puts it back
	require.Zero(t, wc.tasksOf(t, chatty)[0].Reassignments, "the drained node's task ran to its end there")
	err = outputs.CopyLog(ctx, http.DefaultClient, wc.endpoint(t, runner.nodeID), chattyTask.Id, "stdout", wc.keys["p1"], false, time.Second, io.Discard)
	require.ErrorContains(t, err, "403", "nobody but the owner reads the logs")
	t.Logf("e) task %d's stdout followed live after %s", chattyTask.Id, time.Since(began).Round(time.Second))

	// f) a CONTAINER job on podman (a local busybox image, no registry) to settlement; its
	// worker restarted while the container runs re-attaches to it, and the same run ends
	ctr := processJob("")
	ctr.Runtime, ctr.Image = markettypes.RUNTIME_CONTAINER, image
	ctr.Command = []string{"/bin/sh", "-c", `echo begin; sleep 6; id -u > "$FLOPS_OUTPUT_DIR/uid"; echo "made in a container" > "$FLOPS_OUTPUT_DIR/result.txt"`}
	container := wc.submitJob(t, ctr)
	var host *testWorker
	var ctrTask markettypes.Task
	eventually(t, time.Minute, "the container task runs", func() (bool, string) {
		ctrTask = wc.tasksOf(t, container)[0]
		host = wc.byAddress(ctrTask.Provider)
		return ctrTask.Status == markettypes.TASK_STATUS_RUNNING, ctrTask.Status.String()
	})
	host.restart(t, wc)
	wc.waitJobCompleted(t, container, 2*time.Minute)
	ctrTask = wc.tasksOf(t, container)[0]
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, ctrTask.Status)
	require.Zero(t, ctrTask.Reassignments, "the restarted worker finished its own task")
	require.True(t, host.logs.adoptedTask(ctrTask.Id), "%s re-attached to task %d's container", host.name, ctrTask.Id)
	ctrDir := t.TempDir()
	_, err = outputs.Fetch(ctx, http.DefaultClient, baseURL(t, ctrTask.OutputUri), ctrTask.Id, wc.keys["client"], ctrDir, outputs.Committed{ResultRoot: ctrTask.ResultRoot})
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(ctrDir, "result.txt"))
	require.NoError(t, err)
	require.Equal(t, "made in a container\n", string(got))
	t.Logf("f) CONTAINER job %d settled through a restart of %s after %s", container, host.name, time.Since(began).Round(time.Second))

	// c) a worker killed mid-task; the other resumes from the checkpoint
	long := wc.submitJob(t, resumableJob())
	var cp markettypes.Checkpoint
	var victim *testWorker
	eventually(t, 90*time.Second, "the long task runs and its checkpoint is on chain", func() (bool, string) {
		tasks := wc.tasksOf(t, long)
		tk := tasks[0]
		if tk.Status != markettypes.TASK_STATUS_RUNNING || tk.Checkpoint.Sha256 == "" {
			return false, fmt.Sprintf("task %d %s checkpoint %q", tk.Id, tk.Status, tk.Checkpoint.Sha256)
		}
		cp = tk.Checkpoint
		victim = wc.byAddress(tk.Provider)
		return true, ""
	})
	survivor := p1
	if victim == p1 {
		survivor = p2
	}
	require.NotNil(t, victim)
	// the victim's own output server holds the checkpoint too (published there before its
	// upload): only the task's owner and its provider now read it, signed
	fetchCkpt := func(key cryptotypes.PrivKey) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, victim.outputs+"/v1/checkpoints/"+cp.Sha256, nil)
		require.NoError(t, err)
		if key != nil {
			require.NoError(t, outputs.SignRequest(req, key, time.Now()))
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusForbidden, fetchCkpt(wc.keys[survivor.name]), "another provider, not the task's")
	require.Equal(t, http.StatusOK, fetchCkpt(wc.keys[victim.name]), "the task's provider")
	require.Equal(t, http.StatusOK, fetchCkpt(wc.keys["client"]), "the job's owner")
	require.Equal(t, http.StatusUnauthorized, fetchCkpt(nil))
	longTask := wc.tasksOf(t, long)[0]
	t.Logf("c) killing %s while it runs task %d (checkpoint %s at height %d)", victim.name, longTask.Id, cp.Sha256, cp.Height)
	victim.stop(t)
	wc.waitJobCompleted(t, long, 2*time.Minute)
	longTask = wc.tasksOf(t, long)[0]
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, longTask.Status)
	require.Positive(t, longTask.Reassignments, "the task was reassigned")
	require.Equal(t, survivor.addr.String(), longTask.Provider, "the survivor took it over")
	require.Contains(t, longTask.ExcludedNodes, victim.nodeID)
	require.Equal(t, cp.Sha256, longTask.Checkpoint.Sha256, "the checkpoint the survivor resumed from")
	require.True(t, survivor.logs.resumedFrom(longTask.Id), "%s logged the resume of task %d", survivor.name, longTask.Id)
	dir := t.TempDir()
	_, err = outputs.Fetch(ctx, http.DefaultClient, baseURL(t, longTask.OutputUri), longTask.Id, wc.keys["client"], dir, outputs.Committed{ResultRoot: longTask.ResultRoot})
	require.NoError(t, err)
	got, err = os.ReadFile(filepath.Join(dir, "result.txt"))
	require.NoError(t, err)
	require.Equal(t, "resumed from step-1\n", string(got), "the run started from the checkpoint")
	m, err := outputs.FetchManifest(ctx, http.DefaultClient, baseURL(t, longTask.OutputUri), longTask.Id, wc.keys["client"])
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(longTask.ResultRoot), m.Root, "the fetched files are the settled result")
	abandoned := false
	for _, r := range wc.slashes(t, victim.addr) {
		abandoned = abandoned || (r.Reason == sstypes.SLASH_REASON_ABANDONED_TASK && r.Evidence.TaskId == longTask.Id)
	}
	require.True(t, abandoned, "%s was slashed for abandoning task %d", victim.name, longTask.Id)
	t.Logf("c) task %d resumed by %s and settled after %s", longTask.Id, survivor.name, time.Since(began).Round(time.Second))

	// d) the cheater is caught by the GEMM sampling and slashed
	cheatTask := wc.tasksOf(t, cheatJob)[0]
	var records []sstypes.SlashRecord
	eventually(t, 60*time.Second, "the cheater slashed for its task", func() (bool, string) {
		records = wc.slashes(t, cheater.addr)
		for _, r := range records {
			if r.Evidence.TaskId == cheatTask.Id {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d slash records", len(records))
	})
	mp, err := q.Params(ctx, &markettypes.QueryParamsRequest{})
	require.NoError(t, err)
	bonded := sdkmath.NewInt(providerBond)
	for _, r := range records { // ids ascend: replay them over the bond
		want := ppmOf(bonded, r.FractionPpm)
		require.Equal(t, want, r.Amount, "slash %d (%s): %d ppm of %s", r.Id, r.Reason, r.FractionPpm, bonded)
		if r.Evidence.TaskId == cheatTask.Id {
			require.Contains(t, []sstypes.SlashReason{sstypes.SLASH_REASON_MISSED_REVEAL, sstypes.SLASH_REASON_WRONG_RESULT}, r.Reason)
			require.GreaterOrEqual(t, r.FractionPpm, mp.Params.MissedRevealSlashPpm)
		}
		bonded = bonded.Sub(r.Amount)
		t.Logf("d) slash %d of the cheater: %s, %d ppm, %s udps (task %d, challenge %d)", r.Id, r.Reason, r.FractionPpm, r.Amount, r.Evidence.TaskId, r.Evidence.ChallengeId)
	}
	c, err := wc.client.Collateral.Collateral(ctx, &sstypes.QueryCollateralRequest{Provider: cheater.addr.String()})
	require.NoError(t, err)
	require.Equal(t, bonded, c.Collateral.Bonded, "the cheater's collateral fell by its slashes")
	require.True(t, c.Collateral.Bonded.LT(sdkmath.NewInt(providerBond)))
	cheatTask = wc.tasksOf(t, cheatJob)[0]
	require.NotEqual(t, markettypes.TASK_STATUS_SETTLED, cheatTask.Status, "a wrong result is never paid")
	t.Logf("d) cheater slashed %d times, collateral %s -> %s, after %s", len(records), sdkmath.NewInt(providerBond), c.Collateral.Bonded, time.Since(began).Round(time.Second))

	// dispatch latency over every GEMM task that ran here
	// Block times are BFT times: block h's time is when block h-1 was committed, so the
	// figure from h+1's time (when the assigning block was committed) is logged beside it.
	var lat, fromCommit []time.Duration
	for _, tk := range ran {
		if tk.Reassignments != 0 {
			continue // its first assignment's height is gone from the task
		}
		var started time.Time
		for _, w := range []*testWorker{p1, p2} {
			if at, ok := w.logs.started(tk.Id); ok {
				started = at
			}
		}
		if !started.IsZero() {
			lat = append(lat, started.Sub(wc.blockTime(t, tk.AssignedHeight)))
			fromCommit = append(fromCommit, started.Sub(wc.blockTime(t, tk.AssignedHeight+1)))
		}
	}
	require.NotEmpty(t, lat)
	for _, l := range [][]time.Duration{lat, fromCommit} {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
	t.Logf("dispatch latency, assigning block's time -> process start, %d tasks: median %s, p99 %s (min %s, max %s)",
		len(lat), quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 0), quantile(lat, 1))
	t.Logf("dispatch latency, assigning block's commit (next block's time) -> process start, %d tasks: median %s, p99 %s (min %s, max %s)",
		len(fromCommit), quantile(fromCommit, 0.5), quantile(fromCommit, 0.99), quantile(fromCommit, 0), quantile(fromCommit, 1))
	for _, w := range []*testWorker{p1, p2} {
		if w == victim {
			continue
		}
		if n, sum, ok := histogram(w.metrics+"/metrics", "flops_worker_dispatch_latency_seconds"); ok && n > 0 {
			t.Logf("%s telemetry: dispatch_latency_seconds count %d, mean %.3fs", w.name, n, sum/float64(n))
		}
	}
	t.Logf("end to end in %s", time.Since(began).Round(time.Second))
}

// gemmJob is a BUILTIN GEMM job of small products (n = 256, r = 1), verified by sampling.
func gemmJob(mode markettypes.AllocationMode, tasks uint32, region string) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, TaskCount: tasks, Replicas: 1,
		Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM, Requirements: markettypes.Requirements{Region: region},
		MaxPricePerTask: sdk.NewInt64Coin(app.BondDenom, 2_000_000), MaxDuration: 10 * time.Minute, Deadline: time.Now().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin(app.BondDenom, 0), Mode: mode, VerificationBudget: sdk.NewInt64Coin(app.BondDenom, 0),
	}
}

// resumeScript checkpoints "step-1" and then works for two minutes; started with a
// checkpoint in place it finishes at once, saying which checkpoint it resumed from.
const resumeScript = `set -e
for f in "$FLOPS_CHECKPOINT_DIR"/*; do
  if [ -f "$f" ]; then
    echo "resumed from $(cat "$f")" > "$FLOPS_OUTPUT_DIR/result.txt"
    exit 0
  fi
done
echo step-1 > "$FLOPS_CHECKPOINT_DIR/.state.tmp"
mv "$FLOPS_CHECKPOINT_DIR/.state.tmp" "$FLOPS_CHECKPOINT_DIR/state"
sleep 120
echo fresh > "$FLOPS_OUTPUT_DIR/result.txt"
`

// resumableJob is a PROCESS job long enough to be killed mid-run, with checkpoints.
// processJob is a one-task PROCESS job running script, for the honest workers.
func processJob(script string) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"sh", "-c", script},
		TaskCount: 1, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		Requirements:    markettypes.Requirements{Region: honestRegion},
		MaxPricePerTask: sdk.NewInt64Coin(app.BondDenom, 2_000_000), MaxDuration: 10 * time.Minute, Deadline: time.Now().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin(app.BondDenom, 0), Mode: markettypes.ALLOCATION_MODE_ASSIGN,
		VerificationBudget: sdk.NewInt64Coin(app.BondDenom, 0),
	}
}

// endpoint is a node's output server on chain.
func (wc *workerChain) endpoint(t *testing.T, node uint64) string {
	t.Helper()
	n, err := wc.client.GFL.Node(context.Background(), &gfltypes.QueryNodeRequest{NodeId: node})
	require.NoError(t, err)
	return n.Node.Endpoint
}

// syncBuffer is a strings.Builder for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func resumableJob() markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"sh", "-c", resumeScript},
		TaskCount: 1, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		Requirements:    markettypes.Requirements{Region: honestRegion},
		MaxPricePerTask: sdk.NewInt64Coin(app.BondDenom, 2_000_000), MaxDuration: 10 * time.Minute, Deadline: time.Now().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin(app.BondDenom, 0), Mode: markettypes.ALLOCATION_MODE_ASSIGN, CheckpointInterval: 5 * time.Second,
		VerificationBudget: sdk.NewInt64Coin(app.BondDenom, 0),
	}
}

func (wc *workerChain) waitJobCompleted(t *testing.T, id uint64, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("job %d completed", id), func() (bool, string) {
		res, err := wc.client.Market.Job(context.Background(), &markettypes.QueryJobRequest{JobId: id})
		if err != nil {
			return false, err.Error()
		}
		if res.Job.Status == markettypes.JOB_STATUS_COMPLETED {
			return true, ""
		}
		var states []string
		for _, tk := range wc.tasksOf(t, id) {
			states = append(states, fmt.Sprintf("%d:%s@%d", tk.Id, strings.TrimPrefix(tk.Status.String(), "TASK_STATUS_"), tk.NodeId))
		}
		return false, fmt.Sprintf("%s %v", res.Job.Status, states)
	})
}

func (wc *workerChain) tasksOf(t *testing.T, job uint64) []markettypes.Task {
	t.Helper()
	var out []markettypes.Task
	var key []byte
	for {
		res, err := wc.client.Market.TasksByJob(context.Background(), &markettypes.QueryTasksByJobRequest{JobId: job, Pagination: &query.PageRequest{Key: key, Limit: 100}})
		require.NoError(t, err)
		out = append(out, res.Tasks...)
		if res.Pagination == nil || len(res.Pagination.NextKey) == 0 {
			return out
		}
		key = res.Pagination.NextKey
	}
}

func (wc *workerChain) slashes(t *testing.T, provider sdk.AccAddress) []sstypes.SlashRecord {
	t.Helper()
	res, err := wc.client.Collateral.SlashHistory(context.Background(), &sstypes.QuerySlashHistoryRequest{Provider: provider.String(), Pagination: &query.PageRequest{Limit: 100}})
	require.NoError(t, err)
	out := res.Slashes
	sort.Slice(out, func(i, j int) bool { return out[i].Id < out[j].Id })
	return out
}

func (wc *workerChain) byAddress(addr string) *testWorker {
	for _, w := range wc.workers {
		if w.addr.String() == addr {
			return w
		}
	}
	return nil
}

// baseURL is the scheme and host of an output URI (.../v1/tasks/<id>/outputs).
func baseURL(t *testing.T, uri string) string {
	t.Helper()
	i := strings.Index(uri, "/v1/tasks/")
	require.Positive(t, i, "output uri %q", uri)
	return uri[:i]
}

// quantile is the nearest-rank q-quantile of sorted durations.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)].Round(time.Millisecond)
}

// histogram reads a Prometheus histogram's count and sum from a /metrics page.
func histogram(url, name string) (uint64, float64, bool) {
	res, err := http.Get(url) //nolint:gosec // the test's own telemetry server
	if err != nil {
		return 0, 0, false
	}
	defer func() { _ = res.Body.Close() }()
	var n uint64
	var sum float64
	var okN, okS bool
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, name+"_count "):
			_, err := fmt.Sscanf(line, name+"_count %d", &n)
			okN = err == nil
		case strings.HasPrefix(line, name+"_sum "):
			_, err := fmt.Sscanf(line, name+"_sum %g", &sum)
			okS = err == nil
		}
	}
	return n, sum, okN && okS
}
