package keeper_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/unitstore"
	"github.com/flopsnet/flops/testutil/keepertest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

const udps = "udps"

// gflFake is x/gfl as the market sees it: a map of nodes, the default params (GPU classes
// and workload weights) and a beacon that derives every height's seed from a fake block
// hash, so that the scheduler's draws are reproducible.
type gflFake struct {
	nodes  map[uint64]gfltypes.Node
	params gfltypes.Params
	// salt, when not 0, is mixed into every seed: a benchmark that runs one block again
	// and again sets it per run, so that each run draws other nodes, as the next block
	// would, instead of reading the ones the last run left in IAVL's caches
	salt uint64
	// idle: the nodes NodeIdle was called for, in order
	idle []uint64
}

// NodeIdle records the call; x/gfl's deactivates a draining node.
func (g *gflFake) NodeIdle(_ context.Context, id uint64) error {
	g.idle = append(g.idle, id)
	return nil
}

func (g *gflFake) GetNode(_ context.Context, id uint64) (gfltypes.Node, error) {
	n, ok := g.nodes[id]
	if !ok {
		return n, errorsmod.Wrapf(gfltypes.ErrNodeNotFound, "node %d", id)
	}
	return n, nil
}

func (g *gflFake) GetParams(context.Context) (gfltypes.Params, error) { return g.params, nil }

func (g *gflFake) Seed(_ context.Context, height int64, domain string, ids ...uint64) ([32]byte, error) {
	if height < 1 {
		return [32]byte{}, beacon.ErrUnavailable
	}
	return beacon.Derive(g.salted(blockHash(height)), domain, ids...), nil
}

// salted is the hash a seed derives from: hash itself, or hash mixed with the salt.
func (g *gflFake) salted(hash []byte) []byte {
	if g.salt == 0 {
		return hash
	}
	s := beacon.Derive(hash, "salt", g.salt)
	return s[:]
}

// DrawSeed and RecentSeed are x/gfl's with drand off: the last committed block's.
func (g *gflFake) DrawSeed(ctx context.Context, _ int64, domain string, ids ...uint64) ([32]byte, error) {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if sdkCtx.BlockHeight() <= 1 {
		return beacon.Derive(g.salted(sdkCtx.HeaderHash()), domain, ids...), nil
	}
	return g.Seed(ctx, sdkCtx.BlockHeight()-1, domain, ids...)
}

func (g *gflFake) RecentSeed(ctx context.Context, domain string, ids ...uint64) ([32]byte, error) {
	return g.Seed(ctx, sdk.UnwrapSDKContext(ctx).BlockHeight()-1, domain, ids...)
}

// collateralFake is x/staking-slash: bonded collateral per provider, jailing, and the
// exposure it backs (refused when exposure + value > bonded); it records slashes and jails.
// Its maps are keyed by the address bytes (as the real module's store is), so that the
// benchmarks do not measure bech32 encoding in the fake. The exposure is kept in the
// store (under a prefix of the market's store that the market does not use), as the real
// module keeps it: a block-hook unit that is discarded (out of its budget, or failed)
// discards its exposure changes with the rest of its writes.
type collateralFake struct {
	bonded  map[string]sdkmath.Int
	jailed  map[string]bool
	slashes []slashCall
	jails   []jailCall
	store   corestore.KVStoreService
	now     func() context.Context // the fixture's current context, for exp and exposures
	// broken providers (address bytes): AddExposure fails for them while CanAddExposure
	// says yes, so that their assignments fail in the middle (fault injection)
	broken map[string]bool
	// asked counts CanAddExposure's calls per provider (address bytes): the collateral
	// checks the scheduler makes
	asked map[string]int
}

// fakeExposurePrefix is where the fake keeps the exposure, outside the market's prefixes.
var fakeExposurePrefix = []byte("\xfefake-exposure/")

type slashCall struct {
	provider string
	ppm      uint32
	reason   sstypes.SlashReason
	evidence sstypes.SlashEvidence
	owner    string
}

type jailCall struct {
	provider string
	until    time.Time
}

func newCollateralFake(store corestore.KVStoreService, now func() context.Context) *collateralFake {
	return &collateralFake{bonded: map[string]sdkmath.Int{}, jailed: map[string]bool{}, broken: map[string]bool{}, asked: map[string]int{}, store: store, now: now}
}

// key is the fake's map key of a bech32 address.
func key(addr string) string { return string(sdk.MustAccAddressFromBech32(addr)) }

// bond sets a provider's bonded collateral.
func (c *collateralFake) bond(addr string, amount sdkmath.Int) { c.bonded[key(addr)] = amount }

// jail jails a provider.
func (c *collateralFake) jail(addr string) { c.jailed[key(addr)] = true }

// exp is a provider's exposure.
func (c *collateralFake) exp(addr string) sdkmath.Int { return c.expOf(c.now(), key(addr)) }

func (c *collateralFake) expOf(ctx context.Context, k string) sdkmath.Int {
	bz, err := c.store.OpenKVStore(ctx).Get(append(slices.Clone(fakeExposurePrefix), k...))
	if err != nil || bz == nil {
		return sdkmath.ZeroInt()
	}
	e, ok := sdkmath.NewIntFromString(string(bz))
	if !ok {
		panic("fake exposure: " + string(bz))
	}
	return e
}

func (c *collateralFake) setExp(ctx context.Context, k string, e sdkmath.Int) {
	if err := c.store.OpenKVStore(ctx).Set(append(slices.Clone(fakeExposurePrefix), k...), []byte(e.String())); err != nil {
		panic(err)
	}
}

// exposures is every provider's exposure (address bytes -> amount) at the fixture's
// current context.
func (c *collateralFake) exposures() map[string]sdkmath.Int {
	end := slices.Clone(fakeExposurePrefix)
	end[len(end)-1]++
	it, err := c.store.OpenKVStore(c.now()).Iterator(fakeExposurePrefix, end)
	if err != nil {
		panic(err)
	}
	defer func() { _ = it.Close() }()
	out := map[string]sdkmath.Int{}
	for ; it.Valid(); it.Next() {
		e, _ := sdkmath.NewIntFromString(string(it.Value()))
		out[string(it.Key()[len(fakeExposurePrefix):])] = e
	}
	return out
}

func (c *collateralFake) CanAddExposure(ctx context.Context, p sdk.AccAddress, v sdkmath.Int) (bool, error) {
	c.asked[string(p)]++
	return c.covers(ctx, p, v), nil
}

func (c *collateralFake) covers(ctx context.Context, p sdk.AccAddress, v sdkmath.Int) bool {
	b, ok := c.bonded[string(p)]
	if !ok || c.jailed[string(p)] {
		return false
	}
	return c.expOf(ctx, string(p)).Add(v).LTE(b)
}

func (c *collateralFake) AddExposure(ctx context.Context, p sdk.AccAddress, v sdkmath.Int) error {
	if c.broken[string(p)] {
		return fmt.Errorf("collateral of %s: injected failure", p)
	}
	if !c.covers(ctx, p, v) {
		return fmt.Errorf("collateral of %s does not cover %s more exposure", p, v)
	}
	c.setExp(ctx, string(p), c.expOf(ctx, string(p)).Add(v))
	return nil
}

func (c *collateralFake) ReleaseExposure(ctx context.Context, p sdk.AccAddress, v sdkmath.Int) error {
	if e := c.expOf(ctx, string(p)); v.GT(e) {
		return fmt.Errorf("release %s > exposure %s of %s", v, e, p)
	}
	c.setExp(ctx, string(p), c.expOf(ctx, string(p)).Sub(v))
	return nil
}

func (c *collateralFake) GetCollateral(ctx context.Context, p sdk.AccAddress) (sstypes.Collateral, error) {
	b, ok := c.bonded[string(p)]
	if !ok {
		b = sdkmath.ZeroInt()
	}
	return sstypes.Collateral{Provider: p.String(), Bonded: b, Exposure: c.expOf(ctx, string(p))}, nil
}

// Slash records the call; the record's amount is the fraction of the bond (the bond
// itself is left as it is).
func (c *collateralFake) Slash(_ context.Context, p sdk.AccAddress, ppm uint32, reason sstypes.SlashReason, b sstypes.Beneficiaries, ev sstypes.SlashEvidence) (sstypes.SlashRecord, error) {
	c.slashes = append(c.slashes, slashCall{provider: p.String(), ppm: ppm, reason: reason, evidence: ev, owner: b.Compensate.String()})
	bonded, ok := c.bonded[string(p)]
	if !ok {
		bonded = sdkmath.ZeroInt()
	}
	amount, err := sstypes.PPMOf(bonded, uint64(ppm))
	return sstypes.SlashRecord{Provider: p.String(), Reason: reason, FractionPpm: ppm, Amount: amount}, err
}

// slashesOf is the slashes of one provider, in order.
func (c *collateralFake) slashesOf(provider string) []slashCall {
	var out []slashCall
	for _, s := range c.slashes {
		if s.provider == provider {
			out = append(out, s)
		}
	}
	return out
}

// SlashAtMost is x/staking-slash's, on the bond alone.
func (c *collateralFake) SlashAtMost(ctx context.Context, p sdk.AccAddress, ppm uint32, limit sdkmath.Int, reason sstypes.SlashReason, b sstypes.Beneficiaries, ev sstypes.SlashEvidence) (sstypes.SlashRecord, error) {
	if bonded, ok := c.bonded[string(p)]; ok && bonded.IsPositive() {
		if most := limit.MulRaw(1_000_000).Quo(bonded); most.LT(sdkmath.NewInt(int64(ppm))) {
			ppm = uint32(most.Int64())
		}
	}
	return c.Slash(ctx, p, ppm, reason, b, ev)
}

// CoveringFraction is x/staking-slash's, on the bond alone.
func (c *collateralFake) CoveringFraction(_ context.Context, p sdk.AccAddress, ppm uint32, amount sdkmath.Int) (uint32, error) {
	if bonded, ok := c.bonded[string(p)]; ok && bonded.IsPositive() {
		if least := ceilPPM(amount, bonded); least < uint64(ppm) {
			return uint32(least), nil
		}
	}
	return ppm, nil
}

// abandonPPM is the fraction of its (fake) bond that a provider loses for giving task up
// (a lapse, a release): abandon_slash_ppm, but no more than failure_penalty_multiple x
// the task's value, rounded up to a whole ppm.
func (f *fixture) abandonPPM(task types.Task) uint32 {
	f.t.Helper()
	p := f.params()
	value := task.Price
	if tip := f.job(task.JobId).Spec.PriorityTip.Amount; task.Role == types.TASK_ROLE_PRIMARY && !tip.IsNil() {
		value = value.Add(tip)
	}
	return uint32(min(uint64(p.AbandonSlashPpm), ceilPPM(value.MulRaw(int64(p.FailurePenaltyMultiple)), f.coll.bonded[key(task.Provider)])))
}

// ceilPPM is the least fraction of of that reaches amount: ceil(amount x 1e6 / of).
func ceilPPM(amount, of sdkmath.Int) uint64 {
	num := amount.MulRaw(1_000_000)
	f := num.Quo(of)
	if !num.Mod(of).IsZero() {
		f = f.AddRaw(1)
	}
	return f.Uint64()
}

func (c *collateralFake) Jail(_ context.Context, p sdk.AccAddress, until time.Time, _ sstypes.SlashEvidence) error {
	c.jails = append(c.jails, jailCall{provider: p.String(), until: until})
	c.jailed[string(p)] = true
	return nil
}

// reputationFake scores nodes 1 and finds them eligible unless a test says otherwise.
type reputationFake struct {
	scores     map[uint64]sdkmath.LegacyDec
	ineligible map[uint64]bool
}

func (r *reputationFake) Reputation(_ context.Context, id uint64) (sdkmath.LegacyDec, bool, error) {
	s, ok := r.scores[id]
	if !ok {
		s = sdkmath.LegacyOneDec()
	}
	return s, !r.ineligible[id], nil
}

// hooksFake records what the market tells x/reputation and x/dps.
type hooksFake struct {
	fail     error // returned by every hook (which then records nothing)
	acked    []uint64
	onTime   []bool
	lapsed   []uint64
	verified []uint64
	settled  []uint64
	work     []types.VerifiedWork
}

func (h *hooksFake) AfterWorkVerified(_ context.Context, w types.VerifiedWork) error {
	if h.fail != nil {
		return h.fail
	}
	h.work = append(h.work, w)
	return nil
}

func (h *hooksFake) AfterTaskAcked(_ context.Context, node uint64, onTime bool) error {
	if h.fail != nil {
		return h.fail
	}
	h.acked = append(h.acked, node)
	h.onTime = append(h.onTime, onTime)
	return nil
}

func (h *hooksFake) AfterTaskLapsed(_ context.Context, node uint64, _ string) error {
	if h.fail != nil {
		return h.fail
	}
	h.lapsed = append(h.lapsed, node)
	return nil
}

func (h *hooksFake) AfterTaskVerified(_ context.Context, node uint64, _ bool) error {
	if h.fail != nil {
		return h.fail
	}
	h.verified = append(h.verified, node)
	return nil
}

func (h *hooksFake) AfterTaskSettled(_ context.Context, node uint64, _ bool) error {
	if h.fail != nil {
		return h.fail
	}
	h.settled = append(h.settled, node)
	return nil
}

// fixture is x/market on a real store with fake neighbours, driven block by block.
type fixture struct {
	t      testing.TB
	env    keepertest.Env
	ctx    sdk.Context
	k      keeper.Keeper
	ms     types.MsgServer
	bank   *keepertest.Bank
	gfl    *gflFake
	coll   *collateralFake
	rep    *reputationFake
	hooks  *hooksFake
	client string // a funded job owner
	nextID uint64 // the last node id handed out
	// commitEvery commits the store every that many blocks (default 1, as the chain does);
	// long simulations raise it, as IAVL's commit dominates their run time.
	commitEvery int64
	// ops counts the market's store operations while ops.On (newCountingFixture only)
	ops *keepertest.StoreOps
}

// clientFunds is what the client holds at the start: 1,000,000 DPS.
var clientFunds = sdkmath.NewInt(1_000_000_000_000)

// newFixture starts at block 1 with the given params (default if nil).
func newFixture(t testing.TB, edit func(p *types.Params)) *fixture {
	t.Helper()
	return buildFixture(t, keepertest.NewEnv(t, types.StoreKey, market.AppModule{}), edit, false)
}

// newCountingFixture is newFixture with the market keeper's store operations counted in
// f.ops while f.ops.On (the fakes' stores are not counted).
func newCountingFixture(t testing.TB, edit func(p *types.Params)) *fixture {
	t.Helper()
	return buildFixture(t, keepertest.NewEnv(t, types.StoreKey, market.AppModule{}), edit, true)
}

func buildFixture(t testing.TB, env keepertest.Env, edit func(p *types.Params), counting bool) *fixture {
	t.Helper()
	f := &fixture{
		t: t, env: env, bank: keepertest.NewBank(),
		gfl:   &gflFake{nodes: map[uint64]gfltypes.Node{}, params: gfltypes.DefaultParams()},
		rep:   &reputationFake{scores: map[uint64]sdkmath.LegacyDec{}, ineligible: map[uint64]bool{}},
		hooks: &hooksFake{}, client: keepertest.Addr("client"),
	}
	// wrapped as the real x/staking-slash keeper wraps its own: a unit opens it once
	f.coll = newCollateralFake(unitstore.Wrap(env.StoreService), func() context.Context { return f.ctx })
	svc := env.StoreService
	if counting {
		f.ops = &keepertest.StoreOps{}
		svc = keepertest.Counting(svc, f.ops)
	}
	f.k = keeper.NewKeeper(env.Codec, svc, env.TransientService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, f.bank, f.gfl, f.coll, "fee_collector", "dps")
	f.k.SetReputation(f.rep)
	f.k.SetHooks(f.hooks)
	gs := types.DefaultGenesisState()
	if edit != nil {
		edit(&gs.Params)
	}
	// a block's execution (FinalizeBlock), where messages and EndBlock run
	f.ctx = env.Ctx.WithHeaderHash(blockHash(1)).WithEventManager(sdk.NewEventManager()).WithExecMode(sdk.ExecModeFinalize)
	require.NoError(t, f.k.InitGenesis(f.ctx, gs))
	f.ms = keeper.NewMsgServerImpl(f.k)
	f.fund(f.client, clientFunds)
	return f
}

func blockHash(h int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(h))
	s := sha256.Sum256(append([]byte("market block"), b[:]...))
	return s[:]
}

// next ends the current block, commits it and begins the next one dt later.
func (f *fixture) next(dt time.Duration) {
	f.t.Helper()
	require.NoError(f.t, f.k.EndBlocker(f.ctx))
	if f.commitEvery <= 1 || f.ctx.BlockHeight()%f.commitEvery == 0 {
		f.commitStore()
	}
	h := f.ctx.BlockHeight() + 1
	f.ctx = f.ctx.WithBlockHeight(h).WithBlockTime(f.ctx.BlockTime().Add(dt)).
		WithHeaderHash(blockHash(h)).WithEventManager(sdk.NewEventManager())
}

// commitStore commits the IAVL store as the chain does after every block. Besides
// realism, this keeps IAVL's set of unsaved writes small: every iterator scans all of them.
func (f *fixture) commitStore() {
	if c, ok := f.ctx.MultiStore().(interface{ Commit() storetypes.CommitID }); ok {
		c.Commit()
	}
}

// blocks advances n blocks of 1 s.
func (f *fixture) blocks(n int) {
	f.t.Helper()
	for range n {
		f.next(time.Second)
	}
}

func (f *fixture) params() types.Params {
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(f.t, err)
	return p
}

func (f *fixture) fund(addr string, amount sdkmath.Int) {
	f.bank.Fund(sdk.MustAccAddressFromBech32(addr), sdk.NewCoins(sdk.NewCoin(udps, amount)))
}

func (f *fixture) balance(addr string) sdkmath.Int {
	return f.bank.Balance(sdk.MustAccAddressFromBech32(addr), udps)
}

func (f *fixture) escrow() sdkmath.Int { return f.bank.ModuleBalance(types.ModuleName, udps) }

// operator returns a provider address with 1,000,000 DPS of collateral bonded and 1,000
// DPS in its account (for bid deposits).
func (f *fixture) operator(name string) string {
	addr := keepertest.Addr(name)
	if _, ok := f.coll.bonded[key(addr)]; !ok {
		f.coll.bond(addr, sdkmath.NewInt(1_000_000_000_000))
		f.fund(addr, sdkmath.NewInt(1_000_000_000))
	}
	return addr
}

// a100 is an active A100-40GB node of gpus GPUs in eu-west that takes training and batch
// work at 1 DPS per GPU-hour; edit changes it before it enters the market.
func a100(id uint64, op string, gpus int, edit func(n *gfltypes.Node)) gfltypes.Node {
	n := gfltypes.Node{
		Id: id, Operator: op, GpuClass: "A100-40GB", Region: "eu-west", Endpoint: fmt.Sprintf("https://n%d.example.com", id),
		Workloads:     []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_TRAINING, gfltypes.WORKLOAD_CLASS_BATCH},
		Runtimes:      []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN, gfltypes.RUNTIME_PROCESS, gfltypes.RUNTIME_CONTAINER},
		AskPerGpuHour: sdk.NewInt64Coin(udps, 1_000_000), Status: gfltypes.NODE_STATUS_ACTIVE, PowerGflops: 100_000,
	}
	for i := range gpus {
		n.Gpus = append(n.Gpus, gfltypes.GpuInfo{
			Model: "NVIDIA A100-SXM4-40GB", Uuid: fmt.Sprintf("GPU-%d-%d", id, i), MemoryMib: 40960,
			ComputeCapability: "8.0", TensorCores: true, MigCapable: true, PowerLimitWatts: 400,
		})
	}
	if edit != nil {
		edit(&n)
	}
	return n
}

// addNode puts a node into x/gfl and tells the market, as x/gfl's hook does.
func (f *fixture) addNode(op string, gpus int, edit func(n *gfltypes.Node)) uint64 {
	f.nextID++
	n := a100(f.nextID, op, gpus, edit)
	f.gfl.nodes[n.Id] = n
	require.NoError(f.t, f.k.GFLHooks().AfterNodeChanged(f.ctx, n))
	return n.Id
}

// addNodes registers n 8-GPU nodes, each of its own operator ("p0", "p1", ...).
func (f *fixture) addNodes(n int) {
	for i := range n {
		f.addNode(f.operator(fmt.Sprint("p", i)), 8, nil)
	}
}

// requireAssigned requires the first task of each job to be assigned at ctx.
func (f *fixture) requireAssigned(ctx sdk.Context, jobs []uint64) {
	f.t.Helper()
	for _, id := range jobs {
		tasks, err := f.k.JobTasksForTest(ctx, id)
		require.NoError(f.t, err)
		require.Equal(f.t, types.TASK_STATUS_ASSIGNED, tasks[0].Status, "job %d", id)
	}
}

// updateNode changes a node in x/gfl and tells the market.
func (f *fixture) updateNode(id uint64, edit func(n *gfltypes.Node)) {
	n := f.gfl.nodes[id]
	edit(&n)
	f.gfl.nodes[id] = n
	require.NoError(f.t, f.k.GFLHooks().AfterNodeChanged(f.ctx, n))
}

// changeNode changes a node's inventory as x/gfl's UpdateNode does, in one transaction:
// the market's veto (which may move the tasks holding its devices), then the change and
// the hook after it. edit changes a copy of the node.
func (f *fixture) changeNode(id uint64, edit func(n *gfltypes.Node)) error {
	return f.tx(func(ctx sdk.Context) error {
		n := f.gfl.nodes[id]
		next := n
		next.Gpus = make([]gfltypes.GpuInfo, len(n.Gpus))
		for i, g := range n.Gpus {
			g.MigInstances = slices.Clone(g.MigInstances)
			next.Gpus[i] = g
		}
		edit(&next)
		if err := f.k.GFLHooks().BeforeNodeChange(ctx, n, &next); err != nil {
			return err
		}
		if err := f.k.GFLHooks().AfterNodeChanged(ctx, next); err != nil {
			return err
		}
		f.gfl.nodes[id] = next
		return nil
	})
}

// gemmSpec is a 1-GPU BUILTIN gemm batch job of tasks tasks: at most 5 DPS per task, 10
// minutes per task, a day to finish, a 0.1 DPS tip, no verification.
func (f *fixture) gemmSpec(tasks uint32) types.JobSpec {
	return types.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: types.RUNTIME_BUILTIN, Image: types.BuiltinGemm,
		Builtin:   types.BuiltinArgs{GemmN: 256, GemmR: 1},
		TaskCount: tasks, Replicas: 1, Verification: types.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin(udps, 5_000_000), MaxDuration: 10 * time.Minute,
		Deadline: f.ctx.BlockTime().Add(24 * time.Hour), PriorityTip: sdk.NewInt64Coin(udps, 100_000),
		Mode: types.ALLOCATION_MODE_ASSIGN, VerificationBudget: sdk.NewInt64Coin(udps, 0),
	}
}

// quote10m is a default node's price for a 1-GPU 10-minute task: 1 DPS/GPU-h x 1/6 h,
// rounded up.
var quote10m = sdkmath.NewInt(166_667)

// submit submits a job for the client and returns its id.
func (f *fixture) submit(spec types.JobSpec) uint64 {
	f.t.Helper()
	return f.submitAs(f.client, spec)
}

// submitGemms submits n one-task GEMM jobs (gemmSpec(1)) from the client and returns
// their ids, in order.
func (f *fixture) submitGemms(n int) []uint64 {
	f.t.Helper()
	ids := make([]uint64, 0, n)
	for range n {
		ids = append(ids, f.submit(f.gemmSpec(1)))
	}
	return ids
}

func (f *fixture) submitAs(owner string, spec types.JobSpec) uint64 {
	f.t.Helper()
	res, err := f.ms.SubmitJob(f.ctx, &types.MsgSubmitJob{Owner: owner, Spec: spec})
	require.NoError(f.t, err)
	return res.JobId
}

func (f *fixture) job(id uint64) types.Job {
	f.t.Helper()
	j, err := f.k.GetJob(f.ctx, id)
	require.NoError(f.t, err)
	return j
}

func (f *fixture) task(id uint64) types.Task {
	f.t.Helper()
	t, err := f.k.GetTask(f.ctx, id)
	require.NoError(f.t, err)
	return t
}

// tasks returns a job's task replicas by id.
func (f *fixture) tasks(job uint64) []types.Task {
	f.t.Helper()
	out, err := f.k.JobTasksForTest(f.ctx, job)
	require.NoError(f.t, err)
	return out
}

func (f *fixture) slot(node uint64) types.NodeSlot {
	f.t.Helper()
	s, err := f.k.Slots.Get(f.ctx, node)
	require.NoError(f.t, err)
	return s
}

// queued says whether a task waits in the scheduler's queue: in its group, or parked on
// its own.
func (f *fixture) queued(taskID uint64) bool {
	f.t.Helper()
	t := f.task(taskID)
	found, err := f.k.WaitsInGroupForTest(f.ctx, t)
	require.NoError(f.t, err)
	if !found { // parked until a retry height
		has, err := f.k.AssignRetries.Has(f.ctx, taskID)
		require.NoError(f.t, err)
		found = has
	}
	return found
}

// untilAssigned steps blocks until the task is assigned: a task that waited is parked and
// retried at most assign_retry_max_blocks later (x/market scheduler).
func (f *fixture) untilAssigned(taskID uint64) types.Task {
	f.t.Helper()
	for range f.params().AssignRetryMaxBlocks + 1 {
		f.blocks(1)
		if t := f.task(taskID); t.Status != types.TASK_STATUS_PENDING {
			return t
		}
	}
	return f.task(taskID)
}

// ack, commit and reveal play the provider's side of a task in the current block.
func (f *fixture) ack(task types.Task) {
	f.t.Helper()
	_, err := f.ms.AckTask(f.ctx, &types.MsgAckTask{Provider: task.Provider, TaskId: task.Id})
	require.NoError(f.t, err)
}

var (
	testRoot = sha256.Sum256([]byte("result root"))
	testSalt = []byte("0123456789abcdef")
)

func (f *fixture) commit(task types.Task) {
	f.t.Helper()
	_, err := f.ms.CommitResult(f.ctx, &types.MsgCommitResult{Provider: task.Provider, TaskId: task.Id,
		Commitment: types.Commitment(testRoot[:], testSalt, sdk.MustAccAddressFromBech32(task.Provider))})
	require.NoError(f.t, err)
}

func revealMsg(task types.Task) *types.MsgRevealResult {
	return &types.MsgRevealResult{Provider: task.Provider, TaskId: task.Id, ResultRoot: testRoot[:], Salt: testSalt,
		OutputUri: "https://out.example.com/" + fmt.Sprint(task.Id), Usage: types.Usage{GpuSeconds: 600, EnergyJoules: 1000}}
}

func (f *fixture) reveal(task types.Task) {
	f.t.Helper()
	_, err := f.ms.RevealResult(f.ctx, revealMsg(task))
	require.NoError(f.t, err)
}

// unplaceable is a one-task job that no node can take (it asks for a region nobody is in).
func (f *fixture) unplaceable() types.JobSpec {
	s := f.gemmSpec(1)
	s.Requirements.Region = "nowhere"
	return s
}

// assignedTask puts one node of a fresh operator and a one-task job on the market and
// ends the block, so that the task is ASSIGNED to that node (the node's region is name and
// the job asks for it, so that tasks made by several calls never share a node).
func (f *fixture) assignedTask(name string) types.Task {
	f.t.Helper()
	f.addNode(f.operator(name), 8, func(n *gfltypes.Node) { n.Region = name })
	spec := f.gemmSpec(1)
	spec.Requirements.Region = name
	job := f.submit(spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	require.Equal(f.t, types.TASK_STATUS_ASSIGNED, task.Status)
	return task
}

// runningTask is assignedTask, acked.
func (f *fixture) runningTask(name string) types.Task {
	f.t.Helper()
	task := f.assignedTask(name)
	f.ack(task)
	return f.task(task.Id)
}

// committedTask is runningTask, committed; the block is not ended.
func (f *fixture) committedTask(name string) types.Task {
	f.t.Helper()
	task := f.runningTask(name)
	f.blocks(1)
	f.commit(task)
	return f.task(task.Id)
}

// hasEvent says whether the current block emitted a typed event of the given proto name
// (without the package), e.g. "EventJobSubmitted".
func (f *fixture) hasEvent(name string) bool {
	for _, e := range f.ctx.EventManager().Events() {
		if e.Type == "flops.market.v1."+name {
			return true
		}
	}
	return false
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

// state is what a rejected msg must leave unchanged: the module's exported genesis, every
// udps balance, the providers' exposure, and the slashes and jails.
type state struct {
	genesis  string
	balances map[string]string
	exposure map[string]string
	slashes  int
	jails    int
}

func (f *fixture) snapshot() state {
	f.t.Helper()
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(f.t, err)
	bz, err := f.env.Codec.MarshalJSON(gs)
	require.NoError(f.t, err)
	s := state{genesis: string(bz), balances: map[string]string{}, exposure: map[string]string{}, slashes: len(f.coll.slashes), jails: len(f.coll.jails)}
	for _, addr := range f.bank.Holders(udps) {
		s.balances[addr] = f.balance(addr).String()
	}
	for p, e := range f.coll.exposures() {
		s.exposure[sdk.AccAddress(p).String()] = e.String()
	}
	return s
}

func (f *fixture) requireUnchanged(before state) {
	f.t.Helper()
	after := f.snapshot()
	require.Equal(f.t, before.balances, after.balances, "balances changed")
	require.Equal(f.t, before.exposure, after.exposure, "exposure changed")
	require.Equal(f.t, before.slashes, after.slashes, "slashed")
	require.Equal(f.t, before.jails, after.jails, "jailed")
	require.JSONEq(f.t, before.genesis, after.genesis, "module state changed")
}

// requireRejected runs a msg like a transaction and checks that it fails with want and
// changes nothing.
func (f *fixture) requireRejected(want error, run func(ctx sdk.Context) error) {
	f.t.Helper()
	before := f.snapshot()
	err := f.tx(run)
	require.ErrorIs(f.t, err, want)
	f.requireUnchanged(before)
}

// assertInvariants checks the module's registered accounting invariants and that every
// provider's exposure in the fake is what the market holds for it (HeldExposure).
func (f *fixture) assertInvariants() {
	f.t.Helper()
	msg, broken := f.k.EscrowInvariant(f.ctx)
	require.False(f.t, broken, msg)
	msg, broken = f.k.SlotsInvariant(f.ctx)
	require.False(f.t, broken, msg)
	msg, broken = f.k.DueWorkInvariant(f.ctx)
	require.False(f.t, broken, msg)
	msg, broken = f.k.StuckTasksInvariant(f.ctx)
	require.False(f.t, broken, msg)
	msg, broken = f.k.JobCountsInvariant(f.ctx)
	require.False(f.t, broken, msg)
	msg, broken = f.k.JobSpecsInvariant(f.ctx)
	require.False(f.t, broken, msg)
	want, err := f.k.HeldExposure(f.ctx) // tasks in flight, pending failure reports, pool claims
	require.NoError(f.t, err)
	held := f.coll.exposures()
	providers := make([]string, 0, len(held))
	for p := range held {
		providers = append(providers, p)
	}
	sort.Strings(providers)
	for _, p := range providers {
		addr := sdk.AccAddress(p).String()
		w, ok := want[addr]
		if !ok {
			w = sdkmath.ZeroInt()
		}
		require.Truef(f.t, w.Equal(held[p]), "exposure of %s: %s, the market holds %s", addr, held[p], w)
	}
}

// requirePagingAgrees checks every way of paging a list against the whole of it, want:
// by next key and by offset (with the total), every limit from 1 to n+1, in both
// directions. page returns a page's items and its response.
func requirePagingAgrees[T any](t *testing.T, want []T, page func(pg *query.PageRequest) ([]T, *query.PageResponse)) {
	t.Helper()
	for _, reverse := range []bool{false, true} {
		expect := slices.Clone(want)
		if reverse {
			slices.Reverse(expect)
		}
		for limit := uint64(1); limit <= uint64(len(want))+1; limit++ {
			var byKey, byOffset []T
			var key []byte
			for range len(want) + 2 {
				items, res := page(&query.PageRequest{Key: key, Limit: limit, Reverse: reverse})
				require.LessOrEqual(t, uint64(len(items)), limit)
				byKey = append(byKey, items...)
				if key = res.NextKey; key == nil {
					break
				}
			}
			for off := uint64(0); off < uint64(len(want))+limit; off += limit {
				items, res := page(&query.PageRequest{Offset: off, Limit: limit, Reverse: reverse, CountTotal: true})
				require.Equal(t, uint64(len(want)), res.Total)
				byOffset = append(byOffset, items...)
			}
			require.Equal(t, expect, byKey, "reverse %v, limit %d, by next key", reverse, limit)
			require.Equal(t, expect, byOffset, "reverse %v, limit %d, by offset", reverse, limit)
		}
	}
}
