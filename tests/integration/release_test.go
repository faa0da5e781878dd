package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	dpstypes "github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Two auction winners give their tasks back (MsgReleaseTask) before acking them, the
// block after the close. A release is a lapse brought forward: each forfeits its deposit
// to the reward pool and is slashed as for an abandoned task, the owner gains nothing, and
// each task goes elsewhere, exactly as in TestAttackCensoredAckPaysTheOwnerTheDeposit where
// the acks never land. A release that returned the deposit would let a winner squat an
// auction and leave for free.
func TestAttackReleaseAfterWinningKeepsTheDeposit(t *testing.T) {
	a, nodes := marketApp(t, nil)
	deposit := markettypes.DefaultParams().BidDeposit.Amount
	pool := func() sdkmath.Int { return a.ModuleBalance(dpstypes.ModuleName, udps) }
	job, before := wonAuction(t, a, nodes, gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION))
	clientBefore, poolBefore := a.Balance(a.Account("client").Address, udps), pool()
	won := jobTasks(t, a, job)
	for _, task := range won {
		require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status)
		name := map[uint64]string{nodes["p1"]: "p1", nodes["p2"]: "p2"}[task.NodeId]
		a.MustDeliver(name, &markettypes.MsgReleaseTask{Provider: task.Provider, TaskId: task.Id, Reason: "leaving"})
	}
	require.Equal(t, clientBefore, a.Balance(a.Account("client").Address, udps), "the owner gains nothing from the releases")
	require.Equal(t, poolBefore.Add(deposit.MulRaw(2)), pool(), "the two deposits go to the reward pool")
	for _, n := range []string{"p1", "p2"} {
		b, err := a.MarketKeeper.Bids.Get(a.Ctx(), collections.Join(job, nodes[n]))
		require.NoError(t, err)
		require.Equal(t, markettypes.BID_STATUS_FORFEITED, b.Status, n)
		require.True(t, b.Deposit.IsZero(), n)
		require.True(t, a.Balance(a.Account(n).Address, udps).LT(before[n].Sub(deposit).Add(sdkmath.OneInt())), "%s lost its deposit (and paid the release's fee)", n)
		got := slashes(t, a, n)
		require.Len(t, got, 1, n)
		require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, got[0].Reason, n)
	}
	for i, task := range jobTasks(t, a, job) {
		require.Contains(t, task.ExcludedNodes, won[i].NodeId, "task %d goes elsewhere", task.Id)
	}
	a.AssertInvariants()
}
