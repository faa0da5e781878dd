package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// TestAttackNodeBelowItsClassFloorGetsNoClassJobs (issue 20: an account with no GPU
// registered "2 x A100-40GB" and was matched to A100 jobs): a node's GPU class is what
// its inventory's model names say, the operator's word, until PoCP measures it. Here the
// class table carries the launch table with H200's floor at test scale (6 GFLOP/s a GPU:
// the provers are this test's CPU), "honest" measures about 8 and "mallory", registered
// as an H200 too, about 3. A node of a class with a floor takes no job until a verified
// sample shows it within the class: honest is scheduled after its first challenge,
// mallory never (a job of its region waits). At the epoch's rebalance mallory is measured
// into no class (no class of the table holds 3 GFLOP/s with 140 GiB a GPU), and its power
// counts for no class's workload factor (x/gfl's TestAttackCPURegisteredAsA100); honest's
// node is untouched. Before, mallory took H200 jobs from its registration on.
func TestAttackNodeBelowItsClassFloorGetsNoClassJobs(t *testing.T) {
	a := incentiveApp(t, 20, 20_000, "client", "honest", "mallory")
	setGFLParams(t, a, func(p *gfltypes.Params) {
		p.GpuClasses = gfltypes.DefaultGpuClasses()
		p.GpuClasses[0].MinGflopsPerGpu = 6 // H200-141GB
	})
	honest := registerNode(t, a, "honest", h200Spec("honest", "eu-west", 1, 8), 0)
	mallory := registerNode(t, a, "mallory", h200Spec("mallory", "us-east", 1, 3), 0)
	d := newDriver(t, a, "honest", "mallory")
	m := newMarket(t, a, d, newProver(t, "honest", 1), newProver(t, "mallory", 1))

	node := func(id uint64) gfltypes.Node {
		n, err := a.GFLKeeper.GetNode(a.Ctx(), id)
		require.NoError(t, err)
		return n
	}
	slot := func(id uint64) markettypes.NodeSlot {
		s, err := a.MarketKeeper.Slots.Get(a.Ctx(), id)
		require.NoError(t, err)
		return s
	}
	assignedTo := func(job uint64) uint64 {
		return jobTasks(t, a, job)[0].NodeId
	}

	// epoch 0: neither is scheduled before PoCP shows its floor; honest's first sample does
	require.True(t, node(honest).AwaitingMeasurement)
	require.True(t, node(mallory).AwaitingMeasurement)
	first := workEpoch(t, a)
	early := m.submit("client", regionJob(a, 1, "us-east"))
	served := m.submit("client", regionJob(a, 1, "eu-west"))
	m.until(30, "honest's job assigned", func() bool { return assignedTo(served) != 0 })
	require.Equal(t, honest, assignedTo(served))
	require.False(t, node(honest).AwaitingMeasurement)
	require.True(t, node(mallory).AwaitingMeasurement, "its samples are under the floor")
	require.Greater(t, node(mallory).LastSampleGflops, uint64(0), "it did answer")
	require.Zero(t, assignedTo(early), "no job for mallory before it is measured")

	// the rebalance of epoch 0 measures both
	m.until(200, "the first rebalance", func() bool {
		return workEpoch(t, a) != first && node(mallory).PowerEpoch == first && node(mallory).PowerGflops > 0
	})
	mn, hn := node(mallory), node(honest)
	require.Less(t, mn.MedianGflops, uint64(6), "mallory measured under the floor")
	require.GreaterOrEqual(t, hn.MedianGflops, uint64(6), "honest measured over it")
	require.Equal(t, "", mn.GpuClass)
	require.Equal(t, "H200-141GB", mn.ClaimedClass)
	require.Equal(t, "H200-141GB", hn.GpuClass)
	require.Empty(t, hn.ClaimedClass)
	require.False(t, slot(mallory).Active, "the market no longer schedules it")
	require.True(t, slot(honest).Active)
	power, err := a.GFLKeeper.ClassPower.Get(a.Ctx(), "H200-141GB")
	require.NoError(t, err)
	require.Equal(t, hn.PowerGflops, power, "the class's power is honest's alone")

	// a job of mallory's region still waits; honest's region is served
	waiting := m.submit("client", regionJob(a, 1, "us-east"))
	again := m.submit("client", regionJob(a, 1, "eu-west"))
	m.until(10, "honest's next job assigned", func() bool { return assignedTo(again) != 0 })
	require.Equal(t, honest, assignedTo(again))
	for range 10 {
		m.step()
	}
	require.Zero(t, assignedTo(waiting), "no H200 in us-east")
	require.Equal(t, markettypes.TASK_STATUS_PENDING, jobTasks(t, a, waiting)[0].Status)

	// re-registering the same claim does not undo the measurement
	s := h200Spec("mallory", "us-east", 1, 3)
	s.Endpoint = "https://mallory-2.example.com"
	m.deliver("mallory", &gfltypes.MsgUpdateNode{Operator: a.Account("mallory").String(), NodeId: mallory, Spec: s})
	require.Equal(t, "", node(mallory).GpuClass)
	require.False(t, slot(mallory).Active)
	for range 5 {
		m.step()
	}
	require.Zero(t, assignedTo(waiting))
	a.AssertInvariants()
}

// setGFLParams changes x/gfl's params out of band (validated), in the next block.
func setGFLParams(t *testing.T, a *apptest.App, edit func(p *gfltypes.Params)) {
	t.Helper()
	a.Prepare(func(ctx sdk.Context) {
		p, err := a.GFLKeeper.Params.Get(ctx)
		require.NoError(t, err)
		edit(&p)
		require.NoError(t, p.Validate())
		require.NoError(t, a.GFLKeeper.Params.Set(ctx, p))
	})
	a.NextBlock()
}
