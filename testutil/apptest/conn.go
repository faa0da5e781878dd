package apptest

import (
	"context"
	"fmt"
	"net"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	serverconfig "github.com/cosmos/cosmos-sdk/server/config"
	servergrpc "github.com/cosmos/cosmos-sdk/server/grpc"
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

// GRPCConn is a client connection to the app's gRPC endpoint as flopsd start serves it:
// the SDK's gRPC server, with baseapp's query interceptor and so the app's query gas
// limit (QueryConn calls the query router directly, unbounded), on an in-memory listener
// closed with the test.
func (a *App) GRPCConn(t testing.TB) grpc.ClientConnInterface {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	clientCtx := client.Context{}.WithInterfaceRegistry(a.InterfaceRegistry()).WithTxConfig(a.TxConfig()).WithChainID(ChainID)
	srv, err := servergrpc.NewGRPCServer(clientCtx, a.App, serverconfig.DefaultConfig().GRPC)
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///node",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(codec.NewProtoCodec(a.InterfaceRegistry()).GRPCCodec())))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
