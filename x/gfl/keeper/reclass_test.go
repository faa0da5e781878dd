package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/pocp"
	"github.com/flopsnet/flops/x/gfl/types"
)

// slowClass is a class whose floor a CPU clears: model "Tesla T4", any memory.
func slowClass() types.GpuClass {
	return types.GpuClass{
		Name: "T4-16GB", ModelSubstrings: []string{"T4"}, MinGflopsPerGpu: 50,
		Factors: types.PerformanceFactors{MemoryBandwidthPpm: 60_000, MemoryCapacityPpm: 100_000, TensorCoresPpm: 40_000, InterconnectPpm: 20_000},
	}
}

// rebalance ends the epoch and runs the blocks that rebalance every node.
func (f *fixture) rebalance() {
	f.t.Helper()
	f.endEpoch()
	f.blocks(3)
	st, err := f.k.Rebalance.Get(f.ctx)
	require.NoError(f.t, err)
	require.Empty(f.t, st.Pending)
	f.requireSupplyInvariant()
}

func (f *fixture) classPower(class string) uint64 {
	f.t.Helper()
	p, err := f.k.ClassPower.Get(f.ctx, class)
	if err != nil {
		return 0
	}
	return p
}

// reclassedEvents are the re-classings of the block last ended.
func (f *fixture) reclassedEvents() []types.EventNodeReclassed {
	f.t.Helper()
	var out []types.EventNodeReclassed
	for _, e := range f.lastEvents {
		if e.Type != "flops.gfl.v1.EventNodeReclassed" {
			continue
		}
		msg, err := sdk.ParseTypedEvent(abci.Event(e))
		require.NoError(f.t, err)
		out = append(out, *msg.(*types.EventNodeReclassed))
	}
	return out
}

// TestAttackCPURegisteredAsA100 is the attack: an account with no GPU registers
// "2 x A100-40GB" (its worker's mock inventory) and answers PoCP with the CPU solver. It
// measured a few hundred GFLOP/s and kept the class, so the market matched it to A100
// jobs and paid it the class's workload factor. With the launch table's floor (4,000
// GFLOP/s per A100) its first rebalance takes it out of the class: no class of the table
// fits 150 GFLOP/s per GPU with 40 GiB, so it is in none (the market stops scheduling it,
// x/market's SlotFromNode) and its power counts for no class's workload factor. Its
// verified power stays its GFL index: the GEMMs were done.
func TestAttackCPURegisteredAsA100(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.ChallengeIntervalBlocks = 1000 })
	require.Equal(t, types.DefaultGpuClasses(), f.params().GpuClasses, "the launch table")
	op := f.operator("mallory", 10)
	id := f.register(op, spec("cpu", 2))
	require.Equal(t, "A100-40GB", f.node(id).GpuClass)
	f.blocks(1)

	f.setStats(id, 3, 0, 0, 280, 300, 320) // 150 GFLOP/s a "GPU"
	f.hooks.changed = nil
	f.endEpoch()
	f.blocks(1)
	n := f.node(id)
	require.Equal(t, "", n.GpuClass, "measured into no class")
	require.Equal(t, "A100-40GB", n.ClaimedClass)
	require.Equal(t, uint64(300), n.PowerGflops, "its verified power is still its index")
	require.Equal(t, uint64(300), f.classPower(""))
	require.Zero(t, f.classPower("A100-40GB"), "the class's power, which its workload factor weighs, lost it")
	require.Equal(t, []uint64{id}, f.hooks.changed, "the market was told")
	require.Equal(t, []types.EventNodeReclassed{{
		NodeId: id, Operator: op, From: "A100-40GB", To: "", ClaimedClass: "A100-40GB", MeasuredGflopsPerGpu: 150, Epoch: 0,
	}}, f.reclassedEvents())
	f.requireSupplyInvariant()
	for _, w := range mustNodePower(t, f, id).ByWorkload {
		require.Zero(t, w.Gflops, "no class: no workload factor (%s)", w.Workload)
	}

	// an update with the same claim does not undo the measurement
	s := spec("cpu", 2)
	s.Endpoint = "https://elsewhere.example.com"
	_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: s})
	require.NoError(t, err)
	require.Equal(t, "", f.node(id).GpuClass)
	require.Equal(t, "A100-40GB", f.node(id).ClaimedClass)
	f.requireSupplyInvariant()

	// a genesis carries the re-classing: exported, validated, imported, the same
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate())
	g := newFixture(t, func(p *types.Params) { p.ChallengeIntervalBlocks = 1000 })
	g.bank.Fund(sdkAddr(op), f.bank.GetAllBalances(f.ctx, sdkAddr(op)))
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	require.Equal(t, uint64(300), g.classPower(""))
	require.Equal(t, "A100-40GB", g.node(id).ClaimedClass)
	g.requireSupplyInvariant()
	// a node with no class and no claim, or claiming the class it is in, is refused
	bad := exported
	bad.Nodes = append([]types.Node(nil), exported.Nodes...)
	bad.Nodes[0].ClaimedClass = ""
	require.ErrorContains(t, bad.Validate(), "no GPUs or no class")
	bad.Nodes[0].GpuClass, bad.Nodes[0].ClaimedClass = "A100-40GB", "A100-40GB"
	require.ErrorContains(t, bad.Validate(), `claimed_class "A100-40GB" is its gpu_class`)

	// the supply invariant checks each class's total, not only their sum
	require.NoError(t, g.k.ClassPower.Remove(g.ctx, ""))
	require.NoError(t, g.k.ClassPower.Set(g.ctx, "A100-40GB", 300))
	msg, broken := g.k.SupplyInvariant(g.ctx)
	require.True(t, broken)
	require.Contains(t, msg, `class "A100-40GB" total 300 != its nodes' power 0`)
	require.Contains(t, msg, `class "" has no total; its nodes' power is 300`)
}

func mustNodePower(t *testing.T, f *fixture, id uint64) *types.QueryNodePowerResponse {
	t.Helper()
	res, err := f.qs.NodePower(f.ctx, &types.QueryNodePowerRequest{NodeId: id})
	require.NoError(t, err)
	return res
}

// A node below its class's floor goes to the best class its measurement and memory fit,
// whatever its model name says (the floor decides between fitting classes), and back to
// the class it claimed once it measures within it again; an epoch in which it measured
// nothing (every challenge missed) keeps its class; a node within its range never moves.
func TestReclassFollowsTheMeasurement(t *testing.T) {
	f := newFixture(t, func(p *types.Params) {
		p.ChallengeIntervalBlocks = 1000
		lower := slowClass()
		lower.Name, lower.MinGflopsPerGpu = "T4-lower", 10 // fits too, a lower floor: not chosen
		p.GpuClasses = append(p.GpuClasses, lower, slowClass())
	})
	op := f.operator("alice", 10)
	a := f.register(op, spec("a", 2))
	b := f.register(op, spec("b", 1))
	f.blocks(1)

	f.setStats(a, 1, 0, 0, 200)   // 100 a GPU: below A100's 4,000; T4-16GB's 50 and T4-lower's 10 fit
	f.setStats(b, 1, 0, 0, 9_000) // within A100-40GB
	f.rebalance()
	require.Equal(t, "T4-16GB", f.node(a).GpuClass)
	require.Equal(t, "A100-40GB", f.node(a).ClaimedClass)
	require.Equal(t, "A100-40GB", f.node(b).GpuClass)
	require.Empty(t, f.node(b).ClaimedClass)
	require.Equal(t, uint64(200), f.classPower("T4-16GB"))
	require.Equal(t, uint64(9_000), f.classPower("A100-40GB"))

	// every challenge missed: nothing measured, the class stays (the power goes to 0)
	f.setStats(a, 0, 0, 2)
	f.rebalance()
	require.Equal(t, "T4-16GB", f.node(a).GpuClass)
	require.Zero(t, f.node(a).PowerGflops)

	// measured within its claim again: back, in the same rebalance as its new power
	f.setStats(a, 2, 0, 0, 10_000, 10_000)
	f.rebalance()
	require.Equal(t, "A100-40GB", f.node(a).GpuClass)
	require.Empty(t, f.node(a).ClaimedClass)
	require.Equal(t, uint64(19_000), f.classPower("A100-40GB"))
	require.Zero(t, f.classPower("T4-16GB"))
}

// A ceiling re-classes too (a node measuring above its class's range is not that class).
// A re-classed node that claims another class (as in TestAttackReclaimEveryEpoch: an attacker
// out of its class re-declares its GPUs as another class's each epoch, to be scheduled in
// it until the next rebalance) stays where it measured: the new claim is measured at the
// next rebalance, and the node moves to it only if it measures within its range.
func TestReclassCeilingAndNewClaim(t *testing.T) {
	f := newFixture(t, func(p *types.Params) {
		p.ChallengeIntervalBlocks = 1000
		slow := slowClass()
		slow.MaxGflopsPerGpu = 1_000
		p.GpuClasses = append(p.GpuClasses, slow)
	})
	op := f.operator("bob", 10)
	t4 := spec("t", 1)
	t4.Gpus[0].Model, t4.Gpus[0].MemoryMib = "Tesla T4", 81559 // the memory of an 80 GB card
	id := f.register(op, t4)
	require.Equal(t, "T4-16GB", f.node(id).GpuClass)
	f.blocks(1)

	f.setStats(id, 1, 0, 0, 5_000) // above T4's 1,000: an A100-80GB's power and memory
	f.rebalance()
	require.Equal(t, "A100-80GB", f.node(id).GpuClass)
	require.Equal(t, "T4-16GB", f.node(id).ClaimedClass)

	// it declares itself an H100: still where it measured, the claim noted
	h := spec("h", 1)
	h.Gpus[0].Model, h.Gpus[0].MemoryMib = "NVIDIA H100 80GB HBM3", 81559
	_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: h})
	require.NoError(t, err)
	require.Equal(t, "A100-80GB", f.node(id).GpuClass)
	require.Equal(t, "H100-80GB", f.node(id).ClaimedClass)
	require.Equal(t, uint64(5_000), f.classPower("A100-80GB"))
	f.requireSupplyInvariant()

	// measured under H100's floor: not an H100
	f.setStats(id, 1, 0, 0, 6_000)
	f.rebalance()
	require.Equal(t, "A100-80GB", f.node(id).GpuClass)
	require.Equal(t, "H100-80GB", f.node(id).ClaimedClass)
	// measured within it: an H100
	f.setStats(id, 1, 0, 0, 12_000)
	f.rebalance()
	require.Equal(t, "H100-80GB", f.node(id).GpuClass)
	require.Empty(t, f.node(id).ClaimedClass)
	require.Equal(t, uint64(12_000), f.classPower("H100-80GB"))
	require.Zero(t, f.classPower("A100-80GB"))
}

// TestAttackNewNodeScheduledBeforeMeasured: a node's class used to stand on its claim
// until the epoch's rebalance (up to an epoch of jobs for a CPU registered as an A100). A
// node of a class with a floor now waits for a verified PoCP sample within the class's
// range before the market schedules it (its first challenge is issued at registration):
// a sample under the floor keeps it waiting, one within it lets it in (the market is
// told), and the rebalance places one that never showed it.
func TestAttackNewNodeScheduledBeforeMeasured(t *testing.T) {
	f := newFixture(t, smallChallenges)
	// the sample of a test-sized challenge committed 1 ms after its issue, 1 GPU
	p := f.params()
	n, r := pocp.ChooseSize(1, p.ChallengeTargetSeconds, p.ChallengeMinN, p.ChallengeMaxN, p.ChallengeMaxRn)
	fast := pocp.PowerGFLOPS(n, r, 1)
	require.Greater(t, fast, uint64(10))
	setFloor := f.params()
	setFloor.GpuClasses[3].MinGflopsPerGpu = fast / 2 // A100-40GB
	require.NoError(t, f.k.Params.Set(f.ctx, setFloor))

	honest, slow := f.operator("honest", 10), f.operator("slow", 10)
	h := f.register(honest, spec("h", 1))
	s := f.register(slow, spec("s", 1))
	require.True(t, f.node(h).AwaitingMeasurement, "a class with a floor: measured first")
	require.True(t, f.node(s).AwaitingMeasurement)
	f.hooks.changed = nil
	f.next(time.Millisecond) // their first challenges, issued at the registration block's end
	ha := f.solve(f.node(h).OpenChallenge, nil)
	sa := f.solve(f.node(s).OpenChallenge, nil)
	f.commit(honest, ha) // 1 ms: fast
	f.next(19 * time.Millisecond)
	f.commit(slow, sa) // 20 ms: a twentieth of that, under the floor
	f.blocks(2)
	require.Equal(t, fast, f.reveal(honest, ha))
	require.Less(t, f.reveal(slow, sa), fast/2)
	require.False(t, f.node(h).AwaitingMeasurement, "shown within its class")
	require.True(t, f.node(s).AwaitingMeasurement, "a pass under the floor shows nothing")
	require.Contains(t, f.hooks.changed, h, "the market was told")
	require.NotContains(t, f.hooks.changed, s)

	// the rebalance measures the slow one: no class of the launch table fits it
	f.rebalance()
	require.False(t, f.node(s).AwaitingMeasurement, "the measurement placed it")
	require.Equal(t, "", f.node(s).GpuClass)
	require.Equal(t, "A100-40GB", f.node(h).GpuClass)

	// without a floor, nothing to wait for
	free := f.params()
	free.GpuClasses = types.WithoutPowerRanges(free.GpuClasses)
	require.NoError(t, f.k.Params.Set(f.ctx, free))
	require.False(t, f.node(f.register(f.operator("x", 10), spec("x", 1))).AwaitingMeasurement)
}

// TestAttackReclaimEveryEpoch: a node measured into no class re-declares its GPUs as
// another class's (an update needs no new hardware, only other model names), then as the
// first again, to be scheduled in a class until the next rebalance each time. It stays
// in no class through both updates, its claims recorded for the next rebalance to
// measure.
func TestAttackReclaimEveryEpoch(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.ChallengeIntervalBlocks = 1000 })
	op := f.operator("mallory", 10)
	id := f.register(op, spec("cpu", 1))
	f.blocks(1)
	f.setStats(id, 1, 0, 0, 150)
	f.rebalance()
	require.Equal(t, "", f.node(id).GpuClass)

	h := spec("h", 1)
	h.Gpus[0].Model, h.Gpus[0].MemoryMib = "NVIDIA H100 80GB HBM3", 81559
	for _, claim := range []struct {
		spec  types.NodeSpec
		class string
	}{{h, "H100-80GB"}, {spec("cpu", 1), "A100-40GB"}} {
		_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: claim.spec})
		require.NoError(t, err)
		n := f.node(id)
		require.Equal(t, "", n.GpuClass, "claiming %s", claim.class)
		require.Equal(t, claim.class, n.ClaimedClass)
		require.Equal(t, uint64(150), f.classPower(""))
		f.requireSupplyInvariant()
	}
}

// TestAttackOneGPUAnswersForACluster: an operator registers a node of one A100-40GB,
// locking one GPU's collateral, and answers its challenges with a cluster behind it: 9
// PFLOP/s, nine times what any A100 can do. Before, the node was credited all of it as
// index power (and the availability reward that follows it), while the market could sell
// one GPU of it. Now its power is capped at the ceiling of the classes that hold its GPU's
// 40 GiB (1 PFLOP/s: A100-40GB and RTX4090-24GB): the rebalance puts it in no class
// (nothing in the table fits 9 PFLOP/s a GPU of 40 GiB), and its power is 1,000,000, its
// measurement kept as measured. A node of two A100s measured within
// the ceiling keeps its power whole; the first node, updated to declare a second GPU
// without a new measurement, is credited two ceilings at the next rebalance, and one
// again once it declares one.
func TestAttackOneGPUAnswersForACluster(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.ChallengeIntervalBlocks = 1000 })
	require.Equal(t, types.DefaultGpuClasses(), f.params().GpuClasses, "the launch table")
	op := f.operator("mallory", 10)
	cluster := f.register(op, spec("cluster", 1))
	honest := f.register(f.operator("alice", 10), spec("honest", 2))
	f.blocks(1)

	f.setStats(cluster, 3, 0, 0, 8_000_000, 9_000_000, 10_000_000)
	f.setStats(honest, 3, 0, 0, 1_500_000, 1_600_000, 1_700_000) // 800,000 a GPU
	f.rebalance()
	n := f.node(cluster)
	require.Equal(t, uint64(9_000_000), n.MedianGflops, "what it measured")
	require.Equal(t, "", n.GpuClass, "above every class's ceiling for its memory")
	require.Equal(t, uint64(1_000_000), n.PowerGflops, "one A100's ceiling")
	require.Equal(t, uint64(1_600_000), f.node(honest).PowerGflops, "within the ceiling: whole")
	require.Equal(t, "A100-40GB", f.node(honest).GpuClass)

	// declaring more GPUs raises the cap, fewer lowers it, without a new measurement
	update := func(gpus int) {
		s := spec("cluster", gpus)
		_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: cluster, Spec: s})
		require.NoError(t, err)
	}
	update(2)
	f.setStats(cluster, 3, 0, 0, 8_000_000, 9_000_000, 10_000_000)
	f.rebalance()
	require.Equal(t, uint64(2_000_000), f.node(cluster).PowerGflops)
	update(1)
	f.rebalance() // no sample this epoch: the power kept, under the new cap
	require.Equal(t, uint64(1_000_000), f.node(cluster).PowerGflops)
	f.requireSupplyInvariant()
}
