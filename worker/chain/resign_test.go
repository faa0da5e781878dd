package chain

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	sdk "github.com/cosmos/cosmos-sdk/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app/encoding"
)

// racedNode accepts every tx into its mempool and loses it, and each time another tx of
// the account takes the lost one's sequence first (a second process signing with the
// same key, racing this one): its index shows that other tx under every sequence asked.
type racedNode struct {
	usedSequenceNode
	sent [][]byte
}

func (n *racedNode) Simulate(context.Context, *txtypes.SimulateRequest, ...grpc.CallOption) (*txtypes.SimulateResponse, error) {
	return &txtypes.SimulateResponse{GasInfo: &sdk.GasInfo{GasUsed: 50_000}}, nil
}

func (n *racedNode) BroadcastTx(ctx context.Context, req *txtypes.BroadcastTxRequest, opts ...grpc.CallOption) (*txtypes.BroadcastTxResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, bz := range n.sent {
		if string(bz) == string(req.TxBytes) { // a resend: the sequence is used
			return n.usedSequenceNode.BroadcastTx(ctx, req, opts...)
		}
	}
	n.sent = append(n.sent, req.TxBytes)
	return &txtypes.BroadcastTxResponse{TxResponse: &sdk.TxResponse{TxHash: fmt.Sprintf("%X", sha256.Sum256(req.TxBytes))}}, nil
}

// A request whose tx is lost and its sequence taken every time is signed anew maxResign
// times, not for ever, and then fails its caller with ErrSequenceUsed.
func TestSignerResignsALostTxABoundedNumberOfTimes(t *testing.T) {
	defer FastResend(20 * time.Millisecond)()
	enc, err := encoding.Make()
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	node := &racedNode{usedSequenceNode: usedSequenceNode{expected: 1 << 20, got: 0, users: []*sdk.TxResponse{{TxHash: "0F0F", Height: 3}}}}
	var resent int
	var mu sync.Mutex
	c := &Client{cfg: Config{InclusionTimeout: 10 * time.Second, ChainID: "flops-test-1", GasAdjustment: 1, Denom: "udps",
		Resent: func() { mu.Lock(); resent++; mu.Unlock() }}, log: log, enc: enc, Tx: node}
	priv := secp256k1.GenPrivKey()
	s := NewSigner(c, priv, log)
	s.accNum, s.seq, s.loaded = 1, 5, true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Run(ctx) }()
	addr := s.Address()
	_, err = s.Submit(ctx, banktypes.NewMsgSend(addr, addr, sdk.NewCoins(sdk.NewInt64Coin("udps", 1))))
	require.True(t, errors.Is(err, ErrSequenceUsed), "%v", err)
	node.mu.Lock()
	defer node.mu.Unlock()
	require.Len(t, node.sent, 1+maxResign, "the first signature and maxResign more")
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, maxResign, resent, "each new signature counted")
}
