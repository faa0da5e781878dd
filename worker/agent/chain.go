package agent

import (
	"context"
	"time"

	"google.golang.org/grpc"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/chain"
)

// Chain is what the agent needs of the chain: its height, a gRPC connection for queries
// (the beacon's values among them), and one signer's transactions. *chain.Client with a
// *chain.Signer is the real one (Remote); tests use an in-process app.
type Chain interface {
	Address() sdk.AccAddress
	Height(ctx context.Context) (int64, time.Time, error)
	Conn() grpc.ClientConnInterface
	Submit(ctx context.Context, msgs ...sdk.Msg) (*chain.TxResult, error)
}

// Remote is a Chain over a node's gRPC endpoint.
type Remote struct {
	*chain.Client
	Signer *chain.Signer
}

var _ Chain = Remote{}

// Address implements Chain.
func (r Remote) Address() sdk.AccAddress { return r.Signer.Address() }

// Conn implements Chain.
func (r Remote) Conn() grpc.ClientConnInterface { return r.Client.Conn() }

// Submit implements Chain.
func (r Remote) Submit(ctx context.Context, msgs ...sdk.Msg) (*chain.TxResult, error) {
	return r.Signer.Submit(ctx, msgs...)
}
