package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// An operator churns nodes (registers, deactivates, registers again) to grow every
// module's per-node state for free, and deactivates a node whose last task is still in
// its challenge window. On the wired app, with node_retention_blocks = 100: the churned
// nodes are deleted a retention after their deactivation with their market slots and
// reputation records, and their GPUs can be registered again; the node with the
// unsettled task is put off until its task is paid, then deleted; the invariants hold
// in every block.
func TestAttackNodeChurnLeavesNoState(t *testing.T) {
	const retention, churned = 100, 6
	a := apptest.New(t, apptest.WithAccounts("client", "p1"), apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() {
			g.Params.ChallengeIntervalBlocks = 1_000_000
			g.Params.NodeRetentionBlocks = retention
		})
		var m markettypes.GenesisState
		e.Edit(markettypes.ModuleName, &m, func() { m.Params.ChallengeWindowBlocks = 3 * retention / 2 })
	}))
	working := bondAndRegister(t, a, "p1", 1)
	nodes := map[string]uint64{"p1": working}
	op := a.Account("p1").String()

	// the working node runs a job to its reveal; it settles only after the challenge window
	normal := startNormal(t, a)
	for i := 0; i < 20 && !normal.ran; i++ {
		a.NextBlock(normal.txs(t, a, nodes)...)
	}
	require.True(t, normal.ran, "the job was revealed")
	a.NextBlock()
	require.Equal(t, markettypes.TASK_STATUS_VERIFIED, jobTasks(t, a, normal.id)[0].Status)

	// churn: register and deactivate nodes, then the working one
	a.MustDeliver("p1", &sstypes.MsgBond{Provider: op, Amount: sdk.NewInt64Coin(udps, churned*100_000_000)})
	var gone []uint64
	for i := range churned {
		a.MustDeliver("p1", &gfltypes.MsgRegisterNode{Operator: op, Spec: a100(fmt.Sprintf("churn%d", i), 1)})
		ids := nodesOf(t, a, "p1")
		id := ids[len(ids)-1]
		a.MustDeliver("p1", &gfltypes.MsgDeactivateNode{Operator: op, NodeId: id})
		gone = append(gone, id)
	}
	a.MustDeliver("p1", &gfltypes.MsgDeactivateNode{Operator: op, NodeId: working})
	deactivated := a.Height()

	exists := func(id uint64) (gfl, slot, score bool) {
		_, err := a.GFLKeeper.GetNode(a.Ctx(), id)
		gfl = err == nil
		slot, err = a.MarketKeeper.Slots.Has(a.Ctx(), id)
		require.NoError(t, err)
		score, err = a.ReputationKeeper.Scores.Has(a.Ctx(), id)
		require.NoError(t, err)
		return gfl, slot, score
	}
	for a.Height() <= deactivated+retention {
		a.NextBlock()
		a.AssertInvariants()
	}
	for _, id := range gone {
		g, s, r := exists(id)
		require.False(t, g || s || r, "churned node %d deleted everywhere (gfl %v, slot %v, score %v)", id, g, s, r)
	}
	has, err := a.GFLKeeper.GpuOwners.Has(a.Ctx(), "GPU-churn0-0")
	require.NoError(t, err)
	require.False(t, has, "the churned GPUs are free")
	g, s, _ := exists(working)
	require.True(t, g && s, "the node with an unsettled task is kept")
	n, err := a.GFLKeeper.GetNode(a.Ctx(), working)
	require.NoError(t, err)
	require.Greater(t, n.RetireHeight, deactivated+retention, "its deletion is put off")

	for i := 0; i < 3*retention && !normal.settled(t, a); i++ {
		a.NextBlock()
		a.AssertInvariants()
	}
	require.True(t, normal.settled(t, a), "the task on the deactivated node is paid")
	for a.Height() <= n.RetireHeight {
		a.NextBlock()
		a.AssertInvariants()
	}
	g, s, r := exists(working)
	require.False(t, g || s || r, "once paid, the node is deleted (gfl %v, slot %v, score %v)", g, s, r)
	count := 0
	require.NoError(t, a.MarketKeeper.Slots.Walk(a.Ctx(), nil, func(uint64, markettypes.NodeSlot) (bool, error) { count++; return false, nil }))
	require.Zero(t, count, "no slot left")
	left, err := a.GFLKeeper.NodeRetireAt.Iterate(a.Ctx(), collections.Ranger[collections.Pair[int64, uint64]](nil))
	require.NoError(t, err)
	keys, err := left.Keys()
	require.NoError(t, err)
	require.Empty(t, keys)

	// the freed GPUs register again
	a.MustDeliver("p1", &gfltypes.MsgRegisterNode{Operator: op, Spec: a100("churn0", 1)})
}
