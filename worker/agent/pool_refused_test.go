package agent_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/config"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A pool member whose node the chain no longer lets claim units (here: scored below a
// raised minimum) would compute every open unit, pinning its GPUs for it, and have each
// claim refused, block after block. After one refusal the worker leaves the pool alone for
// agent.RefusedPoolBlocks blocks: over 12 blocks it sends one claim, not one a block.
func TestWorkerStopsRacingAPoolThatRefusesItsNode(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", func(c *config.Config) { c.Pools.Auto = true; c.Pools.MaxClaims = 1 })
	pool := gemmPool(t, a, 5)
	q := markettypesQuery(a)
	member := func() bool {
		res, err := q.PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: pool})
		require.NoError(t, err)
		return len(res.Members) == 1
	}
	until(t, a, 20, "the worker joined the pool", member, w)
	// the minimum score rises above the node's (0.5, a new operator's)
	mu.Lock()
	a.Prepare(func(ctx sdk.Context) {
		p, err := a.ReputationKeeper.Params.Get(ctx)
		require.NoError(t, err)
		p.MinScore = sdkmath.LegacyNewDecWithPrec(6, 1)
		require.NoError(t, a.ReputationKeeper.Params.Set(ctx, p))
	})
	mu.Unlock()
	claims := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range *w.sent {
			if m == sdk.MsgTypeURL(&markettypes.MsgCommitUnit{}) {
				n++
			}
		}
		return n
	}
	before := claims()
	for range 12 {
		tick(t, a, w)
		time.Sleep(300 * time.Millisecond) // the unit is computed beside the loop, and its claim sent
	}
	res, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: pool})
	require.NoError(t, err)
	require.EqualValues(t, 5, res.Pool.OpenUnits, "no unit taken by the refused node")
	require.Equal(t, 1, claims()-before, "one refused claim, then the pool left alone")
}
