package integration

import (
	"context"
	"strings"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	"github.com/cosmos/cosmos-sdk/types/query"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The node's metrics follow a job through the wired app: the counters count the block's
// events (submitted, assigned, settled, paid), the gauges read the state (jobs by status,
// escrow, collateral, the reward pool, the GFL index) and equal what the keepers hold.
func TestNodeMetricsFollowAJob(t *testing.T) {
	a, nodes := marketApp(t, nil)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(a.Metrics()))
	gauge := func(name string, labels ...string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
		metrics:
			for _, m := range mf.GetMetric() {
				for i := 0; i+1 < len(labels); i += 2 {
					found := false
					for _, l := range m.GetLabel() {
						if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
							found = true
						}
					}
					if !found {
						continue metrics
					}
				}
				if m.GetGauge() != nil {
					return m.GetGauge().GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no metric %s %v", name, labels)
		return 0
	}
	// every metric has help text and a valid name (the pedantic registry checks them)
	_, err := reg.Gather()
	require.NoError(t, err)

	assigned := gauge("flops_market_tasks_assigned_total")
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job := submit(t, a, spec)
	require.Equal(t, 1.0, gauge("flops_market_jobs_submitted_total"))
	require.Equal(t, assigned+1, gauge("flops_market_tasks_assigned_total"))
	require.Equal(t, 1.0, gauge("flops_market_jobs", "status", "JOB_STATUS_ACTIVE"))
	require.Equal(t, 0.0, gauge("flops_market_jobs", "status", "JOB_STATUS_COMPLETED"))
	escrow := a.ModuleBalance(markettypes.ModuleName, udps)
	require.Equal(t, float64(escrow.Int64()), gauge("flops_market_escrow_udps"))
	require.Positive(t, escrow.Int64())

	tasks := jobTasks(t, a, job)
	// the schedulable nodes of the assigned node's class: one loaded, the others idle
	busy, err := a.MarketKeeper.Slots.Get(a.Ctx(), tasks[0].NodeId)
	require.NoError(t, err)
	inClass := 0
	require.NoError(t, a.MarketKeeper.Slots.Walk(a.Ctx(), nil, func(_ uint64, s markettypes.NodeSlot) (bool, error) {
		if s.Active && s.GpuClass == busy.GpuClass {
			inClass++
		}
		return false, nil
	}))
	require.Positive(t, inClass)
	require.Equal(t, 1.0, gauge("flops_market_schedulable_nodes", "gpu_class", busy.GpuClass, "load", "loaded"))
	require.Equal(t, float64(inClass-1), gauge("flops_market_schedulable_nodes", "gpu_class", busy.GpuClass, "load", "idle"))
	run(t, a, nodes, tasks[0])
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	a.NextBlocks(int(p.ChallengeWindowBlocks))
	task, err := a.MarketKeeper.GetTask(a.Ctx(), tasks[0].Id)
	require.NoError(t, err)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, task.Status)

	require.Equal(t, 1.0, gauge("flops_market_tasks_settled_total"))
	gross := task.Price.Add(spec.PriorityTip.Amount)
	take := gross.MulRaw(int64(p.TakeRatePpm)).QuoRaw(1e6)
	require.Equal(t, float64(gross.Sub(take).Int64()), gauge("flops_market_task_payments_udps_total"), "the provider's pay")
	require.Equal(t, 1.0, gauge("flops_market_jobs_finished_total", "status", "JOB_STATUS_COMPLETED"))
	require.Equal(t, 1.0, gauge("flops_market_jobs", "status", "JOB_STATUS_COMPLETED"))
	require.Equal(t, 0.0, gauge("flops_market_jobs", "status", "JOB_STATUS_ACTIVE"))
	require.Equal(t, float64(a.ModuleBalance(markettypes.ModuleName, udps).Int64()), gauge("flops_market_escrow_udps"))

	bonded, err := a.StakingSlashKeeper.TotalBonded.Get(a.Ctx())
	require.NoError(t, err)
	require.Positive(t, bonded.Int64())
	require.Equal(t, float64(bonded.Int64()), gauge("flops_stakingslash_collateral_bonded_udps"))
	pool := a.Balance(authtypes.NewModuleAddress(dpstypes.ModuleName), udps)
	require.Equal(t, float64(pool.Int64()), gauge("flops_dps_reward_pool_udps"))
	supply := a.BankKeeper.GetSupply(a.Ctx(), "ugfl").Amount
	require.Equal(t, float64(supply.Int64()), gauge("flops_gfl_network_gflops"))
	require.Equal(t, float64(len(nodes)), gauge("flops_gfl_nodes", "status", "NODE_STATUS_ACTIVE"))
	require.Equal(t, 0.0, gauge("flops_market_schedulable_nodes", "gpu_class", busy.GpuClass, "load", "loaded"), "the task settled")
	require.Equal(t, float64(inClass), gauge("flops_market_schedulable_nodes", "gpu_class", busy.GpuClass, "load", "idle"))
	require.Equal(t, float64(a.Height()), gauge("flops_state_height"))
	require.Equal(t, 0.0, gauge("flops_state_read_failures_total"))

	// the text exposition Prometheus scrapes
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Greater(t, n, 20)
}

// TestMetricsScrapeIsNotHeldToTheQueryGasLimit: the metrics' gauges count every node by
// status through a query context, and a query context's gas meter stops at the node's
// query-gas-limit with a panic. In a scrape (Collect, on the Prometheus handler's
// goroutines) that panic would end the node once its nodes (or, before the job counts of
// store version 9, its jobs) outnumbered what one query may read: about 700,000 at
// chain.DefaultQueryGasLimit, here 1,000 at a limit of 20,000. The scrape is the
// operator's own read: the same count asked as a query is refused, and the scrape still
// counts every node, and every job from the market's counts.
func TestMetricsScrapeIsNotHeldToTheQueryGasLimit(t *testing.T) {
	const n = 1000
	a := apptest.New(t, apptest.WithAccounts("client", "op"), apptest.WithQueryGasLimit(20_000))
	owner, op := a.Account("client").Address.String(), a.Account("op").Address.String()
	a.Prepare(func(ctx sdk.Context) {
		for id := uint64(1); id <= n; id++ {
			require.NoError(t, a.MarketKeeper.Jobs.Set(ctx, id, markettypes.Job{Id: id, Owner: owner, Status: markettypes.JOB_STATUS_ACTIVE}))
			require.NoError(t, a.MarketKeeper.JobSpecs.Set(ctx, id, markettypes.JobSpec{}))
			require.NoError(t, a.GFLKeeper.Nodes.Set(ctx, id, gfltypes.Node{Id: id, Operator: op, Status: gfltypes.NODE_STATUS_ACTIVE, GpuClass: "A100-40GB"}))
		}
		// as n submissions leave the ids (the jobs above the job counts' next_job_id are
		// counted as active)
		_, nextTask, err := a.MarketKeeper.PeekIDs(ctx)
		require.NoError(t, err)
		require.NoError(t, a.MarketKeeper.IDs.Set(ctx, collections.Join(uint64(n+1), nextTask)))
	})
	a.NextBlock()

	// as a query, the count is over the limit
	bz, err := (&gfltypes.QueryNodesByStatusRequest{Status: gfltypes.NODE_STATUS_ACTIVE, Pagination: &query.PageRequest{Limit: 1, CountTotal: true}}).Marshal()
	require.NoError(t, err)
	res, err := a.Query(context.Background(), &abci.RequestQuery{Path: "/flops.gfl.v1.Query/NodesByStatus", Data: bz})
	require.NoError(t, err)
	require.Equal(t, sdkerrors.ErrPanic.ABCICode(), res.Code, "the count as a query: %s", res.Log)

	// a scrape, on this goroutine so that a panic fails the test instead of ending it
	ch := make(chan prometheus.Metric, 256)
	require.NotPanics(t, func() { a.Metrics().Collect(ch) }, "a scrape")
	close(ch)
	active, nodes, failures := -1.0, -1.0, -1.0
	labelled := func(d *dto.Metric, value string) bool {
		for _, l := range d.GetLabel() {
			if l.GetName() == "status" && l.GetValue() == value {
				return true
			}
		}
		return false
	}
	for m := range ch {
		var d dto.Metric
		require.NoError(t, m.Write(&d))
		switch desc := m.Desc().String(); {
		case strings.Contains(desc, `"flops_market_jobs"`) && labelled(&d, markettypes.JOB_STATUS_ACTIVE.String()):
			active = d.GetGauge().GetValue()
		case strings.Contains(desc, `"flops_gfl_nodes"`) && labelled(&d, gfltypes.NODE_STATUS_ACTIVE.String()):
			nodes = d.GetGauge().GetValue()
		case strings.Contains(desc, `"flops_state_read_failures_total"`):
			failures = d.GetCounter().GetValue()
		}
	}
	require.Equal(t, float64(n), nodes, "active nodes counted by the scrape")
	require.Equal(t, float64(n), active, "active jobs, from the job counts")
	require.Zero(t, failures, "scrapes whose state could not be read")
}
