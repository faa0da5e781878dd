package chain_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	nodeservice "github.com/cosmos/cosmos-sdk/client/grpc/node"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	flopschain "github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/testutil/network"
	"github.com/flopsnet/flops/worker/chain"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// losingNode answers the first broadcast as a node whose CheckTx accepted the tx, and
// drops it, as a validator killed right after does; later broadcasts reach the node,
// except the lost tx's own while unreachable is set (they fail as at a node restarting).
type losingNode struct {
	txtypes.ServiceClient
	unreachable atomic.Bool
	mu          sync.Mutex
	sent        [][]byte
}

func (l *losingNode) BroadcastTx(ctx context.Context, req *txtypes.BroadcastTxRequest, opts ...grpc.CallOption) (*txtypes.BroadcastTxResponse, error) {
	l.mu.Lock()
	l.sent = append(l.sent, req.TxBytes)
	first := len(l.sent) == 1
	again := bytes.Equal(req.TxBytes, l.sent[0])
	l.mu.Unlock()
	switch {
	case first:
		return &txtypes.BroadcastTxResponse{TxResponse: &sdk.TxResponse{TxHash: fmt.Sprintf("%X", sha256.Sum256(req.TxBytes))}}, nil
	case again && l.unreachable.Load():
		return nil, status.Error(codes.Unavailable, "connection refused")
	}
	return l.ServiceClient.BroadcastTx(ctx, req, opts...)
}

// Against a real in-process node: 12 transactions submitted at once by one signer are all
// signed with distinct sequences and land; a transaction the chain refuses comes back as a
// *TxError with the chain's reason; the signer carries on after it.
func TestSignerAgainstNode(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process network: skipped with -short")
	}
	net, err := sdknetwork.New(t, t.TempDir(), network.DefaultConfig(1))
	require.NoError(t, err)
	defer net.Cleanup()
	_, err = net.WaitForHeightWithTimeout(2, 30*time.Second)
	require.NoError(t, err)
	val := net.Validators[0]

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var resent atomic.Int32
	c, err := chain.Dial(ctx, chain.Config{GRPC: val.AppConfig.GRPC.Address, Resent: func() { resent.Add(1) }}, log)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	require.Equal(t, network.ChainID, c.ChainID())

	rec, err := val.ClientCtx.Keyring.KeyByAddress(val.Address)
	require.NoError(t, err)
	priv, err := chain.LoadKey(val.ClientCtx.Keyring, rec.Name)
	require.NoError(t, err)
	s := chain.NewSigner(c, priv, log)
	require.Equal(t, val.Address, s.Address())
	go func() { _ = s.Run(ctx) }()

	to := sdk.AccAddress([]byte("recipient-of-the-tests"))
	send := func(amount int64) sdk.Msg {
		return banktypes.NewMsgSend(val.Address, to, sdk.NewCoins(sdk.NewInt64Coin(flopschain.BondDenom, amount)))
	}
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Submit(ctx, send(100))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "tx %d", i)
	}
	bal, err := c.Bank.Balance(ctx, &banktypes.QueryBalanceRequest{Address: to.String(), Denom: flopschain.BondDenom})
	require.NoError(t, err)
	require.Equal(t, int64(n*100), bal.Balance.Amount.Int64())

	// more than the validator has: refused with the chain's reason
	_, err = s.Submit(ctx, send(1_000_000_000_000_000))
	var txErr *chain.TxError
	require.True(t, errors.As(err, &txErr), "%v", err)
	require.Contains(t, txErr.Log, "insufficient funds")
	require.ErrorIs(t, err, sdkerrors.ErrInsufficientFunds, "told by its codespace and code")
	// a module's refusal is told by its registered error, not by its text
	_, err = s.Submit(ctx, &markettypes.MsgWithdrawBid{Provider: val.Address.String(), JobId: 999, NodeId: 1})
	require.ErrorIs(t, err, markettypes.ErrBidNotFound)
	require.NotErrorIs(t, err, markettypes.ErrBidBinding)
	require.NotErrorIs(t, err, sdkerrors.ErrInsufficientFunds)
	// a query for what the chain does not have answers NotFound (the output server tells
	// an unknown task by it)
	_, err = c.Market.Task(ctx, &markettypes.QueryTaskRequest{TaskId: 999})
	require.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	res, err := s.Submit(ctx, send(1))
	require.NoError(t, err, "the signer carries on")
	require.NotZero(t, res.Height)
	require.NotEmpty(t, res.Responses, "the msg responses are decoded")

	// a tx of ours that the node accepted and then lost (its validator was killed and
	// restarted: the mempool went with it) leaves the signer one sequence ahead of the
	// chain; another process signing with the key leaves it behind. Either way the node's
	// sequence is taken once the mismatch outlasts a block's lag, and the worker's txs land
	// again (before, every later tx was refused in simulation for ever).
	defer chain.FastSimulateRetries(10 * time.Millisecond)()
	t.Run("TxLostWithTheNodesMempool", func(t *testing.T) {
		s.SkipSequence()
		_, err := s.Submit(ctx, send(1))
		require.NoError(t, err, "the signer recovers from a tx the node lost")
	})
	t.Run("KeySignedByAnotherProcess", func(t *testing.T) {
		other := chain.NewSigner(c, priv, log)
		go func() { _ = other.Run(ctx) }()
		_, err := other.Submit(ctx, send(1))
		require.NoError(t, err)
		res, err = s.Submit(ctx, send(1))
		require.NoError(t, err, "the signer recovers from a tx another process signed with its key")
	})
	// a tx CheckTx accepted and the node then lost with its mempool (a validator killed
	// and restarted): the same signed bytes are sent again while the tx is in no block,
	// and it lands. Before, the signer waited the whole inclusion timeout and failed its
	// caller (a PoCP reveal past its window in the demo's chain crash).
	// losing puts a losingNode before the node for the rest of a subtest, the lost tx sent
	// again every resend; wait bounds the subtest's Submits
	losing := func(t *testing.T, resend time.Duration) (lose *losingNode, wait context.Context) {
		t.Cleanup(chain.FastResend(resend))
		lose = &losingNode{ServiceClient: c.Tx}
		c.Tx = lose
		t.Cleanup(func() { c.Tx = lose.ServiceClient })
		wait, cancelWait := context.WithTimeout(ctx, 20*time.Second)
		t.Cleanup(cancelWait)
		return lose, wait
	}
	t.Run("TxAcceptedThenLostByTheNode", func(t *testing.T) {
		lose, wait := losing(t, 200*time.Millisecond)
		require.Zero(t, resent.Load(), "no tx was lost before")
		res, err := s.Submit(wait, send(1))
		require.NoError(t, err, "the lost tx is sent again and lands")
		require.EqualValues(t, 1, resent.Load(), "the node took the lost tx again once (the metric's count)")
		require.NotZero(t, res.Height)
		require.GreaterOrEqual(t, len(lose.sent), 2)
		for _, bz := range lose.sent[1:] {
			require.Equal(t, lose.sent[0], bz, "the same signed bytes, not a new signature")
		}
	})
	// the node loses tx A, and before A is sent again the signer's next tx B, refused one
	// sequence ahead, takes the node's sequence, which is A's, and lands: A can never be
	// in a block. The signer finds B under A's sequence in the chain's index and signs A's
	// msgs anew. Before, A's caller waited the whole inclusion timeout and failed (a
	// reveal or a commit past its window), its msgs never applied.
	t.Run("TxLostAndItsSequenceUsedMeanwhile", func(t *testing.T) {
		lose, wait := losing(t, 200*time.Millisecond)
		lose.unreachable.Store(true) // A is not sent again before B lands
		before := resent.Load()
		type result struct {
			res *chain.TxResult
			err error
		}
		a := make(chan result, 1)
		go func() {
			res, err := s.Submit(wait, send(1))
			a <- result{res, err}
		}()
		require.Eventually(t, func() bool {
			lose.mu.Lock()
			defer lose.mu.Unlock()
			return len(lose.sent) == 1
		}, 5*time.Second, 10*time.Millisecond, "A was sent and lost")
		b, err := s.Submit(wait, send(2)) // not A's msg: at A's sequence that would be A's very bytes
		require.NoError(t, err, "B takes the node's sequence and lands")
		lose.unreachable.Store(false)
		ra := <-a
		require.NoError(t, ra.err, "A's msgs are signed anew and land, before the inclusion timeout")
		require.Greater(t, ra.res.Height, b.Height, "A lands after B")
		lose.mu.Lock()
		lost := fmt.Sprintf("%X", sha256.Sum256(lose.sent[0]))
		lose.mu.Unlock()
		require.NotEqual(t, lost, ra.res.Hash, "a new signature, at the next sequence")
		require.Equal(t, before+1, resent.Load(), "the re-signed tx counts as one the node lost and took again")
	})
	bal, err = c.Bank.Balance(ctx, &banktypes.QueryBalanceRequest{Address: to.String(), Denom: flopschain.BondDenom})
	require.NoError(t, err)
	require.Equal(t, int64(n*100+8), bal.Balance.Amount.Int64(), "every tx applied once")

	// the height the app has committed, and that block's time, from the node service
	_, err = c.Status.Status(ctx, &nodeservice.StatusRequest{})
	require.NoError(t, err, "the node serves the node service's Status")
	h, bt, err := c.Height(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, h, res.Height)
	b, err := c.Node.GetBlockByHeight(ctx, &cmtservice.GetBlockByHeightRequest{Height: h})
	require.NoError(t, err)
	require.True(t, b.SdkBlock.Header.Time.Equal(bt), "block %d's time %s, Height said %s", h, b.SdkBlock.Header.Time, bt)
}
