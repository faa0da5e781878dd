package keeper_test

import (
	"context"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/testutil/keepertest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/reputation"
	"github.com/flopsnet/flops/x/reputation/keeper"
	"github.com/flopsnet/flops/x/reputation/types"
)

const epochID = "flops"

var dec = sdkmath.LegacyMustNewDecFromStr

// testParams are the defaults with small bounds so batching and trimming show in a few
// blocks: 2 nodes per block, 3 epochs of history.
func testParams() types.Params {
	p := types.DefaultParams()
	p.MaxUpdatesPerBlock = 2
	p.HistoryLength = 3
	return p
}

// fakeGFL is x/gfl's node registry; panics makes GetNode panic (a broken dependency).
type fakeGFL struct {
	nodes  map[uint64]gfltypes.Node
	panics bool
}

func (f *fakeGFL) GetNode(_ context.Context, id uint64) (gfltypes.Node, error) {
	if f.panics {
		panic("gfl is broken")
	}
	n, ok := f.nodes[id]
	if !ok {
		return n, errorsmod.Wrapf(gfltypes.ErrNodeNotFound, "node %d", id)
	}
	return n, nil
}

// fixture is the keeper on a fresh store with a fake x/gfl and the module's invariants.
type fixture struct {
	t   *testing.T
	ctx sdk.Context
	env keepertest.Env
	k   keeper.Keeper
	ms  types.MsgServer
	qs  types.QueryServer
	gfl *fakeGFL
	inv *invariant.Set
}

func newFixture(t *testing.T, params ...func(*types.Params)) *fixture {
	t.Helper()
	env := keepertest.NewEnv(t, types.StoreKey, reputation.AppModule{})
	gfl := &fakeGFL{nodes: map[uint64]gfltypes.Node{}}
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, gfl, nil)
	gs := types.DefaultGenesisState()
	gs.Params = testParams()
	for _, mutate := range params {
		mutate(&gs.Params)
	}
	require.NoError(t, k.InitGenesis(env.Ctx, gs))
	inv := &invariant.Set{}
	reputation.NewAppModule(env.Codec, k).RegisterInvariants(inv)
	return &fixture{
		t: t, ctx: env.Ctx.WithEventManager(sdk.NewEventManager()), env: env, k: k,
		ms: keeper.NewMsgServerImpl(k), qs: keeper.NewQueryServerImpl(k), gfl: gfl, inv: inv,
	}
}

// operator is a deterministic provider account.
func operator(seed string) string { return keepertest.Addr(seed) }

func accAddr(seed string) sdk.AccAddress { return sdk.MustAccAddressFromBech32(operator(seed)) }

// addNode registers a node with x/gfl (the fake) and announces it through the gfl hook,
// as x/gfl does on registration.
func (f *fixture) addNode(id uint64, op string) {
	f.t.Helper()
	n := gfltypes.Node{Id: id, Operator: operator(op)}
	f.gfl.nodes[id] = n
	require.NoError(f.t, f.k.GFLHooks().AfterNodeChanged(f.ctx, n))
}

// gflOnly registers a node with x/gfl without telling x/reputation.
func (f *fixture) gflOnly(id uint64, op string) {
	f.gfl.nodes[id] = gfltypes.Node{Id: id, Operator: operator(op)}
}

// endEpoch ends the params' x/epochs epoch.
func (f *fixture) endEpoch() {
	f.t.Helper()
	require.NoError(f.t, f.k.EpochHooks().AfterEpochEnd(f.ctx, epochID, 1))
}

// endBlock runs EndBlock on a fresh event manager and returns the node ids scored.
func (f *fixture) endBlock() []uint64 {
	f.t.Helper()
	f.ctx = f.ctx.WithEventManager(sdk.NewEventManager()).WithBlockHeight(f.ctx.BlockHeight() + 1)
	require.NoError(f.t, f.k.EndBlocker(f.ctx))
	var ids []uint64
	for _, ev := range typedEvents[*types.EventScoreUpdated](f.t, f.ctx) {
		ids = append(ids, ev.NodeId)
	}
	return ids
}

// scoreAll ends the epoch and runs EndBlock until nothing is pending.
func (f *fixture) scoreAll() {
	f.t.Helper()
	f.endEpoch()
	for range 100 {
		f.endBlock()
		st, err := f.k.Scoring.Get(f.ctx)
		require.NoError(f.t, err)
		if len(st.Pending) == 0 {
			return
		}
	}
	f.t.Fatal("scoring did not finish in 100 blocks")
}

func (f *fixture) score(id uint64) types.NodeScore {
	f.t.Helper()
	s, err := f.k.Scores.Get(f.ctx, id)
	require.NoError(f.t, err)
	return s
}

func (f *fixture) scoring() types.ScoringState {
	f.t.Helper()
	st, err := f.k.Scoring.Get(f.ctx)
	require.NoError(f.t, err)
	return st
}

// counters returns the node's counters of the current epoch through the Score query.
func (f *fixture) counters(id uint64) types.EpochCounters {
	f.t.Helper()
	res, err := f.qs.Score(f.ctx, &types.QueryScoreRequest{NodeId: id})
	require.NoError(f.t, err)
	return res.Counters
}

func (f *fixture) requireInvariants() {
	f.t.Helper()
	require.NoError(f.t, f.inv.AssertAll(f.ctx))
}

// typedEvents parses every event of type T emitted on the context so far.
func typedEvents[T proto.Message](t *testing.T, ctx sdk.Context) []T {
	t.Helper()
	var out []T
	for _, e := range ctx.EventManager().Events() {
		msg, err := sdk.ParseTypedEvent(abci.Event(e))
		if err != nil {
			continue
		}
		if m, ok := msg.(T); ok {
			out = append(out, m)
		}
	}
	return out
}
