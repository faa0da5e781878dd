package keeper_test

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

func (f *fixture) setStats(node uint64, passed, failed, missed uint32, samples ...uint64) {
	f.t.Helper()
	st, err := f.k.Rebalance.Get(f.ctx)
	require.NoError(f.t, err)
	require.NoError(f.t, f.k.Stats.Set(f.ctx, collections.Join(node, st.StatsEpoch), types.NodeEpochStats{
		NodeId: node, Epoch: st.StatsEpoch, Issued: passed + failed + missed, Passed: passed, Failed: failed, Missed: missed, Samples: samples,
	}))
}

func (f *fixture) endEpoch() {
	f.t.Helper()
	require.NoError(f.t, f.k.EpochHooks().AfterEpochEnd(f.ctx, "flops", 1))
}

func (f *fixture) requireSupplyInvariant() {
	f.t.Helper()
	msg, broken := f.k.SupplyInvariant(f.ctx)
	require.False(f.t, broken, msg)
}

// At an epoch end, EndBlock rebalances max_rebalance_per_block nodes per block: each node's
// power becomes median * availability and its operator's ugfl follows exactly; a node with
// no concluded challenge keeps its power; the supply invariant holds at every block.
func TestRebalanceBatches(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxRebalancePerBlock = 2; p.ChallengeIntervalBlocks = 1000 })
	alice := f.operator("alice", 10)
	bob := f.operator("bob", 10)
	n1 := f.register(alice, spec("a", 1))
	n2 := f.register(alice, spec("b", 1))
	n3 := f.register(bob, spec("c", 1))
	n4 := f.register(bob, spec("d", 1))
	f.blocks(1)

	// epoch 0: n1 passes all 3 (median 200), n2 passes 1 of 2 (median 500, availability 50%),
	// n3 misses everything, n4 has nothing concluded
	f.setStats(n1, 3, 0, 0, 100, 300, 200)
	f.setStats(n2, 1, 0, 1, 500)
	f.setStats(n3, 0, 1, 2)
	f.endEpoch()
	st, err := f.k.Rebalance.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{0}, st.Pending)
	require.Equal(t, uint64(1), st.StatsEpoch)

	f.blocks(1) // nodes 1 and 2
	require.Equal(t, uint64(200), f.node(n1).PowerGflops)
	require.Equal(t, uint64(250), f.node(n2).PowerGflops)
	require.Equal(t, uint32(500_000), f.node(n2).AvailabilityPpm)
	require.Zero(t, f.node(n3).PowerEpoch)
	require.Equal(t, int64(450), f.bank.Balance(sdkAddr(alice), types.Denom).Int64())
	f.requireSupplyInvariant()
	st, _ = f.k.Rebalance.Get(f.ctx)
	require.Equal(t, n2, st.Cursor)

	f.blocks(1) // nodes 3 and 4: done
	require.Zero(t, f.node(n3).PowerGflops)
	require.Zero(t, f.node(n4).PowerGflops)
	f.blocks(1)
	st, _ = f.k.Rebalance.Get(f.ctx)
	require.Empty(t, st.Pending)
	f.requireSupplyInvariant()
	np, err := f.qs.NetworkPower(f.ctx, &types.QueryNetworkPowerRequest{})
	require.NoError(t, err)
	require.Equal(t, uint64(450), np.Power.TotalGflops)
	require.Equal(t, uint64(2), np.Power.Nodes)

	// epoch 1: n1's median falls to 50 (burn 150), n2 has nothing concluded (keeps 250),
	// n3 now passes (mint)
	f.setStats(n1, 1, 0, 0, 50)
	f.setStats(n3, 2, 0, 0, 700, 900)
	f.endEpoch()
	f.blocks(4)
	require.Equal(t, uint64(50), f.node(n1).PowerGflops)
	require.Equal(t, uint64(250), f.node(n2).PowerGflops)
	require.Equal(t, uint64(800), f.node(n3).PowerGflops)
	require.Equal(t, int64(300), f.bank.Balance(sdkAddr(alice), types.Denom).Int64())
	require.Equal(t, int64(800), f.bank.Balance(sdkAddr(bob), types.Denom).Int64())
	require.Equal(t, int64(1100), f.bank.GetSupply(f.ctx, types.Denom).Amount.Int64())
	f.requireSupplyInvariant()
}

// An epoch of another identifier does nothing; two epochs ending before the first
// rebalance finished are both processed, in order.
func TestRebalanceQueue(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxRebalancePerBlock = 1; p.ChallengeIntervalBlocks = 1000 })
	op := f.operator("alice", 10)
	n1 := f.register(op, spec("a", 1))
	f.register(op, spec("b", 1))
	f.blocks(1)
	require.NoError(t, f.k.EpochHooks().AfterEpochEnd(f.ctx, "day", 7))
	st, _ := f.k.Rebalance.Get(f.ctx)
	require.Empty(t, st.Pending)

	f.setStats(n1, 1, 0, 0, 10)
	f.endEpoch()
	f.setStats(n1, 1, 0, 0, 20) // counts in epoch 1
	f.endEpoch()
	st, _ = f.k.Rebalance.Get(f.ctx)
	require.Equal(t, []uint64{0, 1}, st.Pending)
	f.blocks(1)
	require.Equal(t, uint64(10), f.node(n1).PowerGflops)
	f.blocks(3)
	require.Equal(t, uint64(20), f.node(n1).PowerGflops)
	require.Equal(t, uint64(1), f.node(n1).PowerEpoch)
	f.requireSupplyInvariant()
}

// Queries: by id, by operator, class and status (paginated), open challenges, power per
// workload class and the network totals.
func TestQueries(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.ChallengeIntervalBlocks = 1000 })
	alice := f.operator("alice", 10)
	bob := f.operator("bob", 10)
	f.register(alice, spec("a", 1))
	f.register(alice, spec("b", 2))
	f.register(bob, spec("c", 1))
	f.blocks(1)
	_, err := f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: bob, NodeId: 3})
	require.NoError(t, err)

	res, err := f.qs.Node(f.ctx, &types.QueryNodeRequest{NodeId: 2})
	require.NoError(t, err)
	require.Len(t, res.Node.Gpus, 2)
	_, err = f.qs.Node(f.ctx, &types.QueryNodeRequest{NodeId: 9})
	require.ErrorIs(t, err, types.ErrNodeNotFound)

	byOp, err := f.qs.NodesByOperator(f.ctx, &types.QueryNodesByOperatorRequest{Operator: alice, Pagination: pageReq(1)})
	require.NoError(t, err)
	require.Len(t, byOp.Nodes, 1)
	require.Equal(t, uint64(1), byOp.Nodes[0].Id)
	require.NotNil(t, byOp.Pagination.NextKey)
	byOp, err = f.qs.NodesByOperator(f.ctx, &types.QueryNodesByOperatorRequest{Operator: alice, Pagination: pageNext(byOp.Pagination.NextKey)})
	require.NoError(t, err)
	require.Equal(t, uint64(2), byOp.Nodes[0].Id)

	byClass, err := f.qs.NodesByClass(f.ctx, &types.QueryNodesByClassRequest{GpuClass: "A100-40GB"})
	require.NoError(t, err)
	require.Len(t, byClass.Nodes, 3)
	byStatus, err := f.qs.NodesByStatus(f.ctx, &types.QueryNodesByStatusRequest{Status: types.NODE_STATUS_INACTIVE})
	require.NoError(t, err)
	require.Len(t, byStatus.Nodes, 1)
	require.Equal(t, uint64(3), byStatus.Nodes[0].Id)
	all, err := f.qs.Nodes(f.ctx, &types.QueryNodesRequest{})
	require.NoError(t, err)
	require.Len(t, all.Nodes, 3)

	open, err := f.qs.OpenChallenges(f.ctx, &types.QueryOpenChallengesRequest{Operator: alice})
	require.NoError(t, err)
	require.Len(t, open.Challenges, 2)
	ch, err := f.qs.Challenge(f.ctx, &types.QueryChallengeRequest{ChallengeId: open.Challenges[0].Id})
	require.NoError(t, err)
	require.Zero(t, ch.SampleHeight)

	f.setPower(1, 1_000_000)
	pw, err := f.qs.NodePower(f.ctx, &types.QueryNodePowerRequest{NodeId: 1})
	require.NoError(t, err)
	require.Equal(t, uint64(1_000_000), pw.PowerGflops)
	require.Len(t, pw.ByWorkload, 4)
	// A100-40GB under the training weights: W = 0.3819
	require.Equal(t, uint64(381_900), pw.ByWorkload[0].Gflops)
	np, err := f.qs.NetworkPower(f.ctx, &types.QueryNetworkPowerRequest{})
	require.NoError(t, err)
	require.Equal(t, pw.ByWorkload, np.Power.ByWorkload)
}

// Genesis export then import round-trips a state with nodes, open challenges, statistics,
// powers and beacon hashes.
func TestGenesisRoundTripWithState(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 10)
	id := f.register(op, spec("a", 2))
	f.register(op, spec("b", 1))
	f.blocks(1)
	f.setPower(id, 777)
	a := f.solve(f.node(id).OpenChallenge, nil)
	f.commit(op, a)
	f.setStats(2, 1, 0, 0, 42)
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate())
	require.Len(t, exported.Nodes, 2)
	require.NotEmpty(t, exported.Challenges)
	require.NotEmpty(t, exported.BlockHashes)

	g := newFixture(t, smallChallenges)
	g.bank.Fund(sdkAddr(op), f.bank.GetAllBalances(f.ctx, sdkAddr(op)))
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	eb, _ := f.env.Codec.MarshalJSON(exported)
	ab, _ := g.env.Codec.MarshalJSON(again)
	require.JSONEq(t, string(eb), string(ab))
	g.requireSupplyInvariant()

	// an import whose ugfl supply disagrees with the nodes' power is refused
	h := newFixture(t, smallChallenges)
	require.ErrorContains(t, h.k.InitGenesis(h.ctx, exported), "supply")
}

// The beacon serves only committed blocks still in its window.
func TestBeacon(t *testing.T) {
	f := newFixture(t, nil)
	f.blocks(3) // at height 4
	h, err := f.k.BlockHash(f.ctx, 3)
	require.NoError(t, err)
	// no proposer revealed: each value follows from the one before
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], 3)
	want := sha256.Sum256(append(append([]byte("flops/beacon/withheld/v1"), f.value(2)...), b[:]...))
	require.Equal(t, want[:], h)
	_, err = f.k.BlockHash(f.ctx, 4)
	require.Error(t, err, "the current block is not committed")
	_, err = f.k.BlockHash(f.ctx, 5)
	require.Error(t, err)
	s1, err := f.k.Seed(f.ctx, 2, "d", 1)
	require.NoError(t, err)
	s2, err := f.k.Seed(f.ctx, 2, "d", 2)
	require.NoError(t, err)
	require.NotEqual(t, s1, s2, "ids separate seeds")
	// the window forgets old blocks
	require.NoError(t, f.k.BlockHashes.Remove(f.ctx, 1))
	_, err = f.k.BlockHash(f.ctx, 1)
	require.Error(t, err)
}

// A provider prices its node out of the market for the epoch (its GPUs busy elsewhere,
// answering only the PoCP challenges) and lowers its ask for the few blocks in which the
// epoch's rewards are paid: the ask x/dps holds the node to (EpochHighestAsk) is the
// highest of the epoch its power was measured over, not the ask at the payout. The peak
// runs from the ask at registration, follows every raise, and starts again from the ask
// then at each rebalance, so an epoch priced honestly throughout is held to that price.
func TestAttackAskLoweredForTheDistribution(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.ChallengeIntervalBlocks = 1000 })
	op := f.operator("alice", 10)
	s := spec("a", 1)
	s.AskPerGpuHour = sdk.NewInt64Coin("udps", 1_000)
	id := f.register(op, s)
	require.Equal(t, int64(1_000), f.node(id).HighestAsk().Int64())
	update := func(ask int64) {
		t.Helper()
		s.AskPerGpuHour = sdk.NewInt64Coin("udps", ask)
		_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: s})
		require.NoError(t, err)
	}
	update(1_000_000_000) // out of the market for the epoch
	f.blocks(1)
	update(1_000) // back for the distribution
	require.Equal(t, int64(1_000), f.node(id).AskPerGpuHour.Amount.Int64())
	require.Equal(t, int64(1_000_000_000), f.node(id).HighestAsk().Int64())

	f.setStats(id, 2, 0, 0, 100, 100)
	f.endEpoch()
	f.blocks(2)
	n := f.node(id)
	require.Equal(t, uint64(100), n.PowerGflops)
	require.Equal(t, int64(1_000_000_000), n.EpochHighestAsk().Int64(), "the epoch's highest ask")
	require.Equal(t, int64(1_000), n.HighestAsk().Int64(), "the next epoch's peak starts from the ask now")

	// an epoch at 1,000 throughout is held to 1,000
	f.setStats(id, 2, 0, 0, 100, 100)
	f.endEpoch()
	f.blocks(2)
	require.Equal(t, int64(1_000), f.node(id).EpochHighestAsk().Int64())
}
