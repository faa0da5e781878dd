package types_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

func validGenesis() *types.GenesisState {
	a, b := keepertest.Addr("a"), keepertest.Addr("b")
	gs := types.DefaultGenesisState()
	gs.Collaterals = []types.Collateral{
		{Provider: a, Bonded: sdkmath.NewInt(1_000), LockedGpus: 99, Exposure: sdkmath.NewInt(5), SlashedTotal: sdkmath.NewInt(10)},
		{Provider: b, Bonded: sdkmath.ZeroInt(), Exposure: sdkmath.ZeroInt(), SlashedTotal: sdkmath.ZeroInt(), Jailed: true},
	}
	gs.Unbondings = []types.UnbondingEntry{
		{Provider: a, Id: 0, Amount: sdkmath.NewInt(100), CompletionTime: time.Unix(100, 0).UTC()},
		{Provider: b, Id: 4, Amount: sdkmath.ZeroInt(), CompletionTime: time.Unix(50, 0).UTC()},
	}
	gs.Slashes = []types.SlashRecord{{
		Provider: a, Id: 2, Reason: types.SLASH_REASON_WRONG_POCP, FractionPpm: 10_000,
		Amount: sdkmath.NewInt(10), Compensated: b, Compensation: sdkmath.NewInt(5),
		Rewarded: []string{keepertest.Addr("v")}, Reward: sdkmath.NewInt(2), Burned: sdkmath.NewInt(3),
	}}
	gs.NextUnbondingId = 5
	gs.NextSlashId = 3
	return gs
}

// Genesis validation accepts a consistent state and refuses each kind of bad record with
// ErrInvalidGenesis naming it.
func TestGenesisValidate(t *testing.T) {
	require.NoError(t, types.DefaultGenesisState().Validate(), "default genesis")
	require.NoError(t, validGenesis().Validate(), "a full genesis; locked GPUs above the bond are not checked")

	for _, tc := range []struct {
		name   string
		mutate func(gs *types.GenesisState)
		want   string
	}{
		// a malformed provider address
		{"bad collateral address", func(gs *types.GenesisState) { gs.Collaterals[0].Provider = "flops1bad" }, "collaterals[0].provider"},
		// one record per provider
		{"duplicate provider", func(gs *types.GenesisState) { gs.Collaterals[1].Provider = gs.Collaterals[0].Provider }, "duplicate provider"},
		// amounts are non-negative
		{"negative bonded", func(gs *types.GenesisState) { gs.Collaterals[0].Bonded = sdkmath.NewInt(-1) }, "collaterals[0].bonded"},
		// and set
		{"nil exposure", func(gs *types.GenesisState) { gs.Collaterals[0].Exposure = sdkmath.Int{} }, "collaterals[0].exposure"},
		{"negative slashed total", func(gs *types.GenesisState) { gs.Collaterals[1].SlashedTotal = sdkmath.NewInt(-3) }, "collaterals[1].slashed_total"},
		// entries need a well-formed provider with a collateral record
		{"bad unbonding address", func(gs *types.GenesisState) { gs.Unbondings[0].Provider = "x" }, "unbondings[0].provider"},
		{"unbonding without collateral", func(gs *types.GenesisState) { gs.Unbondings[0].Provider = keepertest.Addr("c") }, "no collateral record"},
		// unbonding ids are unique and below the next id
		{"duplicate unbonding id", func(gs *types.GenesisState) { gs.Unbondings[1].Id = 0 }, "duplicate id 0"},
		{"unbonding id not below next", func(gs *types.GenesisState) { gs.NextUnbondingId = 4 }, "next_unbonding_id"},
		{"negative unbonding", func(gs *types.GenesisState) { gs.Unbondings[0].Amount = sdkmath.NewInt(-1) }, "unbondings[0].amount"},
		// slash records: provider, ids, reason, fraction, amounts and their sum
		{"bad slash provider", func(gs *types.GenesisState) { gs.Slashes[0].Provider = "" }, "slashes[0].provider"},
		{"duplicate slash id", func(gs *types.GenesisState) { gs.Slashes = append(gs.Slashes, gs.Slashes[0]) }, "duplicate id 2"},
		{"slash id not below next", func(gs *types.GenesisState) { gs.NextSlashId = 2 }, "next_slash_id"},
		{"unspecified reason", func(gs *types.GenesisState) { gs.Slashes[0].Reason = types.SLASH_REASON_UNSPECIFIED }, "slash reason"},
		{"fraction above 1e6", func(gs *types.GenesisState) { gs.Slashes[0].FractionPpm = 1_000_001 }, "fraction_ppm"},
		{"negative burned", func(gs *types.GenesisState) { gs.Slashes[0].Burned = sdkmath.NewInt(-1) }, "slashes[0].burned"},
		{"parts do not sum", func(gs *types.GenesisState) { gs.Slashes[0].Amount = sdkmath.NewInt(11) }, "compensation + reward + burned"},
		{"bad compensated", func(gs *types.GenesisState) { gs.Slashes[0].Compensated = "nope" }, "slashes[0].compensated"},
		{"bad rewarded", func(gs *types.GenesisState) { gs.Slashes[0].Rewarded = []string{"nope"} }, "slashes[0].rewarded[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := validGenesis()
			tc.mutate(gs)
			err := gs.Validate()
			require.ErrorIs(t, err, types.ErrInvalidGenesis)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// bad params are reported as params errors
	gs := validGenesis()
	gs.Params.RewardPpm = 2_000_000
	require.ErrorIs(t, gs.Validate(), types.ErrInvalidParams)
}
