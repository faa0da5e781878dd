package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// The app starts from its default genesis and keeps making blocks.
func TestAppRunsBlocksFromDefaultGenesis(t *testing.T) {
	a := apptest.New(t)
	a.NextBlocks(5)
	require.Equal(t, int64(6), a.Height())
	// every flops module stored its default params
	ctx := a.Ctx()
	_, err := a.GFLKeeper.Params.Get(ctx)
	require.NoError(t, err)
	_, err = a.DPSKeeper.Params.Get(ctx)
	require.NoError(t, err)
	_, err = a.MarketKeeper.Params.Get(ctx)
	require.NoError(t, err)
	_, err = a.ReputationKeeper.Params.Get(ctx)
	require.NoError(t, err)
	_, err = a.StakingSlashKeeper.Params.Get(ctx)
	require.NoError(t, err)
	// and owns its module account
	for _, name := range []string{"gfl", "dps", "market", "reputation", "stakingslash"} {
		require.NotNil(t, a.AccountKeeper.GetAccount(ctx, a.AccountKeeper.GetModuleAddress(name)), name)
	}
	a.AssertInvariants()
}

// udps moves by bank send; ugfl does not: the send fails with bank's "send disabled"
// error naming the denom, and balances do not move.
func TestUGFLIsNotTransferable(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("alice", "bob"))
	alice, bob := a.Account("alice"), a.Account("bob")

	// x/gfl is the only source of ugfl: mint some to alice as a rebalance would (only
	// x/gfl's own marked moves pass the send restriction).
	a.Prepare(func(ctx sdk.Context) {
		coins := sdk.NewCoins(sdk.NewInt64Coin(app.GFLDenom, 500))
		require.NoError(t, a.BankKeeper.MintCoins(ctx, gfltypes.ModuleName, coins))
		require.NoError(t, a.BankKeeper.SendCoinsFromModuleToAccount(gfltypes.WithLedgerMove(ctx), gfltypes.ModuleName, alice.Address, coins))
	})
	a.NextBlock()
	require.Equal(t, sdkmath.NewInt(500), a.Balance(alice.Address, app.GFLDenom))

	dpsBefore := a.Balance(bob.Address, app.BondDenom)
	res := a.Deliver("alice", banktypes.NewMsgSend(alice.Address, bob.Address, sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 1234))))
	require.Zero(t, res.Code, res.Log)
	require.Equal(t, dpsBefore.AddRaw(1234), a.Balance(bob.Address, app.BondDenom))

	res = a.Deliver("alice", banktypes.NewMsgSend(alice.Address, bob.Address, sdk.NewCoins(sdk.NewInt64Coin(app.GFLDenom, 100))))
	require.Equal(t, banktypes.ErrSendDisabled.ABCICode(), res.Code)
	require.Equal(t, banktypes.ModuleName, res.Codespace)
	require.Contains(t, res.Log, "ugfl transfers are currently disabled")
	require.Equal(t, sdkmath.NewInt(500), a.Balance(alice.Address, app.GFLDenom))
	require.True(t, a.Balance(bob.Address, app.GFLDenom).IsZero())

	// multi-send is refused the same way
	res = a.Deliver("alice", &banktypes.MsgMultiSend{
		Inputs:  []banktypes.Input{banktypes.NewInput(alice.Address, sdk.NewCoins(sdk.NewInt64Coin(app.GFLDenom, 1)))},
		Outputs: []banktypes.Output{banktypes.NewOutput(bob.Address, sdk.NewCoins(sdk.NewInt64Coin(app.GFLDenom, 1)))},
	})
	require.Equal(t, banktypes.ErrSendDisabled.ABCICode(), res.Code)
	require.True(t, a.Balance(bob.Address, app.GFLDenom).IsZero())
}

// Module accounts other than gov's cannot receive bank sends: coins reach escrow,
// collateral and the reward pool only through their modules.
func TestModuleAccountsAreBlocked(t *testing.T) {
	blocked := app.BlockedAddresses()
	for name := range app.GetMaccPerms() {
		addr := authtypes.NewModuleAddress(name).String()
		if name == "gov" {
			require.False(t, blocked[addr], name)
			continue
		}
		require.True(t, blocked[addr], name)
	}
}
