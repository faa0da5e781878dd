package apptest

import (
	"context"
	"fmt"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cosmos/gogoproto/proto"
	"google.golang.org/grpc"
)

// QueryConn is a gRPC client connection served by the app's query router on the committed
// state, as a node's gRPC endpoint would: clients built on it (markettypes.NewQueryClient
// and the like) query the app in process.
func (a *App) QueryConn() grpc.ClientConnInterface { return queryConn{a} }

type queryConn struct{ a *App }

// Invoke implements grpc.ClientConnInterface.
func (q queryConn) Invoke(_ context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	route := q.a.GRPCQueryRouter().Route(method)
	if route == nil {
		return fmt.Errorf("apptest: no query handler for %s", method)
	}
	req, ok := args.(proto.Message)
	if !ok {
		return fmt.Errorf("apptest: %T is not a proto message", args)
	}
	bz, err := q.a.AppCodec().Marshal(req)
	if err != nil {
		return err
	}
	res, err := route(q.a.Ctx(), &abci.RequestQuery{Data: bz, Path: method, Height: q.a.Height()})
	if err != nil {
		return err
	}
	out, ok := reply.(proto.Message)
	if !ok {
		return fmt.Errorf("apptest: %T is not a proto message", reply)
	}
	return q.a.AppCodec().Unmarshal(res.Value, out)
}

// NewStream implements grpc.ClientConnInterface (no streaming queries).
func (q queryConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, fmt.Errorf("apptest: streams are not supported")
}
