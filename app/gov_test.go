package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	govv1beta1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1beta1"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/apptest"
)

// TestGovLegacyTextProposal: a proposal carrying a v1beta1 text proposal
// (MsgExecLegacyContent, what the simulation's gov operations and older wallets send) is
// accepted like any other. Before, the gov keeper had no legacy router and the proposal's
// submission panicked in its handler (found by TestFullAppSimulation).
func TestGovLegacyTextProposal(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("alice"))
	alice := a.Account("alice")
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	content, err := codectypes.NewAnyWithValue(&govv1beta1.TextProposal{Title: "a title", Description: "a description"})
	require.NoError(t, err)
	exec := govv1.NewMsgExecLegacyContent(content, gov)
	msg, err := govv1.NewMsgSubmitProposal([]sdk.Msg{exec}, sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 1_000_000)), alice.String(), "", "a title", "a description", false)
	require.NoError(t, err)
	res := a.Deliver("alice", msg)
	require.Zerof(t, res.Code, "submit: %s", res.Log)
	require.NotContains(t, res.Log, "panic")
}
