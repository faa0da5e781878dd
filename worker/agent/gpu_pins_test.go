package agent_test

import (
	"context"
	"crypto/sha256"
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
	"golang.org/x/sync/errgroup"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/telemetry"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// unitsRig is a worker on two mock GPUs in a pool, its runs beside the test's blocks
// (step), computing the pool's two units, one GPU each, until release exists; seen holds a
// line per run ("unit <GPU>", and whatever the test's jobs write).
type unitsRig struct {
	t             *testing.T
	a             *apptest.App
	mu            *sync.Mutex
	w             *worker
	metrics       *telemetry.Metrics
	ctx           context.Context
	seen, release string
}

func newUnitsRig(t *testing.T) *unitsRig {
	a := appWithProviders(t, "p1")
	r := &unitsRig{t: t, a: a, mu: new(sync.Mutex), metrics: telemetry.New(telemetry.WithoutRuntimeCollectors())}
	r.w = newWorkerOn(t, r.mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{beside: true, metrics: r.metrics}, func(c *config.Config) {
		c.Pools.Auto, c.Pools.MaxClaims = true, 2
	})
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx = ctx
	var g errgroup.Group
	r.w.agent.RunBeside(&g)
	t.Cleanup(func() { cancel(); _ = g.Wait() })
	dir := t.TempDir()
	r.seen, r.release = filepath.Join(dir, "seen"), filepath.Join(dir, "release")

	content := []byte("unit input")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(content) }))
	t.Cleanup(srv.Close)
	unit := markettypes.Input{Uri: srv.URL + "/unit", Sha256: fmt.Sprintf("%x", sha256.Sum256(content)), Path: "in/unit"}
	owner := a.Account("client").String()
	r.locked(func() {
		a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: markettypes.PoolSpec{
			Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_PROCESS,
			Command:      []string{"sh", "-c", `echo "unit $CUDA_VISIBLE_DEVICES" >> "$SEEN"; while [ ! -e "$RELEASE" ]; do sleep 0.05; done; echo ok > "$FLOPS_OUTPUT_DIR/out"`},
			Env:          []markettypes.EnvVar{{Name: "SEEN", Value: r.seen}, {Name: "RELEASE", Value: r.release}},
			Requirements: markettypes.Requirements{GpuCount: 1}, Verification: markettypes.VERIFICATION_CLASS_NONE,
			UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 2,
			UnitMaxDuration: time.Minute,
		}})
		a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: 1, Units: []markettypes.Input{unit, unit}})
	})
	r.waitFor("both units computing", 20, func() bool { return len(r.lines()) == 2 })
	return r
}

// locked runs fn holding the test's mutex (the worker's runs read the app beside it).
func (r *unitsRig) locked(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn()
}

// step runs one block and the worker's tick on it.
func (r *unitsRig) step() {
	r.mu.Lock()
	r.a.NextBlock()
	h, bt := r.a.Height(), r.a.BlockTime()
	r.mu.Unlock()
	require.NoError(r.t, r.w.agent.Tick(r.ctx, h, bt))
}

// waitFor steps blocks, at most blocks, until done (given up to 2 s after each for the
// runs beside).
func (r *unitsRig) waitFor(what string, blocks int, done func() bool) {
	r.t.Helper()
	for i := 0; !done(); i++ {
		require.Less(r.t, i, blocks, what)
		r.step()
		for deadline := time.Now().Add(2 * time.Second); !done() && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// lines are seen's lines.
func (r *unitsRig) lines() []string {
	b, err := os.ReadFile(r.seen)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(r.t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// waiting is the worker's flops_worker_tasks_waiting_for_gpus.
func (r *unitsRig) waiting() float64 {
	families, err := r.metrics.Registry().Gather()
	require.NoError(r.t, err)
	for _, f := range families {
		if f.GetName() == "flops_worker_tasks_waiting_for_gpus" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	r.t.Fatal("no flops_worker_tasks_waiting_for_gpus")
	return 0
}

// A worker in a pool computes two units, one GPU each, on both GPUs of its machine when
// the chain gives its node a task of two GPUs (the chain does not count a pool's units on
// the node's GPUs, so it has them free). The units give their GPUs up, the task waits,
// unacked, until they have, and runs on the two GPUs; no unit is claimed while it runs,
// and the units are computed and paid once it is done. Before, the task ran on the GPUs
// that were free: none.
func TestWorkerGivesUpPoolUnitsForATasksGPUs(t *testing.T) {
	r := newUnitsRig(t)
	a, lines, waitFor := r.a, r.lines, r.waitFor
	spec := seenJob(a, r.seen, "task", 1)
	spec.Requirements.GpuCount = 2
	spec.MaxPricePerTask = sdk.NewInt64Coin("udps", 100_000_000)
	var j markettypes.Job
	r.locked(func() { j = job(t, a, spec) })
	r.step()
	require.Equal(t, 1.0, r.waiting(), "the task waits while the units give its GPUs up")
	waitFor("the task ran", 20, func() bool { return len(lines()) == 3 })
	require.Zero(t, r.waiting())
	ran := lines()[2]
	require.Regexp(t, `^task [^,\s]+,[^,\s]+$`, ran, "the task ran on both GPUs")
	gpus := strings.Split(strings.TrimPrefix(ran, "task "), ",")
	for _, u := range lines()[:2] {
		require.Contains(t, gpus, strings.TrimPrefix(u, "unit "), "a unit had one of them")
	}

	require.NoError(t, os.WriteFile(r.release, nil, 0o600))
	q := markettypesQuery(a)
	waitFor("the job completed and both units paid", 60, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		pool, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: 1})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED && pool.Pool.PaidUnits == 2
	})
	after := lines()[3:]
	require.Len(t, after, 2, "each unit computed again, once the task was done")
	for _, l := range after {
		require.Regexp(t, `^unit [^,\s]+$`, l, "on a GPU of its own")
	}
	r.locked(a.AssertInvariants)
}

// The same worker, its two GPUs held by pool units, bids on an auction of a task of two
// GPUs: the units would give them up for the task. Before, the bidder counted the units'
// GPUs as used, and the node made no bid while it computed pool units.
func TestWorkerBidsWithTheGPUsItsPoolUnitsHold(t *testing.T) {
	r := newUnitsRig(t)
	spec := gemmSpec(r.a, markettypes.ALLOCATION_MODE_AUCTION)
	spec.TaskCount, spec.Requirements.GpuCount = 1, 2
	spec.MaxPricePerTask = sdk.NewInt64Coin("udps", 100_000_000)
	var j markettypes.Job
	r.locked(func() { j = job(t, r.a, spec) })
	r.waitFor("a bid on the auction", 5, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return bidsOn(t, r.a, j.Id) > 0
	})
	require.Len(t, r.lines(), 2, "the units still compute")
	require.NoError(t, os.WriteFile(r.release, nil, 0o600))
}
