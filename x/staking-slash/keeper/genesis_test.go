package keeper_test

import (
	"testing"
	"time"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// buildState drives a fixture through every kind of state change: bonds, unbondings,
// locks, exposure, a jailing and slashes with beneficiaries.
func buildState(t *testing.T, f *fixture) {
	a, b := addr("a"), addr("b")
	f.bond(a, 10_000)
	f.bond(b, 7_000)
	f.unbond(a, 1_000)
	f.at(f.ctx.BlockTime().Add(time.Minute))
	f.unbond(a, 2_000)
	f.unbond(b, 500)
	require.NoError(t, f.k.LockForNode(f.ctx, a, 3))
	require.NoError(t, f.k.AddExposure(f.ctx, b, ints(4_321)))
	require.NoError(t, f.k.Jail(f.ctx, b, f.ctx.BlockTime().Add(time.Hour), types.SlashEvidence{NodeId: 4}))
	_, err := f.k.Slash(f.ctx, a, 123_456, types.SLASH_REASON_WRONG_RESULT,
		types.Beneficiaries{Compensate: addr("client"), CompensationCap: sdkmath.NewInt(1_000_000_000), Rewarded: rewardedAddrs(3)}, types.SlashEvidence{JobId: 1, TaskId: 2})
	require.NoError(t, err)
	_, err = f.k.Slash(f.ctx, b, 50_000, types.SLASH_REASON_ABANDONED_TASK, types.Beneficiaries{}, types.SlashEvidence{})
	require.NoError(t, err)
	f.requireInvariants()
}

// Export then import (through JSON, as a chain export does) gives the same state, the same
// running totals, ids that continue where they stopped, and a maturity queue that still
// pays out.
func TestGenesisRoundTripWithState(t *testing.T) {
	f := newFixture(t)
	buildState(t, f)
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Len(t, exported.Collaterals, 2)
	require.Len(t, exported.Unbondings, 3)
	require.Len(t, exported.Slashes, 2)
	require.Equal(t, uint64(3), exported.NextUnbondingId)
	require.Equal(t, uint64(2), exported.NextSlashId)
	require.NoError(t, exported.Validate())
	bz, err := f.env.Codec.MarshalJSON(exported)
	require.NoError(t, err)

	// a new chain: bank's genesis funds the module account first
	g := newFixture(t)
	g.ctx = g.ctx.WithBlockTime(f.ctx.BlockTime())
	g.fund(g.k.ModuleAddress(), f.moduleBalance().Int64())
	var imported types.GenesisState
	require.NoError(t, g.env.Codec.UnmarshalJSON(bz, &imported))
	require.NoError(t, g.k.InitGenesis(g.ctx, &imported))

	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	want, err := proto.Marshal(exported)
	require.NoError(t, err)
	got, err := proto.Marshal(again)
	require.NoError(t, err)
	require.Equal(t, want, got, "export after import differs")
	fb, fu := f.totals()
	gb, gu := g.totals()
	requireInt(t, fb, gb)
	requireInt(t, fu, gu)
	g.requireInvariants()

	// ids continue
	a := addr("a")
	require.Equal(t, uint64(3), g.unbond(a, 1).UnbondingId)
	// the maturity queue was rebuilt: everything due is paid (2 per block)
	g.at(g.ctx.BlockTime().Add(2 * time.Hour))
	for range 2 {
		g.endBlock()
	}
	open, err := g.k.ProviderUnbondings(g.ctx, a)
	require.NoError(t, err)
	require.Empty(t, open, "all of a's entries paid after import")
	open, err = g.k.ProviderUnbondings(g.ctx, addr("b"))
	require.NoError(t, err)
	require.Empty(t, open, "all of b's entries paid after import")
	g.requireInvariants()
}

// InitGenesis refuses a module account balance that differs from bonded + unbonding.
func TestInitGenesisChecksModuleBalance(t *testing.T) {
	f := newFixture(t)
	buildState(t, f)
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		delta int64
	}{
		// one udps short: collateral would be unbacked
		{"short", -1},
		// one udps too many: coins nobody can claim
		{"excess", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newFixture(t)
			g.fund(g.k.ModuleAddress(), f.moduleBalance().Int64()+tc.delta)
			require.ErrorIs(t, g.k.InitGenesis(g.ctx, exported), types.ErrInvalidGenesis)
		})
	}
}

// InitGenesis validates before it stores: a malformed record is refused.
func TestInitGenesisRejectsInvalidRecords(t *testing.T) {
	g := newFixture(t)
	gs := types.DefaultGenesisState()
	gs.Collaterals = []types.Collateral{{Provider: "not-an-address", Bonded: ints(1), Exposure: ints(0), SlashedTotal: ints(0)}}
	require.ErrorIs(t, g.k.InitGenesis(g.ctx, gs), types.ErrInvalidGenesis)
}
