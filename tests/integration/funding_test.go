package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	"github.com/flopsnet/flops/x/gfl/pocp"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// fundedBy: x/market has seen funder send udps to recipient.
func fundedBy(t *testing.T, a *apptest.App, recipient, funder string) bool {
	t.Helper()
	ok, err := a.DPSKeeper.IsFundedBy(a.Ctx(), a.Account(recipient).Address, a.Account(funder).Address)
	require.NoError(t, err)
	return ok
}

// Through the app's tx pipeline (the post handler): every successful udps transfer links
// its recipient to its sender, at the top of a tx or inside authz MsgExec, MsgSend or
// MsgMultiSend; a failed tx (an amount above the balance, an MsgExec without a grant)
// links nobody, so no one can make an account look funded by someone else.
func TestBankTransfersLinkFunding(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("p", "s", "x", "g", "o1", "o2"))
	addr := func(n string) sdk.AccAddress { return a.Account(n).Address }
	coins := func(n int64) sdk.Coins { return sdk.NewCoins(sdk.NewInt64Coin(udps, n)) }

	// P sends S 1 udps: S is funded by P, P not by S.
	a.MustDeliver("p", banktypes.NewMsgSend(addr("p"), addr("s"), coins(1)))
	require.True(t, fundedBy(t, a, "s", "p"))
	require.False(t, fundedBy(t, a, "p", "s"))

	// X sends O1 udps: O1 is funded by X; S is still funded by P only.
	a.MustDeliver("x", banktypes.NewMsgSend(addr("x"), addr("o1"), coins(5)))
	require.True(t, fundedBy(t, a, "o1", "x"))
	require.False(t, fundedBy(t, a, "s", "x"))
	require.False(t, fundedBy(t, a, "o1", "p"))

	// A send above X's balance fails and links nobody.
	r := a.Deliver("x", banktypes.NewMsgSend(addr("x"), addr("o2"), coins(1).MulInt(apptest.DefaultBalance.AmountOf(udps).MulRaw(2))))
	require.NotZero(t, r.Code)
	require.False(t, fundedBy(t, a, "o2", "x"))

	// G executes P's send to O2 without a grant: the tx fails, nobody is linked.
	exec := authz.NewMsgExec(addr("g"), []sdk.Msg{banktypes.NewMsgSend(addr("p"), addr("o2"), coins(1))})
	r = a.Deliver("g", &exec)
	require.NotZero(t, r.Code, "no grant")
	require.False(t, fundedBy(t, a, "o2", "p"))

	// With P's grant the same MsgExec links O2 to P (not to the grantee G).
	grant, err := authz.NewMsgGrant(addr("p"), addr("g"), banktypes.NewSendAuthorization(coins(10), nil), nil)
	require.NoError(t, err)
	a.MustDeliver("p", grant)
	a.MustDeliver("g", &exec)
	require.True(t, fundedBy(t, a, "o2", "p"))
	require.False(t, fundedBy(t, a, "o2", "g"))

	// MultiSend from X links each output to X.
	a.MustDeliver("x", &banktypes.MsgMultiSend{
		Inputs:  []banktypes.Input{banktypes.NewInput(addr("x"), coins(3))},
		Outputs: []banktypes.Output{banktypes.NewOutput(addr("s"), coins(1)), banktypes.NewOutput(addr("o2"), coins(2))},
	})
	require.True(t, fundedBy(t, a, "s", "x"))
	require.True(t, fundedBy(t, a, "o2", "x"))

	// Exactly these links, in x/dps's genesis.
	gs, err := a.DPSKeeper.ExportGenesis(a.Ctx())
	require.NoError(t, err)
	got := map[dpstypes.FundingLink]bool{}
	for _, l := range gs.FundingLinks {
		got[l] = true
	}
	link := func(r, f string) dpstypes.FundingLink {
		return dpstypes.FundingLink{Recipient: a.Account(r).String(), Funder: a.Account(f).String()}
	}
	require.Equal(t, map[dpstypes.FundingLink]bool{
		link("s", "p"): true, link("o1", "x"): true, link("o2", "p"): true, link("s", "x"): true, link("o2", "x"): true,
	}, got)
}

// A pool whose owner a member funded: that member's verified units are paid but earn it no
// work; another member's units for the same owner (a client funded by a third party, as
// far as it is concerned) still count as its work.
func TestPoolWorkOfAFundedOwner(t *testing.T) {
	a, nodes := marketAppN(t, 2, func(p *markettypes.Params) { p.PoolRevealTimeoutBlocks = 10 })
	const price = 1_000_000
	owner := a.Account("client").String()
	a.MustDeliver("p1", banktypes.NewMsgSend(a.Account("p1").Address, a.Account("client").Address, sdk.NewCoins(sdk.NewInt64Coin(udps, 1))))
	require.True(t, fundedBy(t, a, "client", "p1"))

	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: gemmPoolSpec(price, 2*price)})
	poolID := uint64(1)
	for _, n := range []string{"p1", "p2"} {
		a.MustDeliver(n, &markettypes.MsgJoinPool{Provider: a.Account(n).String(), PoolId: poolID, NodeId: nodes[n]})
	}
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: poolID, Units: unitInputs(2)})
	pp := newPoolPlayer(t, a, nodes, poolID)
	res := a.NextBlock(a.SignTx("p1", apptest.DefaultGas, pp.commit("p1", 1, pp.solve(1).root())),
		a.SignTx("p2", apptest.DefaultGas, pp.commit("p2", 2, pp.solve(2).root())))
	for i, tr := range res.TxResults {
		require.Zerof(t, tr.Code, "tx %d: %s", i, tr.Log)
	}
	a.NextBlock()
	res = a.NextBlock(a.SignTx("p1", apptest.DefaultGas, pp.reveal("p1", 1, pp.solve(1))),
		a.SignTx("p2", apptest.DefaultGas, pp.reveal("p2", 2, pp.solve(2))))
	for i, tr := range res.TxResults {
		require.Zerof(t, tr.Code, "tx %d: %s", i, tr.Log)
	}
	require.Equal(t, uint64(2), getPool(t, a, poolID).PaidUnits)
	for _, n := range []string{"p1", "p2"} {
		e, err := a.MarketKeeper.PoolEarnings.Get(a.Ctx(), collections.Join(poolID, a.Account(n).Address))
		require.NoError(t, err)
		require.Equal(t, sdkmath.NewInt(price), e.Amount, "%s is paid its unit", n)
	}
	require.Empty(t, workOf(t, a, "p1"), "p1 funded the owner: no work")
	require.Equal(t, []dpstypes.WorkRecord{{
		GflopSeconds: sdkmath.NewIntFromUint64((pocp.Challenge{N: 256, R: 1}).FLOPs() / 1e9), Fees: sdkmath.NewInt(price), Tasks: 1,
	}}, workOf(t, a, "p2"))
	a.AssertInvariants()
}
