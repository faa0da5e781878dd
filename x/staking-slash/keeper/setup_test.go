package keeper_test

import (
	"context"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/testutil/keepertest"
	stakingslash "github.com/flopsnet/flops/x/staking-slash"
	"github.com/flopsnet/flops/x/staking-slash/keeper"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

const denom = "udps"

// testParams are small round numbers so expected amounts can be written by hand:
// 1,000 udps per GPU, exposure cap 2x bonded, 1 h unbonding, 3 open entries, 2 payouts
// per block, 50% compensation, 25% reward.
func testParams() types.Params {
	p := types.DefaultParams()
	p.MinCollateralPerGpu = sdkmath.NewInt(1_000)
	p.ExposureFactorPpm = 2_000_000
	p.UnbondingTime = time.Hour
	p.MaxUnbondingEntries = 3
	p.MaxMaturedPerBlock = 2
	p.CompensationPpm = 500_000
	p.RewardPpm = 250_000
	return p
}

// fixture is a keeper on a fresh store with the fake bank, recording hooks and the
// module's invariants.
type fixture struct {
	t     *testing.T
	ctx   sdk.Context
	env   keepertest.Env
	k     keeper.Keeper
	ms    types.MsgServer
	qs    types.QueryServer
	bank  *fakeBank
	hooks *recordingHooks
	inv   *invariant.Set
}

func newFixture(t *testing.T, params ...func(*types.Params)) *fixture {
	t.Helper()
	env := keepertest.NewEnv(t, types.StoreKey, stakingslash.AppModule{})
	bank := newFakeBank(env.StoreService)
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, bank)
	hooks := &recordingHooks{}
	k.SetHooks(hooks)
	p := testParams()
	for _, mutate := range params {
		mutate(&p)
	}
	require.NoError(t, k.InitGenesis(env.Ctx, &types.GenesisState{Params: p}))
	inv := &invariant.Set{}
	stakingslash.NewAppModule(env.Codec, k).RegisterInvariants(inv)
	return &fixture{
		t: t, ctx: env.Ctx.WithEventManager(sdk.NewEventManager()), env: env, k: k,
		ms: keeper.NewMsgServerImpl(k), qs: keeper.NewQueryServerImpl(k),
		bank: bank, hooks: hooks, inv: inv,
	}
}

// addr is a deterministic test account.
func addr(seed string) sdk.AccAddress {
	return sdk.MustAccAddressFromBech32(keepertest.Addr(seed))
}

func coin(n int64) sdk.Coin { return sdk.NewInt64Coin(denom, n) }

func ints(n int64) sdkmath.Int { return sdkmath.NewInt(n) }

// fund mints n udps to a.
func (f *fixture) fund(a sdk.AccAddress, n int64) {
	f.t.Helper()
	require.NoError(f.t, f.bank.Mint(f.ctx, a, sdk.NewCoins(coin(n))))
}

// bond funds a and bonds n through the Msg service.
func (f *fixture) bond(a sdk.AccAddress, n int64) {
	f.t.Helper()
	f.fund(a, n)
	_, err := f.ms.Bond(f.ctx, &types.MsgBond{Provider: a.String(), Amount: coin(n)})
	require.NoError(f.t, err)
}

// unbond starts an unbonding of n through the Msg service.
func (f *fixture) unbond(a sdk.AccAddress, n int64) *types.MsgUnbondResponse {
	f.t.Helper()
	res, err := f.ms.Unbond(f.ctx, &types.MsgUnbond{Provider: a.String(), Amount: coin(n)})
	require.NoError(f.t, err)
	return res
}

func (f *fixture) balance(a sdk.AccAddress) sdkmath.Int {
	return f.bank.GetBalance(f.ctx, a, denom).Amount
}

func (f *fixture) moduleBalance() sdkmath.Int { return f.balance(f.k.ModuleAddress()) }

func (f *fixture) collateral(a sdk.AccAddress) types.Collateral {
	f.t.Helper()
	c, err := f.k.GetCollateral(f.ctx, a)
	require.NoError(f.t, err)
	return c
}

func (f *fixture) totals() (bonded, unbonding sdkmath.Int) {
	f.t.Helper()
	b, err := f.k.TotalBonded.Get(f.ctx)
	require.NoError(f.t, err)
	u, err := f.k.TotalUnbonding.Get(f.ctx)
	require.NoError(f.t, err)
	return b, u
}

// requireInvariants asserts that every registered invariant holds.
func (f *fixture) requireInvariants() {
	f.t.Helper()
	require.NoError(f.t, f.inv.AssertAll(f.ctx))
}

// snapshot is the whole module state (as exported genesis), the running totals and every
// bank balance, for "a rejection changes nothing" checks.
type snapshot struct {
	genesis   []byte
	totals    string
	bankState string
}

func (f *fixture) snapshot() snapshot {
	f.t.Helper()
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(f.t, err)
	bz, err := proto.Marshal(gs)
	require.NoError(f.t, err)
	b, u := f.totals()
	return snapshot{genesis: bz, totals: b.String() + "/" + u.String(), bankState: f.bank.Snapshot(f.ctx)}
}

func (f *fixture) requireUnchanged(before snapshot) {
	f.t.Helper()
	after := f.snapshot()
	require.Equal(f.t, before.genesis, after.genesis, "module state changed")
	require.Equal(f.t, before.totals, after.totals, "running totals changed")
	require.Equal(f.t, before.bankState, after.bankState, "balances changed")
}

// takeEvents returns the events emitted since the last call and clears the event manager.
func (f *fixture) takeEvents() sdk.Events {
	evs := f.ctx.EventManager().Events()
	f.ctx = f.ctx.WithEventManager(sdk.NewEventManager())
	return evs
}

// typedEvents parses every emitted event of type T.
func typedEvents[T proto.Message](t *testing.T, evs sdk.Events) []T {
	t.Helper()
	var out []T
	for _, e := range evs {
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

// at moves the block time (and height) forward.
func (f *fixture) at(tm time.Time) {
	f.ctx = f.ctx.WithBlockTime(tm).WithBlockHeight(f.ctx.BlockHeight() + 1)
}

// endBlock runs the module's EndBlock.
func (f *fixture) endBlock() {
	f.t.Helper()
	require.NoError(f.t, stakingslash.NewAppModule(f.env.Codec, f.k).EndBlock(f.ctx))
}

// recordingHooks records every hook call.
type recordingHooks struct {
	fail    error // returned by every hook (which then records nothing)
	slashed []types.SlashRecord
	jailed  []jailCall
}

type jailCall struct {
	provider sdk.AccAddress
	until    time.Time
	evidence types.SlashEvidence
}

func (h *recordingHooks) AfterSlashed(_ context.Context, rec types.SlashRecord) error {
	if h.fail != nil {
		return h.fail
	}
	h.slashed = append(h.slashed, rec)
	return nil
}

func (h *recordingHooks) AfterJailed(_ context.Context, provider sdk.AccAddress, until time.Time, evidence types.SlashEvidence) error {
	if h.fail != nil {
		return h.fail
	}
	h.jailed = append(h.jailed, jailCall{provider, until, evidence})
	return nil
}

var keepertestGenesisTime = keepertest.GenesisTime

func joinKey(a sdk.AccAddress, id uint64) keeper.UnbondingKey { return collections.Join(a, id) }

// requireInt compares two Ints by value (require.Equal compares big.Int internals).
func requireInt(t *testing.T, want, got sdkmath.Int, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.String(), got.String(), msgAndArgs...)
}
