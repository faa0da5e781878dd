package keeper_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"

	cryptocodec "github.com/cosmos/cosmos-sdk/crypto/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/gfl"
	"github.com/flopsnet/flops/x/gfl/keeper"
	"github.com/flopsnet/flops/x/gfl/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// proposers is a fake x/staking for the beacon: validators by consensus address.
type proposers map[string]stakingtypes.Validator

func (p proposers) GetValidatorByConsAddr(_ context.Context, a sdk.ConsAddress) (stakingtypes.Validator, error) {
	v, ok := p[string(a)]
	if !ok {
		return v, stakingtypes.ErrNoValidatorFound
	}
	return v, nil
}

// addProposer makes a validator whose operator is the account of name, with an ed25519
// consensus key derived from name, and returns the key.
func (f *fixture) addProposer(name string) cmted25519.PrivKey {
	f.t.Helper()
	priv := cmted25519.GenPrivKeyFromSecret([]byte("flops-gfl-test/" + name))
	pk, err := cryptocodec.FromCmtPubKeyInterface(priv.PubKey())
	require.NoError(f.t, err)
	acc, err := sdk.AccAddressFromBech32(keepertest.Addr(name))
	require.NoError(f.t, err)
	v, err := stakingtypes.NewValidator(sdk.ValAddress(acc).String(), pk, stakingtypes.Description{Moniker: name})
	require.NoError(f.t, err)
	f.validators[string(priv.PubKey().Address())] = v
	return priv
}

// collateral is a fake x/staking-slash: each provider may lock up to allowance GPUs.
type collateral struct {
	allowance map[string]uint64
	locked    map[string]uint64
	slashes   []slashCall
	jails     []jailCall
}

type slashCall struct {
	provider string
	ppm      uint32
	reason   sstypes.SlashReason
	evidence sstypes.SlashEvidence
}

type jailCall struct {
	provider string
	until    time.Time
}

func newCollateral() *collateral {
	return &collateral{allowance: map[string]uint64{}, locked: map[string]uint64{}}
}

func (c *collateral) LockForNode(_ context.Context, p sdk.AccAddress, gpus uint64) error {
	if c.locked[p.String()]+gpus > c.allowance[p.String()] {
		return fmt.Errorf("bonded collateral covers %d GPUs, %d locked, %d more asked", c.allowance[p.String()], c.locked[p.String()], gpus)
	}
	c.locked[p.String()] += gpus
	return nil
}

func (c *collateral) UnlockForNode(_ context.Context, p sdk.AccAddress, gpus uint64) error {
	if gpus > c.locked[p.String()] {
		return fmt.Errorf("unlock %d > locked %d", gpus, c.locked[p.String()])
	}
	c.locked[p.String()] -= gpus
	return nil
}

func (c *collateral) Slash(_ context.Context, p sdk.AccAddress, ppm uint32, reason sstypes.SlashReason, _ sstypes.Beneficiaries, ev sstypes.SlashEvidence) (sstypes.SlashRecord, error) {
	c.slashes = append(c.slashes, slashCall{p.String(), ppm, reason, ev})
	return sstypes.SlashRecord{}, nil
}

func (c *collateral) Jail(_ context.Context, p sdk.AccAddress, until time.Time, _ sstypes.SlashEvidence) error {
	c.jails = append(c.jails, jailCall{p.String(), until})
	return nil
}

// hooks records x/gfl's hook calls and can veto node changes.
type hooks struct {
	veto     error
	fail     error // returned by the After hooks (which then record nothing)
	changed  []uint64
	finished []types.ChallengeStatus
	// deleteVeto is returned by BeforeNodeDelete; deleted records AfterNodeDeleted.
	deleteVeto error
	deleted    []uint64
}

func (h *hooks) BeforeNodeChange(context.Context, types.Node, *types.Node) error { return h.veto }
func (h *hooks) BeforeNodeDelete(context.Context, types.Node) error              { return h.deleteVeto }
func (h *hooks) AfterNodeDeleted(_ context.Context, n types.Node) error {
	if h.fail != nil {
		return h.fail
	}
	h.deleted = append(h.deleted, n.Id)
	return nil
}
func (h *hooks) AfterNodeChanged(_ context.Context, n types.Node) error {
	if h.fail != nil {
		return h.fail
	}
	h.changed = append(h.changed, n.Id)
	return nil
}
func (h *hooks) AfterChallengeFinished(_ context.Context, _ types.Node, _ uint64, s types.ChallengeStatus) error {
	if h.fail != nil {
		return h.fail
	}
	h.finished = append(h.finished, s)
	return nil
}

// fixture is x/gfl on a real store with fake neighbours, driven block by block.
type fixture struct {
	t     *testing.T
	env   keepertest.Env
	ctx   sdk.Context
	k     keeper.Keeper
	bank  *keepertest.Bank
	coll  *collateral
	hooks *hooks
	// validators: the proposers the beacon knows (addProposer)
	validators proposers
	ms         types.MsgServer
	qs         types.QueryServer
	// lastEvents: the events of the block next ended
	lastEvents sdk.Events
}

// newFixture starts at block 1 with the given params (default if nil).
func newFixture(t *testing.T, edit func(p *types.Params)) *fixture {
	t.Helper()
	env := keepertest.NewEnv(t, types.StoreKey, gfl.AppModule{})
	f := &fixture{t: t, env: env, bank: keepertest.NewBank(), coll: newCollateral(), hooks: &hooks{}, validators: proposers{}}
	f.k = keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, f.bank, f.coll, f.validators, nil)
	f.k.SetHooks(f.hooks)
	gs := types.DefaultGenesisState()
	if edit != nil {
		edit(&gs.Params)
	}
	f.ctx = env.Ctx.WithHeaderHash(blockHash(1)).WithEventManager(sdk.NewEventManager())
	require.NoError(t, f.k.InitGenesis(f.ctx, gs))
	require.NoError(t, f.k.BeginBlocker(f.ctx))
	f.ms = keeper.NewMsgServerImpl(f.k)
	f.qs = keeper.NewQueryServerImpl(f.k)
	return f
}

func blockHash(h int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(h))
	s := sha256.Sum256(append([]byte("block"), b[:]...))
	return s[:]
}

// next ends the current block and begins the next one dt later.
func (f *fixture) next(dt time.Duration) {
	f.t.Helper()
	require.NoError(f.t, f.k.EndBlocker(f.ctx))
	f.lastEvents = f.ctx.EventManager().Events()
	h := f.ctx.BlockHeight() + 1
	f.ctx = f.ctx.WithBlockHeight(h).WithBlockTime(f.ctx.BlockTime().Add(dt)).
		WithHeaderHash(blockHash(h)).WithEventManager(sdk.NewEventManager())
	require.NoError(f.t, f.k.BeginBlocker(f.ctx))
}

// blocks advances n blocks of 1 s.
func (f *fixture) blocks(n int) {
	for range n {
		f.next(time.Second)
	}
}

func (f *fixture) params() types.Params {
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(f.t, err)
	return p
}

func (f *fixture) node(id uint64) types.Node {
	n, err := f.k.GetNode(f.ctx, id)
	require.NoError(f.t, err)
	return n
}

// spec is an A100-40GB node with gpus GPUs named after tag.
func spec(tag string, gpus int) types.NodeSpec {
	s := types.NodeSpec{
		Region: "eu-west", Endpoint: "https://" + tag + ".example.com:8443",
		Workloads:     []types.WorkloadClass{types.WORKLOAD_CLASS_TRAINING, types.WORKLOAD_CLASS_BATCH},
		AskPerGpuHour: sdk.NewInt64Coin("udps", 2_000_000), ClaimedGflops: 1,
	}
	for i := range gpus {
		s.Gpus = append(s.Gpus, types.GpuInfo{
			Model: "NVIDIA A100-SXM4-40GB", Uuid: fmt.Sprintf("GPU-%s-%d", tag, i), MemoryMib: 40960,
			ComputeCapability: "8.0", TensorCores: true, MigCapable: true, PowerLimitWatts: 400,
		})
	}
	return s
}

// operator returns a funded test operator allowed to lock gpus GPUs.
func (f *fixture) operator(name string, gpus uint64) string {
	addr := keepertest.Addr(name)
	f.coll.allowance[addr] = gpus
	return addr
}

// register registers a node and fails the test on error.
func (f *fixture) register(op string, s types.NodeSpec) uint64 {
	f.t.Helper()
	res, err := f.ms.RegisterNode(f.ctx, &types.MsgRegisterNode{Operator: op, Spec: s})
	require.NoError(f.t, err)
	return res.NodeId
}

func (f *fixture) hasEvent(typ string) bool {
	for _, e := range f.ctx.EventManager().Events() {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// state is a snapshot of what a rejected msg must leave unchanged.
type state struct {
	gs     *types.GenesisState
	locked map[string]uint64
	ugfl   string
}

func (f *fixture) snapshot() state {
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(f.t, err)
	locked := map[string]uint64{}
	for k, v := range f.coll.locked {
		locked[k] = v
	}
	return state{gs: gs, locked: locked, ugfl: f.bank.GetSupply(f.ctx, types.Denom).String()}
}

func (f *fixture) requireUnchanged(before state) {
	f.t.Helper()
	after := f.snapshot()
	require.Equal(f.t, before.locked, after.locked, "collateral locks changed")
	require.Equal(f.t, before.ugfl, after.ugfl, "ugfl supply changed")
	bb, err := f.env.Codec.MarshalJSON(before.gs)
	require.NoError(f.t, err)
	ab, err := f.env.Codec.MarshalJSON(after.gs)
	require.NoError(f.t, err)
	require.JSONEq(f.t, string(bb), string(ab), "module state changed")
}

// tx runs fn like a transaction: on a branch of the block state, written only on success.
func (f *fixture) tx(fn func(ctx sdk.Context) error) error {
	cacheCtx, write := f.ctx.CacheContext()
	if err := fn(cacheCtx); err != nil {
		return err
	}
	write()
	return nil
}

func pageReq(limit uint64) *query.PageRequest { return &query.PageRequest{Limit: limit} }

func pageNext(key []byte) *query.PageRequest { return &query.PageRequest{Key: key, Limit: 1} }
