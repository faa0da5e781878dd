package agent

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	sdk "github.com/cosmos/cosmos-sdk/types"
	grpctypes "github.com/cosmos/cosmos-sdk/types/grpc"

	"github.com/flopsnet/flops/worker/chain"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// laggingMarket answers Params at the heights given, one per call (then the last), in the
// x-cosmos-block-height header, as a node whose app is still executing the latest block
// it stored does.
type laggingMarket struct {
	markettypes.QueryClient
	heights []int64
	calls   int
}

func (m *laggingMarket) Params(_ context.Context, _ *markettypes.QueryParamsRequest, opts ...grpc.CallOption) (*markettypes.QueryParamsResponse, error) {
	h := m.heights[min(m.calls, len(m.heights)-1)]
	m.calls++
	for _, o := range opts {
		if hdr, ok := o.(grpc.HeaderCallOption); ok {
			*hdr.HeaderAddr = metadata.Pairs(grpctypes.GRPCBlockHeightHeader, strconv.FormatInt(h, 10))
		}
	}
	return &markettypes.QueryParamsResponse{Params: markettypes.DefaultParams()}, nil
}

// A tick reads the state of its own height: while the node's app has not committed the
// block the worker saw stored (its queries answer at the height before), the tick waits
// for it. Before, it went on at once with the state before the block, and a task the
// block assigned was taken up a block later (make load-worker: p50 2.6 s from the
// assigning block's commit to the start of the task).
func TestTickWaitsForTheStateOfItsHeight(t *testing.T) {
	m := &laggingMarket{heights: []int64{41, 41, 41, 42}}
	a := &Agent{market: m}
	_, err := a.paramsAt(context.Background(), 42)
	require.NoError(t, err)
	require.Equal(t, 4, m.calls, "read again until the app answers at height 42")

	// a node that says no height (or an app ahead of the block store) is not waited for
	m = &laggingMarket{heights: []int64{0}}
	a.market = m
	_, err = a.paramsAt(context.Background(), 42)
	require.NoError(t, err)
	require.Equal(t, 1, m.calls)
	m = &laggingMarket{heights: []int64{43}}
	a.market = m
	_, err = a.paramsAt(context.Background(), 42)
	require.NoError(t, err)
	require.Equal(t, 1, m.calls)
}

// slowChain is a Chain whose transactions land when release is closed, as under load a tx
// waits blocks behind others; it counts what was sent.
type slowChain struct {
	stubChain
	release chan struct{}
	mu      sync.Mutex
	sent    int
}

func (c *slowChain) Submit(ctx context.Context, _ ...sdk.Msg) (*chain.TxResult, error) {
	c.mu.Lock()
	c.sent++
	c.mu.Unlock()
	select {
	case <-c.release:
		return &chain.TxResult{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// The loop does not wait for a tick's transactions (it went on to the next block only
// once they had landed: under load 2-5 s, and the tasks assigned by the blocks in between
// were started late), and an action whose transaction is still on its way is not sent
// again by the next tick.
func TestTickDoesNotWaitForItsTransactions(t *testing.T) {
	c := &slowChain{stubChain: stubChain{addr: sdk.AccAddress(make([]byte, 20))}, release: make(chan struct{})}
	a := &Agent{o: Options{Chain: c}, log: slog.New(slog.DiscardHandler), inflight: map[string]bool{}, bg: &errgroup.Group{}}
	landed := make(chan error, 2)
	ack := func() action {
		return action{what: "ack task 7", msgs: msgs(&markettypes.MsgAckTask{TaskId: 7}), after: func(err error) { landed <- err }}
	}
	done := make(chan struct{})
	go func() {
		a.perform(context.Background(), []action{ack()})
		a.perform(context.Background(), []action{ack()}) // the next tick, the ack still on its way
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("perform waited for the transaction to land")
	}
	close(c.release)
	require.NoError(t, <-landed)
	require.NoError(t, a.bg.Wait())
	require.Equal(t, 1, c.sent, "the ack in flight was not sent twice")
	require.Empty(t, a.inflight, "a landed action is no longer in flight")
	a.perform(context.Background(), []action{ack()}) // a later tick may send it again
	require.NoError(t, a.bg.Wait())
	require.Equal(t, 2, c.sent)
}
