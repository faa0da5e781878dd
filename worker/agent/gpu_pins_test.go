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

	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/telemetry"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A worker in a pool computes two units, one GPU each, on both GPUs of its machine when
// the chain gives its node a task of two GPUs (the chain does not count a pool's units on
// the node's GPUs, so it has them free). The units give their GPUs up, the task waits,
// unacked, until they have, and runs on the two GPUs; no unit is claimed while it runs,
// and the units are computed and paid once it is done. Before, the task ran on the GPUs
// that were free: none.
func TestWorkerGivesUpPoolUnitsForATasksGPUs(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	metrics := telemetry.New(telemetry.WithoutRuntimeCollectors())
	waiting := func() float64 {
		families, err := metrics.Registry().Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == "flops_worker_tasks_waiting_for_gpus" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no flops_worker_tasks_waiting_for_gpus")
		return 0
	}
	w := newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{beside: true, metrics: metrics}, func(c *config.Config) {
		c.Pools.Auto, c.Pools.MaxClaims = true, 2
	})
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	w.agent.RunBeside(&g)
	t.Cleanup(func() { cancel(); _ = g.Wait() })
	step := func() {
		mu.Lock()
		a.NextBlock()
		h, bt := a.Height(), a.BlockTime()
		mu.Unlock()
		require.NoError(t, w.agent.Tick(ctx, h, bt))
	}
	dir := t.TempDir()
	seen, release := filepath.Join(dir, "seen"), filepath.Join(dir, "release")
	lines := func() []string {
		b, err := os.ReadFile(seen)
		if os.IsNotExist(err) {
			return nil
		}
		require.NoError(t, err)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	waitFor := func(what string, blocks int, done func() bool) {
		t.Helper()
		for i := 0; !done(); i++ {
			require.Less(t, i, blocks, what)
			step()
			for deadline := time.Now().Add(2 * time.Second); !done() && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}

	// the pool's units run until the test lets them end
	content := []byte("unit input")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(content) }))
	defer srv.Close()
	unit := markettypes.Input{Uri: srv.URL + "/unit", Sha256: fmt.Sprintf("%x", sha256.Sum256(content)), Path: "in/unit"}
	owner := a.Account("client").String()
	mu.Lock()
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_PROCESS,
		Command:      []string{"sh", "-c", `echo "unit $CUDA_VISIBLE_DEVICES" >> "$SEEN"; while [ ! -e "$RELEASE" ]; do sleep 0.05; done; echo ok > "$FLOPS_OUTPUT_DIR/out"`},
		Env:          []markettypes.EnvVar{{Name: "SEEN", Value: seen}, {Name: "RELEASE", Value: release}},
		Requirements: markettypes.Requirements{GpuCount: 1}, Verification: markettypes.VERIFICATION_CLASS_NONE,
		UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 2,
		UnitMaxDuration: time.Minute,
	}})
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: 1, Units: []markettypes.Input{unit, unit}})
	mu.Unlock()
	waitFor("both units computing", 20, func() bool { return len(lines()) == 2 })

	spec := seenJob(a, seen, "task", 1)
	spec.Requirements.GpuCount = 2
	spec.MaxPricePerTask = sdk.NewInt64Coin("udps", 100_000_000)
	mu.Lock()
	j := job(t, a, spec)
	mu.Unlock()
	step()
	require.Equal(t, 1.0, waiting(), "the task waits while the units give its GPUs up")
	waitFor("the task ran", 20, func() bool { return len(lines()) == 3 })
	require.Zero(t, waiting())
	ran := lines()[2]
	require.Regexp(t, `^task [^,\s]+,[^,\s]+$`, ran, "the task ran on both GPUs")
	gpus := strings.Split(strings.TrimPrefix(ran, "task "), ",")
	for _, u := range lines()[:2] {
		require.Contains(t, gpus, strings.TrimPrefix(u, "unit "), "a unit had one of them")
	}

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	q := markettypesQuery(a)
	waitFor("the job completed and both units paid", 60, func() bool {
		mu.Lock()
		defer mu.Unlock()
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
	mu.Lock()
	defer mu.Unlock()
	a.AssertInvariants()
}
