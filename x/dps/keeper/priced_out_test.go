package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/dps/keeper"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// pricedNode adds an active node of class with power in GFL, its ask now and its
// highest ask of the epoch (x/gfl's epoch_ask).
func (f *fixture) pricedNode(id uint64, operator sdk.AccAddress, class string, powerGFL uint64, ask, epochAsk int64) {
	f.gfl.nodes = append(f.gfl.nodes, gfltypes.Node{
		Id: id, Operator: operator.String(), Status: gfltypes.NODE_STATUS_ACTIVE, PowerGflops: powerGFL * gflUnit,
		GpuClass: class, AskPerGpuHour: sdk.NewInt64Coin(denom, ask), EpochAsk: sdkmath.NewInt(epochAsk),
	})
}

// A provider keeps real GPUs registered, answers their PoCP challenges, and asks a
// million times the going price, so that no job ever reaches them (its GPUs work
// elsewhere between challenges): the availability share (half the emission) paid it as
// much per GFL as the nodes clients can buy, for capacity the market never had. It even
// lowered its ask for the distribution's blocks. Now a node whose ask in the epoch was
// above availability_ask_cap_ppm (2x) times its class's power-weighted median ask earns
// no availability, with an EventAvailabilityWithheld naming the ask and the cap; its
// share stays in the pool. A node at twice the median is still paid, and so is the
// priced-out node with the cap set to 0 (as before).
//
//	5 nodes of 100 GFL: E = 0.2 * 500 * 0.01 DPS = 1,000,000 udps, E_avail 500,000
//	alice, bob, carol ask 1,000 (bucket up to 1,023: the median); erin 2,000; dave 10^9
//	(now 1,000): cap 2 x 1,023 = 2,046
func TestAttackOverpricedNodeEarnsAvailability(t *testing.T) {
	dave, erin := addr("dave"), addr("erin")
	setup := func(capPPM uint64) *fixture {
		f := newFixture(t, fixtureOpts{})
		p := testParams()
		p.AvailabilityAskCapPpm = capPPM
		require.NoError(t, f.k.Params.Set(f.ctx, p))
		f.pricedNode(1, alice, "a100", 100, 1_000, 1_000)
		f.pricedNode(2, bob, "a100", 100, 1_000, 1_000)
		f.pricedNode(3, carol, "a100", 100, 1_000, 1_000)
		f.pricedNode(4, dave, "a100", 100, 1_000, 1_000_000_000)
		f.pricedNode(5, erin, "a100", 100, 2_000, 2_000)
		f.resetEvents()
		f.endEpoch(1)
		f.runUntilIdle(20)
		return f
	}

	f := setup(types.DefaultAvailabilityAskCapPPM)
	d := f.emission(1)
	requireAccounting(t, d)
	for _, a := range []sdk.AccAddress{alice, bob, carol, erin} {
		require.Equal(t, int64(100_000), f.balance(a).Int64(), "%s: a fifth of E_avail", a)
	}
	require.True(t, f.balance(dave).IsZero(), "priced out of the market: no availability")
	require.Equal(t, int64(400_000), d.PaidAvailability.Int64())
	require.Equal(t, uint64(4), d.NodesPaid)
	require.Equal(t, uint64(1), d.NodesPricedOut)
	require.Equal(t, []types.AskCap{{GpuClass: "a100", ReferenceAsk: sdkmath.NewInt(1_023), Cap: sdkmath.NewInt(2_046)}}, d.AskCaps)
	withheld := events[*types.EventAvailabilityWithheld](f)
	require.Len(t, withheld, 1)
	require.Equal(t, uint64(4), withheld[0].NodeId)
	require.Equal(t, dave.String(), withheld[0].Operator)
	require.Equal(t, int64(1_000_000_000), withheld[0].Ask.Int64())
	require.Equal(t, int64(2_046), withheld[0].Cap.Int64())

	// governance may turn the cap off: every node is paid, as before
	f = setup(0)
	requireAccounting(t, f.emission(1))
	require.Empty(t, f.emission(1).AskCaps)
	require.Equal(t, int64(100_000), f.balance(dave).Int64())
	require.Empty(t, events[*types.EventAvailabilityWithheld](f))
}

// The reference ask is per GPU class and weighted by power, not by node count: many
// small nodes at a high ask do not move the median of a class whose power asks less,
// and one class's prices do not cap another's.
func TestReferenceAskIsPerClassAndByPower(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.pricedNode(1, alice, "a100", 400, 1_000, 1_000)
	for id := uint64(2); id <= 7; id++ { // 6 nodes, 300 GFL in all, at 5,000
		f.pricedNode(id, bob, "a100", 50, 5_000, 5_000)
	}
	f.pricedNode(8, carol, "h100", 100, 100_000, 100_000)
	f.endEpoch(1)
	f.endBlock() // the asks pass: 2 nodes a block
	for f.distributionPhase() == types.DISTRIBUTION_PHASE_ASKS {
		f.endBlock()
	}
	res, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(t, err)
	caps := res.Distribution.AskCaps
	require.Len(t, caps, 2)
	require.Equal(t, "a100", caps[0].GpuClass)
	require.Equal(t, int64(1_023), caps[0].ReferenceAsk.Int64(), "400 of 700 GFL ask 1,000")
	require.Equal(t, int64(2_046), caps[0].Cap.Int64())
	require.Equal(t, "h100", caps[1].GpuClass)
	require.Equal(t, int64(114_687), caps[1].ReferenceAsk.Int64())
	f.runUntilIdle(20)
	d := f.emission(1)
	require.Equal(t, caps, d.AskCaps, "kept in the finished record")
	require.Equal(t, uint64(6), d.NodesPricedOut)
	require.True(t, f.balance(bob).IsZero(), "5,000 is above 2 x 1,023")
	require.True(t, f.balance(carol).IsPositive(), "h100's own reference")
	require.True(t, f.balance(alice).IsPositive())
}

func (f *fixture) distributionPhase() types.DistributionPhase {
	res, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(f.t, err)
	return res.Distribution.Phase
}

// Migrate1to2 sets the cap a version 1 chain lacks, and leaves one governance set.
func TestMigrate1to2SetsTheAskCap(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	p := testParams()
	p.AvailabilityAskCapPpm = 0
	require.NoError(t, f.k.Params.Set(f.ctx, p))
	require.NoError(t, keeper.NewMigrator(f.k).Migrate1to2(f.ctx))
	got, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(types.DefaultAvailabilityAskCapPPM), got.AvailabilityAskCapPpm)
	p.AvailabilityAskCapPpm = 5_000_000
	require.NoError(t, f.k.Params.Set(f.ctx, p))
	require.NoError(t, keeper.NewMigrator(f.k).Migrate1to2(f.ctx))
	got, err = f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(5_000_000), got.AvailabilityAskCapPpm)
}
