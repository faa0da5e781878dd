package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/dps"
	"github.com/flopsnet/flops/x/dps/keeper"
	"github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

const (
	denom = types.Denom
	// dpsUnit is 1 DPS in udps and gflUnit 1 GFL in ugfl.
	dpsUnit = 1_000_000
	gflUnit = 1_000_000
)

var (
	training  = int32(gfltypes.WORKLOAD_CLASS_TRAINING)
	inference = int32(gfltypes.WORKLOAD_CLASS_INFERENCE)
	poolAddr  = authtypes.NewModuleAddress(types.ModuleName)
)

// testParams are round numbers so that the expected payouts can be written by hand:
// 20% share at the seed's 1 DPS = 100 GFL, half for availability, work capped at 4% of
// fees, inference work weighs twice training, 2 items per block, halvings far away.
func testParams() types.Params {
	p := types.DefaultParams()
	p.MaxPayoutsPerBlock = 2
	p.HalvingThreshold = sdkmath.NewInt(1_000_000 * gflUnit)
	for i := range p.WorkloadWeights {
		if int32(p.WorkloadWeights[i].Workload) == inference {
			p.WorkloadWeights[i].WeightPpm = 2_000_000
		}
	}
	return p
}

// fakeBank is a small x/bank in the test's store (prefixes the module never uses), so
// cache contexts roll its writes back with the keeper's, as with the real bank.
type fakeBank struct {
	balances collections.Map[collections.Pair[sdk.AccAddress, string], sdkmath.Int]
	supply   collections.Map[string, sdkmath.Int]
	// blocked refuses incoming sends; panicOnSendTo panics on a send to it.
	blocked       map[string]bool
	panicOnSendTo sdk.AccAddress
}

var _ types.BankKeeper = (*fakeBank)(nil)

func newFakeBank(storeService corestore.KVStoreService) *fakeBank {
	sb := collections.NewSchemaBuilder(storeService)
	b := &fakeBank{
		balances: collections.NewMap(sb, collections.NewPrefix(200), "fake_balances",
			collections.PairKeyCodec(sdk.AccAddressKey, collections.StringKey), sdk.IntValue),
		supply:  collections.NewMap(sb, collections.NewPrefix(201), "fake_supply", collections.StringKey, sdk.IntValue),
		blocked: map[string]bool{},
	}
	if _, err := sb.Build(); err != nil {
		panic(err)
	}
	return b
}

func (b *fakeBank) GetBalance(ctx context.Context, addr sdk.AccAddress, d string) sdk.Coin {
	v, err := b.balances.Get(ctx, collections.Join(addr, d))
	if err != nil {
		return sdk.NewCoin(d, sdkmath.ZeroInt())
	}
	return sdk.NewCoin(d, v)
}

func (b *fakeBank) GetSupply(ctx context.Context, d string) sdk.Coin {
	v, err := b.supply.Get(ctx, d)
	if err != nil {
		return sdk.NewCoin(d, sdkmath.ZeroInt())
	}
	return sdk.NewCoin(d, v)
}

func (b *fakeBank) set(ctx context.Context, addr sdk.AccAddress, v sdkmath.Int) {
	if err := b.balances.Set(ctx, collections.Join(addr, denom), v); err != nil {
		panic(err)
	}
}

// Mint creates udps in addr (genesis funding, replenishment, or tampering).
func (b *fakeBank) Mint(ctx context.Context, addr sdk.AccAddress, n int64) {
	b.set(ctx, addr, b.GetBalance(ctx, addr, denom).Amount.AddRaw(n))
	if err := b.supply.Set(ctx, denom, b.GetSupply(ctx, denom).Amount.AddRaw(n)); err != nil {
		panic(err)
	}
}

// Move moves udps between accounts without the keeper (replenishment by x/market's take).
func (b *fakeBank) Move(ctx context.Context, from, to sdk.AccAddress, n int64) {
	b.set(ctx, from, b.GetBalance(ctx, from, denom).Amount.SubRaw(n))
	b.set(ctx, to, b.GetBalance(ctx, to, denom).Amount.AddRaw(n))
}

func (b *fakeBank) SendCoinsFromModuleToAccount(ctx context.Context, module string, to sdk.AccAddress, amt sdk.Coins) error {
	if b.blocked[string(to)] {
		return errorsmod.Wrapf(sdkerrors.ErrUnauthorized, "%s is not allowed to receive funds", to)
	}
	if b.panicOnSendTo != nil && to.Equals(b.panicOnSendTo) {
		panic(fmt.Sprintf("fake bank: panic on send to %s", to))
	}
	from := authtypes.NewModuleAddress(module)
	for _, c := range amt {
		have := b.GetBalance(ctx, from, c.Denom).Amount
		if have.LT(c.Amount) {
			return errorsmod.Wrapf(sdkerrors.ErrInsufficientFunds, "%s has %s, needs %s", from, have, c)
		}
		b.set(ctx, from, have.Sub(c.Amount))
		b.set(ctx, to, b.GetBalance(ctx, to, c.Denom).Amount.Add(c.Amount))
	}
	return nil
}

// fakeGFL serves nodes in id order and the network power (their sum, unless overridden).
type fakeGFL struct {
	nodes       []gfltypes.Node
	rebalancing bool
	err         error
	// totalOverride, when set, replaces the sum of the nodes' power.
	totalOverride *uint64
	// maxLimit is the largest page asked for.
	maxLimit int
	calls    int
}

func (g *fakeGFL) GetNetworkPower(context.Context) (gfltypes.NetworkPower, error) {
	if g.totalOverride != nil {
		return gfltypes.NetworkPower{TotalGflops: *g.totalOverride}, nil
	}
	var sum uint64
	for _, n := range g.nodes {
		sum += n.PowerGflops
	}
	return gfltypes.NetworkPower{TotalGflops: sum}, nil
}

func (g *fakeGFL) NodesAfter(_ context.Context, after uint64, limit int) ([]gfltypes.Node, bool, error) {
	g.calls++
	g.maxLimit = max(g.maxLimit, limit)
	if g.err != nil {
		return nil, false, g.err
	}
	sort.Slice(g.nodes, func(i, j int) bool { return g.nodes[i].Id < g.nodes[j].Id })
	var out []gfltypes.Node
	i := 0
	for ; i < len(g.nodes); i++ {
		if g.nodes[i].Id <= after {
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, g.nodes[i])
	}
	return out, i < len(g.nodes), nil
}

func (g *fakeGFL) RebalancePending(context.Context) (bool, error) { return g.rebalancing, nil }

// fakeReputation scores nodes and providers; anything not set scores 1 and is eligible.
type fakeReputation struct {
	nodes     map[uint64]rep
	providers map[string]rep
}

type rep struct {
	score    sdkmath.LegacyDec
	eligible bool
}

func (r *fakeReputation) Reputation(_ context.Context, id uint64) (sdkmath.LegacyDec, bool, error) {
	if s, ok := r.nodes[id]; ok {
		return s.score, s.eligible, nil
	}
	return sdkmath.LegacyOneDec(), true, nil
}

func (r *fakeReputation) ProviderReputation(_ context.Context, op sdk.AccAddress) (sdkmath.LegacyDec, bool, error) {
	if s, ok := r.providers[string(op)]; ok {
		return s.score, s.eligible, nil
	}
	return sdkmath.LegacyOneDec(), true, nil
}

// fixture is the keeper on a fresh store with every dependency faked.
type fixture struct {
	t    *testing.T
	ctx  sdk.Context
	env  keepertest.Env
	k    keeper.Keeper
	ms   types.MsgServer
	qs   types.QueryServer
	bank *fakeBank
	gfl  *fakeGFL
	rep  *fakeReputation
	inv  *invariant.Set
}

// fixtureOpts adjusts the fixture before genesis.
type fixtureOpts struct {
	params func(*types.Params)
	// pool is the reward pool's genesis balance in udps (default 1,000 DPS).
	pool int64
	// others is udps held outside the pool (default 1,000,000 DPS).
	others int64
	// noWiring builds the keeper without x/gfl and x/reputation (wire adds them).
	noWiring bool
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	env := keepertest.NewEnv(t, types.StoreKey, dps.AppModule{})
	bank := newFakeBank(env.StoreService)
	f := &fixture{
		t: t, env: env, bank: bank,
		gfl: &fakeGFL{},
		rep: &fakeReputation{nodes: map[uint64]rep{}, providers: map[string]rep{}},
		inv: &invariant.Set{},
	}
	if o.noWiring {
		f.setKeeper(nil, nil)
	} else {
		f.setKeeper(f.gfl, f.rep)
	}
	k := f.k
	if o.pool == 0 {
		o.pool = 1_000 * dpsUnit
	}
	if o.others == 0 {
		o.others = 1_000_000 * dpsUnit
	}
	ctx := env.Ctx.WithEventManager(sdk.NewEventManager())
	bank.Mint(ctx, poolAddr, o.pool)
	bank.Mint(ctx, addr("treasury"), o.others)
	p := testParams()
	if o.params != nil {
		o.params(&p)
	}
	require.NoError(t, k.InitGenesis(ctx, &types.GenesisState{Params: p}))
	dps.NewAppModule(env.Codec, k).RegisterInvariants(f.inv)
	f.ctx = ctx
	return f
}

func addr(seed string) sdk.AccAddress { return sdk.MustAccAddressFromBech32(keepertest.Addr(seed)) }

func ints(n int64) sdkmath.Int { return sdkmath.NewInt(n) }

func dec(s string) sdkmath.LegacyDec { return sdkmath.LegacyMustNewDecFromStr(s) }

// node adds an active node of an operator with power in GFL.
func (f *fixture) node(id uint64, operator sdk.AccAddress, powerGFL uint64) {
	f.gfl.nodes = append(f.gfl.nodes, gfltypes.Node{
		Id: id, Operator: operator.String(), Status: gfltypes.NODE_STATUS_ACTIVE, PowerGflops: powerGFL * gflUnit,
	})
}

func (f *fixture) balance(a sdk.AccAddress) sdkmath.Int {
	return f.bank.GetBalance(f.ctx, a, denom).Amount
}

func (f *fixture) pool() sdkmath.Int { return f.balance(poolAddr) }

// setKeeper (re)builds the keeper on the fixture's store with the given x/gfl and
// x/reputation (nil: none).
func (f *fixture) setKeeper(gfl types.GFLKeeper, rep types.ReputationKeeper) {
	f.k = keeper.NewKeeper(f.env.Codec, f.env.StoreService, f.env.AddressCodec, f.env.Authority, &keepertest.AccountKeeper{}, f.bank, gfl, rep, nil, nil)
	f.ms, f.qs = keeper.NewMsgServerImpl(f.k), keeper.NewQueryServerImpl(f.k)
}

// wire rebuilds the keeper of a noWiring fixture with its fakes (or others').
func (f *fixture) wire(gfl *fakeGFL, rep *fakeReputation) {
	f.gfl, f.rep = gfl, rep
	f.setKeeper(gfl, rep)
}

// endEpoch ends epoch n of the "flops" epoch and starts n+1, as x/epochs does:
// AfterEpochEnd(n), then BeforeEpochStart(n+1).
func (f *fixture) endEpoch(n int64) {
	f.t.Helper()
	require.NoError(f.t, f.k.EpochHooks().AfterEpochEnd(f.ctx, "flops", n))
	require.NoError(f.t, f.k.EpochHooks().BeforeEpochStart(f.ctx, "flops", n+1))
}

// addWork writes verified work into the ledger under an epoch, as the AfterWorkVerified
// hook records it (the hook's own rules are tested with RecordWork).
func (f *fixture) addWork(epoch uint64, provider sdk.AccAddress, workload int32, gflopSeconds, fees int64) {
	f.t.Helper()
	key := collections.Join3(epoch, provider, workload)
	rec, err := f.k.Work.Get(f.ctx, key)
	if errors.Is(err, collections.ErrNotFound) {
		rec, err = types.WorkRecord{GflopSeconds: sdkmath.ZeroInt(), Fees: sdkmath.ZeroInt()}, nil
	}
	require.NoError(f.t, err)
	rec.GflopSeconds, rec.Fees, rec.Tasks = rec.GflopSeconds.AddRaw(gflopSeconds), rec.Fees.AddRaw(fees), rec.Tasks+1
	require.NoError(f.t, f.k.Work.Set(f.ctx, key, rec))
}

// workLeft counts an epoch's records in the ledger.
func (f *fixture) workLeft(epoch uint64) int {
	f.t.Helper()
	recs, _, err := f.k.WorkRecords(f.ctx, epoch, nil, 1<<20)
	require.NoError(f.t, err)
	return len(recs)
}

// resetEvents forgets the events emitted so far.
func (f *fixture) resetEvents() { f.ctx = f.ctx.WithEventManager(sdk.NewEventManager()) }

// endBlock moves to the next block (an hour later) and runs EndBlock; invariants must
// hold after every block. Events accumulate until resetEvents.
func (f *fixture) endBlock() {
	f.t.Helper()
	f.ctx = f.ctx.WithBlockHeight(f.ctx.BlockHeight() + 1).WithBlockTime(f.ctx.BlockTime().Add(time.Hour))
	require.NoError(f.t, f.k.EndBlocker(f.ctx))
	require.NoError(f.t, f.inv.AssertAll(f.ctx))
}

// runUntilIdle runs EndBlocks until nothing is queued or in progress and returns the
// number of blocks; it fails after limit blocks.
func (f *fixture) runUntilIdle(limit int) int {
	f.t.Helper()
	for n := 1; n <= limit; n++ {
		f.endBlock()
		if !f.busy() {
			return n
		}
	}
	f.t.Fatalf("still distributing after %d blocks", limit)
	return 0
}

func (f *fixture) busy() bool {
	res, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(f.t, err)
	return res.InProgress || len(res.PendingEpochs) > 0
}

func (f *fixture) emission(epoch uint64) types.Distribution {
	f.t.Helper()
	res, err := f.qs.Emission(f.ctx, &types.QueryEmissionRequest{Epoch: epoch})
	require.NoError(f.t, err)
	return res.Distribution
}

func (f *fixture) reward(a sdk.AccAddress, epoch uint64) types.ProviderReward {
	f.t.Helper()
	r, err := f.k.Rewards.Get(f.ctx, collections.Join(a, epoch))
	if errors.Is(err, collections.ErrNotFound) {
		return types.ProviderReward{Availability: sdkmath.ZeroInt(), Work: sdkmath.ZeroInt()}
	}
	require.NoError(f.t, err)
	return r
}

// events returns the typed events of type T emitted since the last resetEvents.
func events[T proto.Message](f *fixture) []T {
	var out []T
	for _, e := range f.ctx.EventManager().Events() {
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

// requireAccounting checks a finished distribution: payouts + remainder = E exactly, and
// the pool paid exactly what the record says.
func requireAccounting(t *testing.T, d types.Distribution) {
	t.Helper()
	require.Equal(t, types.DISTRIBUTION_PHASE_DONE, d.Phase)
	require.True(t, d.PaidAvailability.Add(d.PaidWork).Add(d.Remainder).Equal(d.Emission),
		"paid %s + %s + remainder %s != E %s", d.PaidAvailability, d.PaidWork, d.Remainder, d.Emission)
	require.True(t, d.Availability.Add(d.Work).Equal(d.Emission))
	require.True(t, d.PaidAvailability.LTE(d.Availability))
	require.True(t, d.PaidWork.LTE(d.Work))
}
