package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	txtypes "github.com/cosmos/cosmos-sdk/types/tx"

	"github.com/flopsnet/flops/testutil/network"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// checkProposerRandomness: every validator reads its key file and proposes with its VRF.
// Each block from height 2 on starts with the proposer's MsgProposerRandomness, which
// succeeded, and the block's value says it was revealed; the block decodes through the
// SDK's block-with-txs query like any other.
func checkProposerRandomness(t *testing.T, net *network.Network, val *network.Validator) {
	t.Helper()
	conn, err := grpc.NewClient(val.AppConfig.GRPC.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txs := txtypes.NewServiceClient(conn)
	// CometBFT's latest block (what LatestHeight reads) is saved before the app commits
	// it, and the block query answers from the app's committed height: the block under
	// it is committed in both
	latest, err := net.LatestHeight()
	require.NoError(t, err)
	latest--
	require.GreaterOrEqual(t, latest, int64(2), "no block to check")
	proposers := map[string]bool{}
	for h := int64(2); h <= latest; h++ {
		b, err := txs.GetBlockWithTxs(ctx, &txtypes.GetBlockWithTxsRequest{Height: h})
		require.NoError(t, err, "block %d", h)
		require.NotEmpty(t, b.Txs, "block %d has no randomness tx", h)
		msgs := b.Txs[0].Body.Messages
		require.Len(t, msgs, 1)
		require.Equal(t, "/flops.gfl.v1.MsgProposerRandomness", msgs[0].TypeUrl, "block %d", h)
		require.Empty(t, b.Txs[0].Signatures, "placed unsigned")
		// CometBFT indexes a block's txs after it commits it, on its own: on a loaded
		// machine the latest block may not be searchable yet
		var res *txtypes.GetTxsEventResponse
		for try := 0; ; try++ {
			res, err = txs.GetTxsEvent(ctx, &txtypes.GetTxsEventRequest{Query: fmt.Sprintf("tx.height=%d AND message.action='/flops.gfl.v1.MsgProposerRandomness'", h)})
			require.NoError(t, err, "block %d", h)
			if len(res.TxResponses) > 0 || try == 50 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.Len(t, res.TxResponses, 1, "block %d", h)
		require.Zero(t, res.TxResponses[0].Code, res.TxResponses[0].RawLog)
		revealed := false
		for _, e := range res.TxResponses[0].Events {
			if e.Type == "flops.gfl.v1.EventBlockValue" {
				for _, a := range e.Attributes {
					switch a.Key {
					case "revealed":
						revealed = a.Value == "true"
					case "proposer":
						proposers[a.Value] = true
					}
				}
			}
		}
		require.True(t, revealed, "block %d", h)
	}
	if latest >= 5 {
		require.Len(t, proposers, len(net.Validators), "every validator proposed with its VRF")
	}
	v, err := gfltypes.NewQueryClient(conn).Beacon(ctx, &gfltypes.QueryBeaconRequest{Height: latest - 1})
	require.NoError(t, err)
	require.Equal(t, "block", v.Source)
	require.Len(t, v.Value, 32)
}
