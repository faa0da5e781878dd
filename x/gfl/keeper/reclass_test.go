package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

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

// A ceiling re-classes too (a node measuring above its class's range is not that class),
// and a new claim (other GPUs, another class) starts from the class claimed.
func TestReclassCeilingAndNewClaim(t *testing.T) {
	f := newFixture(t, func(p *types.Params) {
		p.ChallengeIntervalBlocks = 1000
		slow := slowClass()
		slow.MaxGflopsPerGpu = 1_000
		p.GpuClasses = append(p.GpuClasses, slow)
	})
	op := f.operator("bob", 10)
	t4 := spec("t", 1)
	t4.Gpus[0].Model, t4.Gpus[0].MemoryMib = "Tesla T4", 40960 // the memory of an A100-40GB
	id := f.register(op, t4)
	require.Equal(t, "T4-16GB", f.node(id).GpuClass)
	f.blocks(1)

	f.setStats(id, 1, 0, 0, 5_000) // above T4's 1,000: an A100-40GB's power and memory
	f.rebalance()
	require.Equal(t, "A100-40GB", f.node(id).GpuClass)
	require.Equal(t, "T4-16GB", f.node(id).ClaimedClass)

	// the operator declares other hardware: a new claim, measured from scratch
	h := spec("h", 1)
	h.Gpus[0].Model, h.Gpus[0].MemoryMib = "NVIDIA H100 80GB HBM3", 81559
	_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: h})
	require.NoError(t, err)
	require.Equal(t, "H100-80GB", f.node(id).GpuClass)
	require.Empty(t, f.node(id).ClaimedClass)
	require.Equal(t, uint64(5_000), f.classPower("H100-80GB"))
	f.requireSupplyInvariant()
}
