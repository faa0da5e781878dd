package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// methodCalls counts a connection's calls by gRPC method.
type methodCalls struct {
	grpc.ClientConnInterface
	mu    sync.Mutex
	calls map[string]int
}

func (m *methodCalls) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	m.mu.Lock()
	m.calls[method]++
	m.mu.Unlock()
	return m.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func (m *methodCalls) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// A worker in a pool reads its credits there once in ten blocks, not every block: a node
// that serves many workers answered a PoolEarnings query a block for each pool of each of
// them. Its credits still come out: here the owner closes the pool, and the closed pool's
// credits are read, and withdrawn, at the next block, and not read again once gone.
func TestWorkerReadsItsPoolCreditsOnceInTenBlocks(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	calls := &methodCalls{ClientConnInterface: a.QueryConn(), calls: map[string]int{}}
	w := newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{conn: calls},
		func(c *config.Config) { c.Pools.Auto, c.Pools.MaxClaims = true, 1 })
	pool := gemmPool(t, a, 1)
	q := markettypesQuery(a)
	until(t, a, 40, "the unit paid", func() bool {
		res, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: pool})
		require.NoError(t, err)
		return res.Pool.PaidUnits == 1
	}, w)
	const earnings = "/flops.market.v1.Query/PoolEarnings"
	before := calls.count(earnings)
	for range 30 {
		tick(t, a, w)
	}
	require.LessOrEqual(t, calls.count(earnings)-before, 3, "30 blocks, a read in 10")

	a.MustDeliver("client", &markettypes.MsgClosePool{Owner: a.Account("client").String(), PoolId: pool})
	until(t, a, 3, "the closed pool's credits withdrawn", func() bool {
		time.Sleep(20 * time.Millisecond) // the withdrawal is sent beside the loop
		res, err := q.PoolEarnings(a.Ctx(), &markettypes.QueryPoolEarningsRequest{PoolId: pool, Provider: a.Account("p1").String()})
		require.NoError(t, err)
		return res.Earnings.IsNil() || res.Earnings.IsZero()
	}, w)
	before = calls.count(earnings)
	for range 5 {
		tick(t, a, w)
	}
	require.LessOrEqual(t, calls.count(earnings)-before, 1, "a closed pool's credits, once withdrawn, are not read every block")
}
