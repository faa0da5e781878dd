package agent_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
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

// A member whose place in a full pool went to another node (it could not claim then: its
// node was off the market) would go on computing the pool's units and have each claim
// refused as from a non-member, block after block. The worker stops racing the pool at the
// first such refusal, still reveals the claim it made there before (forgetting the pool
// at once had left it to lapse, slashed as a missed reveal), then forgets the pool and
// asks to join again.
func TestWorkerForgetsAPoolItWasEvictedFrom(t *testing.T) {
	a := appWithProviders(t, "p1", "p2")
	var mu sync.Mutex
	joinPool1 := func(c *config.Config) { c.Pools.Auto = false; c.Pools.Join = []uint64{1}; c.Pools.MaxClaims = 1 }
	// p1's reveals fail while failReveals is set (its node unreachable for a while): the
	// reveal is sent again at a later tick, which only a pool still followed gets
	var failReveals atomic.Bool
	w1 := newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{fail: func(msgs []sdk.Msg) error {
		for _, m := range msgs {
			if _, reveal := m.(*markettypes.MsgRevealUnit); reveal && failReveals.Load() {
				return errors.New("node unreachable")
			}
		}
		return nil
	}}, func(c *config.Config) { joinPool1(c); c.Pools.MaxClaims = 2 }) // a claim raced while one waits for its reveal
	owner := a.Account("client").String()
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM,
		UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 1,
		UnitMaxDuration: time.Minute,
	}
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: spec})
	q := markettypesQuery(a)
	memberIs := func(node uint64) func() bool {
		return func() bool {
			res, err := q.PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: 1})
			require.NoError(t, err)
			return len(res.Members) == 1 && res.Members[0].NodeId == node
		}
	}
	until(t, a, 20, "p1 joined pool 1", memberIs(w1.agent.Node().Id), w1)
	gq := gfltypes.NewQueryClient(a.QueryConn())
	until(t, a, 60, "p1's node has no challenge open", func() bool {
		res, err := gq.Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: w1.agent.Node().Id})
		require.NoError(t, err)
		return res.Node.OpenChallenge == 0
	}, w1)

	// p1 claims a unit; before it reveals, its node is off the market for a while and p2
	// joins the full pool in its place
	postUnits(a, 1, 1)
	var claimed uint64
	for i := 0; claimed == 0; i++ {
		require.Less(t, i, 20, "p1 claimed a unit")
		tick(t, a, w1)
		for deadline := time.Now().Add(3 * time.Second); claimed == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			for id := uint64(1); id <= 1; id++ {
				res, err := q.Unit(a.Ctx(), &markettypes.QueryUnitRequest{PoolId: 1, UnitId: id})
				require.NoError(t, err)
				if res.Unit.Status == markettypes.UNIT_STATUS_COMMITTED && res.Unit.NodeId == w1.agent.Node().Id {
					claimed = id
				}
			}
			mu.Unlock()
		}
	}
	p1 := a.Account("p1").String()
	a.MustDeliver("p1", &gfltypes.MsgDeactivateNode{Operator: p1, NodeId: w1.agent.Node().Id})
	w2 := newWorker(t, &mu, a, "p2", joinPool1)
	until(t, a, 20, "p2 took p1's place", memberIs(w2.agent.Node().Id), w2)
	a.MustDeliver("p1", &gfltypes.MsgReactivateNode{Operator: p1, NodeId: w1.agent.Node().Id})
	postUnits(a, 1, 4) // the units p1 races, with the one slot of its two its claim leaves

	count := func(msg sdk.Msg) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range *w1.sent {
			if m == sdk.MsgTypeURL(msg) {
				n++
			}
		}
		return n
	}
	claims, joins := count(&markettypes.MsgCommitUnit{}), count(&markettypes.MsgJoinPool{})
	failReveals.Store(true)
	for i := range 8 {
		failReveals.Store(i < 4) // the refused claim comes first, the reveal later
		tick(t, a, w1)
		time.Sleep(300 * time.Millisecond) // a unit is computed beside the loop, and its claim sent
	}
	refused := count(&markettypes.MsgCommitUnit{}) - claims
	require.True(t, refused >= 1 && refused <= 2, "%d claims refused: those raced at once (pools.max_claims 2), then no unit computed for the pool", refused)
	require.Positive(t, count(&markettypes.MsgJoinPool{})-joins, "it asks to join again")
	require.True(t, memberIs(w2.agent.Node().Id)(), "the pool stays p2's: p1 is eligible again, and p2 too")
	earned, err := q.PoolEarnings(a.Ctx(), &markettypes.QueryPoolEarningsRequest{PoolId: 1, Provider: p1})
	require.NoError(t, err)
	require.Positive(t, earned.Units, "p1 revealed unit %d, claimed before it lost its place", claimed)
	slashes, err := sstypes.NewQueryClient(a.QueryConn()).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: p1})
	require.NoError(t, err)
	require.Empty(t, slashes.Slashes, "no claim lapsed")
}
