// Package e2e holds end-to-end tests: an in-process multi-validator network, and (behind
// the e2e build tag) localnets of real flopsd and flops-worker processes.
package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	clitestutil "github.com/cosmos/cosmos-sdk/testutil/cli"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authcodec "github.com/cosmos/cosmos-sdk/x/auth/codec"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/network"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Two validators make blocks (each with its VRF's randomness first: checkProposerRandomness), every flops module answers its params query over gRPC on
// every validator and every query route over REST (checkRESTRoutes), a bank send lands, and
// the TypeScript client signs every flops Msg in both sign modes (checkTSClient).
func TestNetworkBlocksParamsAndBankSend(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process network: skipped with -short")
	}
	cfg := network.DefaultConfig(2)
	net, err := sdkNetworkNew(t, cfg)
	require.NoError(t, err)
	defer net.Cleanup()

	h, err := net.WaitForHeightWithTimeout(3, 30*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, h, int64(3))

	for _, val := range net.Validators {
		if !val.AppConfig.GRPC.Enable { // the SDK network serves gRPC on validator 0 only
			continue
		}
		conn, err := grpc.NewClient(val.AppConfig.GRPC.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		gfl, err := gfltypes.NewQueryClient(conn).Params(ctx, &gfltypes.QueryParamsRequest{})
		require.NoError(t, err)
		require.Equal(t, gfltypes.DefaultParams().ChallengeSamples, gfl.Params.ChallengeSamples)
		d, err := dpstypes.NewQueryClient(conn).Params(ctx, &dpstypes.QueryParamsRequest{})
		require.NoError(t, err)
		require.Equal(t, dpstypes.DefaultParams().EmissionSharePpm, d.Params.EmissionSharePpm)
		m, err := markettypes.NewQueryClient(conn).Params(ctx, &markettypes.QueryParamsRequest{})
		require.NoError(t, err)
		require.Equal(t, markettypes.DefaultParams().TakeRatePpm, m.Params.TakeRatePpm)
		r, err := reputationtypes.NewQueryClient(conn).Params(ctx, &reputationtypes.QueryParamsRequest{})
		require.NoError(t, err)
		require.True(t, reputationtypes.DefaultParams().Alpha.Equal(r.Params.Alpha))
		s, err := stakingslashtypes.NewQueryClient(conn).Params(ctx, &stakingslashtypes.QueryParamsRequest{})
		require.NoError(t, err)
		require.Equal(t, stakingslashtypes.DefaultParams().RewardPpm, s.Params.RewardPpm)
		cancel()
		require.NoError(t, conn.Close())
	}

	checkRESTRoutes(t, net.Validators[0])
	checkQueryPageDefault(t, net.Validators[0])

	// validator 0 sends udps to validator 1
	v0, v1 := net.Validators[0], net.Validators[1]
	amount := sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 4242))
	before := balance(t, v0, v1.Address)
	out, err := clitestutil.MsgSendExec(v0.ClientCtx, v0.Address, v1.Address, amount, authcodec.NewBech32Codec(app.Bech32Prefix),
		"--yes", "--broadcast-mode=sync", fmt.Sprintf("--fees=%s", sdk.NewInt64Coin(app.BondDenom, 10)))
	require.NoError(t, err, out.String())
	require.NoError(t, net.RetryForBlocks(func() error {
		if got := balance(t, v0, v1.Address); !got.Equal(before.AddRaw(4242)) {
			return fmt.Errorf("balance %s, want %s", got, before.AddRaw(4242))
		}
		return nil
	}, 10))

	checkProposerRandomness(t, net, v0)
	checkWalletMetadata(t, v0)
	checkGRPCReflectionV1(t, v0)
	checkTSClient(t, net, v0)
}

func balance(t *testing.T, val *network.Validator, addr sdk.AccAddress) sdkmath.Int {
	t.Helper()
	conn, err := grpc.NewClient(val.AppConfig.GRPC.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	res, err := banktypes.NewQueryClient(conn).Balance(context.Background(), &banktypes.QueryBalanceRequest{Address: addr.String(), Denom: app.BondDenom})
	require.NoError(t, err)
	return res.Balance.Amount
}

func sdkNetworkNew(t *testing.T, cfg sdknetwork.Config) (*network.Network, error) {
	return sdknetwork.New(t, t.TempDir(), cfg)
}
