package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

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
	w := newWonByTwo(t)
	a := w.a
	for _, task := range w.won {
		require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status)
		name := map[uint64]string{w.nodes["p1"]: "p1", w.nodes["p2"]: "p2"}[task.NodeId]
		a.MustDeliver(name, &markettypes.MsgReleaseTask{Provider: task.Provider, TaskId: task.Id, Reason: "leaving"})
	}
	w.requireForfeited(t, "the releases")
	for _, n := range []string{"p1", "p2"} {
		require.True(t, a.Balance(a.Account(n).Address, udps).LT(w.before[n].Sub(w.deposit).Add(sdkmath.OneInt())), "%s lost its deposit (and paid the release's fee)", n)
		got := slashes(t, a, n)
		require.Len(t, got, 1, n)
		require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, got[0].Reason, n)
	}
	a.AssertInvariants()
}
