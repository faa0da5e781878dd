package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// The price squatter on the wired app: a provider registers a real node, answers every
// PoCP challenge, and asks a million times the going price per GPU-hour, so that no job
// can afford it (its GPUs serve others between challenges); near the epoch's end it
// lowers its ask to the going price for the payout. Before, it earned the same
// availability reward per GFL as the nodes clients could buy. Now x/gfl keeps the
// epoch's highest ask beside the power it measured, and x/dps pays no availability to a
// node whose ask was above twice its class's power-weighted median: the squatter earns
// nothing for that epoch, the two fair providers are paid, and once the squatter asks
// the going price for a whole epoch it is paid like them.
func TestWiredAttackOverpricedNodeEarnsAvailability(t *testing.T) {
	const fair, squat = 1_000_000, 1_000_000_000_000
	a := incentiveApp(t, 20, 20_000, "fair1", "fair2", "squatter")
	registerNode(t, a, "fair1", h200Spec("fair1", "eu-west", 1, 8), 0)
	registerNode(t, a, "fair2", h200Spec("fair2", "us-east", 1, 8), 0)
	spec := h200Spec("squat", "ap-south", 1, 8)
	spec.AskPerGpuHour = sdk.NewInt64Coin(udps, squat)
	node := registerNode(t, a, "squatter", spec, 0)
	m := newMarket(t, a, newDriver(t, a, "fair1", "fair2", "squatter"),
		newProver(t, "fair1", 1), newProver(t, "fair2", 1), newProver(t, "squatter", 1))

	n := workEpoch(t, a)
	m.until(100, "the epoch's last blocks", func() bool {
		info, err := a.EpochsKeeper.GetEpochInfo(a.Ctx(), "flops")
		require.NoError(t, err)
		return a.Ctx().BlockTime().After(info.CurrentEpochStartTime.Add(info.Duration - 5e9))
	})
	spec.AskPerGpuHour = sdk.NewInt64Coin(udps, fair) // for the payout
	m.deliver("squatter", &gfltypes.MsgUpdateNode{Operator: a.Account("squatter").String(), NodeId: node, Spec: spec})
	m.until(300, "epoch distributed", distributed(a, n))

	got, err := a.GFLKeeper.GetNode(a.Ctx(), node)
	require.NoError(t, err)
	require.Positive(t, got.PowerGflops, "its GPU answered the challenges")
	require.Equal(t, int64(fair), got.AskPerGpuHour.Amount.Int64())
	require.Equal(t, int64(squat), got.EpochHighestAsk().Int64(), "the epoch's highest ask")
	for _, p := range []string{"fair1", "fair2"} {
		require.True(t, rewardsOf(t, a, p, n).Availability.IsPositive(), "%s is paid", p)
	}
	require.True(t, rewardsOf(t, a, "squatter", n).Availability.IsZero(), "priced out for the epoch: no availability")
	e := emission(t, a, n)
	require.False(t, e.Aborted)
	require.True(t, e.Remainder.IsPositive(), "its share stays in the pool")
	require.Equal(t, uint64(1), e.NodesPricedOut)
	require.Len(t, e.AskCaps, 1)
	require.Equal(t, int64(2*1_048_575), e.AskCaps[0].Cap.Int64(), "2x the top of the bucket of 1,000,000")

	// a whole epoch at the going price: paid like the others
	m.until(300, "next epoch distributed", distributed(a, n+1))
	require.True(t, rewardsOf(t, a, "squatter", n+1).Availability.IsPositive())
	require.True(t, rewardsOf(t, a, "fair1", n+1).Availability.IsPositive())
}
