package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// The collateral invariant is registered under stakingslash/collateral, holds after a full
// scenario, and reports a break when the module account's balance or the running totals
// are changed behind the keeper's back.
func TestCollateralInvariant(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, f *fixture)
		broken bool
	}{
		// bonds, unbondings, slashes and payouts keep it
		{"holds", func(*testing.T, *fixture) {}, false},
		{
			// coins sent to the module account outside the module
			name: "balance raised behind the keeper's back",
			tamper: func(t *testing.T, f *fixture) {
				require.NoError(t, f.bank.Mint(f.ctx, f.k.ModuleAddress(), sdk.NewCoins(coin(1))))
			},
			broken: true,
		},
		{
			// coins taken from the module account outside the module
			name: "balance lowered behind the keeper's back",
			tamper: func(t *testing.T, f *fixture) {
				require.NoError(t, f.bank.BurnCoins(f.ctx, types.ModuleName, sdk.NewCoins(coin(1))))
			},
			broken: true,
		},
		{
			// a running total out of step with the records
			name: "total bonded out of step",
			tamper: func(t *testing.T, f *fixture) {
				b, _ := f.totals()
				require.NoError(t, f.k.TotalBonded.Set(f.ctx, b.AddRaw(1)))
			},
			broken: true,
		},
		{
			// a record changed without its total (and the balance)
			name: "bonded changed without the total",
			tamper: func(t *testing.T, f *fixture) {
				c := f.collateral(addr("a"))
				c.Bonded = c.Bonded.AddRaw(1)
				require.NoError(t, f.k.Collaterals.Set(f.ctx, addr("a"), c))
			},
			broken: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			buildState(t, f)
			f.at(f.ctx.BlockTime().Add(2 * f.mustParams().UnbondingTime))
			f.endBlock() // pays two entries
			tc.tamper(t, f)

			routes := f.inv.Routes()
			require.Len(t, routes, 1)
			require.Equal(t, "stakingslash/collateral", routes[0].FullRoute())
			msg, broken := routes[0].Check(f.ctx)
			require.Equal(t, tc.broken, broken, msg)
			if tc.broken {
				require.Contains(t, msg, "invariant broken")
				require.Error(t, f.inv.AssertAll(f.ctx))
			}
		})
	}
}

func (f *fixture) mustParams() types.Params {
	f.t.Helper()
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(f.t, err)
	return p
}
