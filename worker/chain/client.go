// Package chain is flops-worker's (and the load tools') connection to a flops node: one
// gRPC connection for queries and transactions, and a Signer per key that owns the key's
// account sequence, so that a worker never sends two transactions with one sequence.
package chain

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	nodeservice "github.com/cosmos/cosmos-sdk/client/grpc/node"
	"github.com/cosmos/cosmos-sdk/codec"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app/encoding"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Config says where the node is and how transactions are paid.
type Config struct {
	// GRPC is the node's gRPC address (host:port).
	GRPC string
	// TLS, when set, secures the connection (a node behind a TLS endpoint); nil: plaintext,
	// for a node on the same machine or private network.
	TLS *tls.Config
	// ChainID of the chain; empty: read from the node.
	ChainID string
	// GasPrice in udps per gas unit (the node's minimum-gas-prices or more).
	GasPrice float64
	// GasAdjustment multiplies the simulated gas (default 1.3).
	GasAdjustment float64
	// InclusionTimeout bounds the wait for a broadcast tx to be in a block (default 30 s).
	InclusionTimeout time.Duration
	// Denom of fees (default udps).
	Denom string
	// Resent, when set, is called for each tx the node had accepted and then lost (a
	// restarted node empties its mempool) and took again when WaitTx sent it once more,
	// or whose msgs the Signer signed anew because another tx had used its sequence.
	Resent func()
	// WaitForNode keeps Dial trying, with a backoff up to 30 s and a warning each time,
	// while the node does not answer (a worker started before its node, or while the
	// node restarts) until ctx ends; otherwise Dial fails at once (the CLI's commands).
	WaitForNode bool
}

func (c *Config) defaults() {
	if c.GasAdjustment == 0 {
		c.GasAdjustment = 1.3
	}
	if c.InclusionTimeout == 0 {
		c.InclusionTimeout = 30 * time.Second
	}
	if c.Denom == "" {
		c.Denom = "udps"
	}
}

// Client holds the connection, the app's codecs and the query clients.
type Client struct {
	cfg  Config
	log  *slog.Logger
	conn *grpc.ClientConn
	enc  encoding.Config

	Market     markettypes.QueryClient
	GFL        gfltypes.QueryClient
	Collateral sstypes.QueryClient
	Reputation reputationtypes.QueryClient
	DPS        dpstypes.QueryClient
	Auth       authtypes.QueryClient
	Bank       banktypes.QueryClient
	Tx         txtypes.ServiceClient
	Node       cmtservice.ServiceClient
	// Status is the node service: the height and time its app has committed.
	Status nodeservice.ServiceClient
}

// Dial connects to a node and reads its chain id when the config has none.
func Dial(ctx context.Context, cfg Config, log *slog.Logger) (*Client, error) {
	cfg.defaults()
	if cfg.GRPC == "" {
		return nil, errors.New("chain: no gRPC address")
	}
	enc, err := encoding.Make()
	if err != nil {
		return nil, fmt.Errorf("chain: codecs: %w", err)
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	conn, err := grpc.NewClient(cfg.GRPC,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(codec.NewProtoCodec(enc.InterfaceRegistry).GRPCCodec())),
	)
	if err != nil {
		return nil, fmt.Errorf("chain: dial %s: %w", cfg.GRPC, err)
	}
	c := &Client{
		cfg: cfg, log: log, conn: conn, enc: enc,
		Market: markettypes.NewQueryClient(conn), GFL: gfltypes.NewQueryClient(conn),
		Collateral: sstypes.NewQueryClient(conn), Reputation: reputationtypes.NewQueryClient(conn),
		DPS: dpstypes.NewQueryClient(conn), Auth: authtypes.NewQueryClient(conn), Bank: banktypes.NewQueryClient(conn),
		Tx: txtypes.NewServiceClient(conn), Node: cmtservice.NewServiceClient(conn),
		Status: nodeservice.NewServiceClient(conn),
	}
	if c.cfg.ChainID == "" {
		for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
			res, err := c.Node.GetLatestBlock(ctx, &cmtservice.GetLatestBlockRequest{})
			if err == nil {
				c.cfg.ChainID = res.SdkBlock.Header.ChainID
				break
			}
			if !cfg.WaitForNode || status.Code(err) != codes.Unavailable {
				_ = conn.Close()
				return nil, fmt.Errorf("chain: %s: %w", cfg.GRPC, err)
			}
			log.Warn("node unreachable; trying again", "grpc", cfg.GRPC, "in", wait, "err", err)
			select {
			case <-ctx.Done():
				_ = conn.Close()
				return nil, fmt.Errorf("chain: %s: %w (waiting for the node: %w)", cfg.GRPC, err, ctx.Err())
			case <-time.After(wait):
			}
		}
	}
	return c, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// ChainID is the chain's id.
func (c *Client) ChainID() string { return c.cfg.ChainID }

// Encoding returns the app's codecs.
func (c *Client) Encoding() encoding.Config { return c.enc }

// Conn is the gRPC connection (for other query clients).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Height returns the height and time of the latest block the node's app has committed:
// the state its queries answer from. It asks the node service's Status, a few bytes,
// rather than for the latest block, which is the whole block (megabytes of txs under
// load) and may be one CometBFT stored before the app executed it. A node that does not
// serve Status answers from its latest block.
func (c *Client) Height(ctx context.Context) (int64, time.Time, error) {
	st, err := c.Status.Status(ctx, &nodeservice.StatusRequest{})
	switch {
	case err == nil && st.Timestamp != nil:
		return int64(st.Height), *st.Timestamp, nil
	case err != nil && status.Code(err) != codes.Unimplemented:
		return 0, time.Time{}, err
	}
	res, err := c.Node.GetLatestBlock(ctx, &cmtservice.GetLatestBlockRequest{})
	if err != nil {
		return 0, time.Time{}, err
	}
	return res.SdkBlock.Header.Height, res.SdkBlock.Header.Time, nil
}

// WaitHeight polls until the chain reaches height (or ctx ends).
func (c *Client) WaitHeight(ctx context.Context, height int64, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		h, _, err := c.Height(ctx)
		if err == nil && h >= height {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
