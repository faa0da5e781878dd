package chain

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	sdk "github.com/cosmos/cosmos-sdk/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app/encoding"
)

// usedSequenceNode finds no tx by its hash and refuses every broadcast as a used
// sequence ("expected", "got"): a node whose index lags its commits. Its index of the
// ante handler's tx.acc_seq events answers from users, one answer a query (the last
// one again when they run out).
type usedSequenceNode struct {
	txtypes.ServiceClient
	expected, got uint64
	users         []*sdk.TxResponse

	mu      sync.Mutex
	queries []string
}

func (n *usedSequenceNode) GetTx(context.Context, *txtypes.GetTxRequest, ...grpc.CallOption) (*txtypes.GetTxResponse, error) {
	return nil, status.Error(codes.NotFound, "tx not found")
}

func (n *usedSequenceNode) BroadcastTx(context.Context, *txtypes.BroadcastTxRequest, ...grpc.CallOption) (*txtypes.BroadcastTxResponse, error) {
	return &txtypes.BroadcastTxResponse{TxResponse: &sdk.TxResponse{Codespace: "sdk", Code: 32,
		RawLog: fmt.Sprintf("account sequence mismatch, expected %d, got %d: incorrect account sequence", n.expected, n.got)}}, nil
}

func (n *usedSequenceNode) GetTxsEvent(_ context.Context, req *txtypes.GetTxsEventRequest, _ ...grpc.CallOption) (*txtypes.GetTxsEventResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queries = append(n.queries, req.Query)
	if len(n.users) == 0 {
		return &txtypes.GetTxsEventResponse{}, nil
	}
	u := n.users[0]
	if len(n.users) > 1 {
		n.users = n.users[1:]
	}
	if u == nil {
		return &txtypes.GetTxsEventResponse{}, nil
	}
	return &txtypes.GetTxsEventResponse{TxResponses: []*sdk.TxResponse{u}}, nil
}

// WaitTx on a tx whose resend the node refuses as a used sequence: the tx that used it,
// found in the chain's index, decides. This tx: its result (a new signature would apply
// its msgs twice). Another: ErrSequenceUsed, once the index has it. A refusal that
// expects an earlier sequence (txs before this one lost too) is no use of this one.
func TestWaitTxAsksTheIndexWhoUsedTheSequence(t *testing.T) {
	defer FastResend(20 * time.Millisecond)()
	enc, err := encoding.Make()
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	priv := secp256k1.GenPrivKey()
	addr := sdk.AccAddress(priv.PubKey().Address())
	signed := func(c *Client) (string, []byte) {
		s := NewSigner(c, priv, log)
		msg := banktypes.NewMsgSend(addr, addr, sdk.NewCoins(sdk.NewInt64Coin("udps", 1)))
		bz, err := s.sign(&request{msgs: []sdk.Msg{msg}}, 5, 100_000, true)
		require.NoError(t, err)
		return fmt.Sprintf("%X", sha256.Sum256(bz)), bz
	}
	query := fmt.Sprintf("tx.acc_seq='%s/5'", addr)
	wait := func(node *usedSequenceNode, timeout time.Duration) (*TxResult, error) {
		c := &Client{cfg: Config{InclusionTimeout: timeout, ChainID: "flops-test-1"}, log: log, enc: enc, Tx: node}
		hash, bz := signed(c)
		for _, u := range node.users {
			if u != nil && u.TxHash == "" {
				u.TxHash = hash
			}
		}
		return c.WaitTx(context.Background(), strings.ToLower(hash), bz)
	}

	t.Run("ThisTx", func(t *testing.T) {
		node := &usedSequenceNode{expected: 6, got: 5, users: []*sdk.TxResponse{{Height: 9}}}
		res, err := wait(node, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, int64(9), res.Height, "the tx's own result, from the index")
		require.Equal(t, []string{query}, node.queries, "the account and sequence the tx was signed with")
	})
	t.Run("AnotherTx", func(t *testing.T) {
		other := &sdk.TxResponse{TxHash: "0F0F", Height: 11}
		node := &usedSequenceNode{expected: 6, got: 5, users: []*sdk.TxResponse{nil, nil, other}}
		_, err := wait(node, 10*time.Second)
		require.True(t, errors.Is(err, ErrSequenceUsed), "%v", err)
		require.ErrorContains(t, err, "tx 0F0F (height 11) took it")
		require.Len(t, node.queries, 3, "asked again until the index had the tx that used it")
	})
	t.Run("AnEarlierSequenceExpected", func(t *testing.T) {
		node := &usedSequenceNode{expected: 4, got: 5, users: []*sdk.TxResponse{{TxHash: "0F0F", Height: 11}}}
		_, err := wait(node, 300*time.Millisecond)
		require.ErrorIs(t, err, context.DeadlineExceeded, "the tx may still be in a block once the earlier ones are")
		require.Empty(t, node.queries, "sequence 5 is not used yet: nothing to ask")
	})
}

// racedNode accepts every tx into its mempool and loses it, and each time another tx of
// the account takes the lost one's sequence first (a second process signing with the
// same key, racing this one): its index shows that other tx under every sequence asked.
type racedNode struct {
	usedSequenceNode
	sent [][]byte
}

// simulatingNode answers every simulation (the ABCI query "/app/simulate") with 50,000
// gas used, as baseapp writes it.
type simulatingNode struct{ cmtservice.ServiceClient }

func (simulatingNode) ABCIQuery(_ context.Context, req *cmtservice.ABCIQueryRequest, _ ...grpc.CallOption) (*cmtservice.ABCIQueryResponse, error) {
	if req.Path != "/app/simulate" {
		return nil, status.Errorf(codes.Unimplemented, "query %s", req.Path)
	}
	return &cmtservice.ABCIQueryResponse{Value: []byte(`{"gas_info":{"gas_wanted":"0","gas_used":"50000"},"result":{"events":[]}}`)}, nil
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
		Resent: func() { mu.Lock(); resent++; mu.Unlock() }}, log: log, enc: enc, Tx: node, Node: simulatingNode{}}
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
