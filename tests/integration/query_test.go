package integration

import (
	"context"
	"testing"

	sdkmath "cosmossdk.io/math"
	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/apptest"
)

// TestQueriesReadTheLatestCommittedBlock: the node's query path (ABCI Query, the path
// every gRPC call takes too: baseapp's query context over the app's query multistore,
// internal/querystore) answers from the block just committed, block after block, and
// from an older block when asked for its height.
func TestQueriesReadTheLatestCommittedBlock(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "bob"))
	bob := a.Account("bob").Address
	balance := func(height int64) sdkmath.Int {
		t.Helper()
		bz, err := (&banktypes.QueryBalanceRequest{Address: bob.String(), Denom: "udps"}).Marshal()
		require.NoError(t, err)
		res, err := a.Query(context.Background(), &abci.RequestQuery{Path: "/cosmos.bank.v1beta1.Query/Balance", Data: bz, Height: height})
		require.NoError(t, err)
		require.Zero(t, res.Code, res.Log)
		var out banktypes.QueryBalanceResponse
		require.NoError(t, out.Unmarshal(res.Value))
		return out.Balance.Amount
	}
	heights, balances := []int64{a.Height()}, []sdkmath.Int{a.Balance(bob, "udps")}
	require.Equal(t, balances[0], balance(0))
	for i := int64(1); i <= 3; i++ {
		a.MustDeliver("client", banktypes.NewMsgSend(a.Account("client").Address, bob, sdk.NewCoins(sdk.NewInt64Coin("udps", 1000*i))))
		want := balances[len(balances)-1].AddRaw(1000 * i)
		require.Equal(t, want, a.Balance(bob, "udps"))
		require.Equal(t, want, balance(0), "the latest block, right after its commit")
		require.Equal(t, want, balance(a.Height()), "the latest block by its height")
		heights, balances = append(heights, a.Height()), append(balances, want)
	}
	for i, h := range heights {
		require.Equal(t, balances[i], balance(h), "block %d", h)
	}
}
