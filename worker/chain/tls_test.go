package chain_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"

	"github.com/flopsnet/flops/testutil/testdirs"
	"github.com/flopsnet/flops/worker/chain"
)

type tlsNode struct {
	cmtservice.UnimplementedServiceServer
}

func (*tlsNode) GetLatestBlock(context.Context, *cmtservice.GetLatestBlockRequest) (*cmtservice.GetLatestBlockResponse, error) {
	return &cmtservice.GetLatestBlockResponse{SdkBlock: &cmtservice.Block{Header: cmtservice.Header{ChainID: "flops-tls-1"}}}, nil
}

// The worker reaches a node behind TLS when told to (trusting the given certificates),
// and a plaintext worker does not get through to it.
func TestDialOverTLS(t *testing.T) {
	certFile, keyFile, pool := testdirs.SelfSigned(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	cmtservice.RegisterServiceServer(srv, &tlsNode{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	log := slog.New(slog.DiscardHandler)

	c, err := chain.Dial(context.Background(), chain.Config{GRPC: ln.Addr().String(), TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, log)
	require.NoError(t, err)
	require.Equal(t, "flops-tls-1", c.ChainID())
	require.NoError(t, c.Close())

	_, err = chain.Dial(context.Background(), chain.Config{GRPC: ln.Addr().String()}, log)
	require.Error(t, err, "plaintext to a TLS node")
	_, err = chain.Dial(context.Background(), chain.Config{GRPC: ln.Addr().String(), TLS: &tls.Config{MinVersion: tls.VersionTLS12}}, log)
	require.Error(t, err, "a certificate nobody trusts")
}

// A worker whose node is down when it starts (started first, or the node restarting)
// waits for it instead of exiting: found when a worker restarted after a crash died
// because its validator was restarting too (TestDemoWorkerAndChainCrash). Without
// WaitForNode, Dial still fails at once (the CLI's commands).
func TestDialWaitsForItsNode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens yet
	log := slog.New(slog.DiscardHandler)

	_, err = chain.Dial(context.Background(), chain.Config{GRPC: addr}, log)
	require.Error(t, err, "a CLI command fails at once")

	srv := grpc.NewServer()
	cmtservice.RegisterServiceServer(srv, &tlsNode{})
	defer srv.Stop()
	go func() {
		time.Sleep(1500 * time.Millisecond) // the node comes up after the worker
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			_ = srv.Serve(ln)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := chain.Dial(ctx, chain.Config{GRPC: addr, WaitForNode: true}, log)
	require.NoError(t, err)
	require.Equal(t, "flops-tls-1", c.ChainID())
	require.NoError(t, c.Close())
}
