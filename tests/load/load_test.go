package load

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	dbm "github.com/cosmos/cosmos-db"

	sdkmath "cosmossdk.io/math"

	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/network"
	"github.com/flopsnet/flops/worker/chain"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

const (
	udps = app.BondDenom
	// fund is each load account's genesis balance: 10,000 DPS.
	fund = 10_000_000_000
	// sendAmount is each bank send, udps.
	sendAmount = 1_000
	// unitPrice of the pool, udps (0.01 DPS a unit: an inference request).
	unitPrice = 10_000
	// providerFund is the provider's genesis balance: 100,000 DPS, for a bond that covers
	// its GPUs and the exposure of every task and claim in flight.
	providerFund = 100_000_000_000
	// minCollateralPerGPU is x/staking-slash's min_collateral_per_gpu in the load's genesis:
	// 1 DPS (mainnet 100 DPS), so that one provider can register a GPU for every job.
	minCollateralPerGPU = 1_000_000
	// gpusPerNode of the provider's nodes: 8, as a cloud GPU server has.
	gpusPerNode = 8
	// askPerGPUHour of the provider's nodes: 0.1 DPS, so that a job's 10-minute task
	// quotes 16,667 udps, under its max_price_per_task (the load's issue: at 1 DPS a
	// GPU-hour every job was parked and the phase measured no assignment).
	askPerGPUHour = 100_000
)

// loadConfig sizes a run.
type loadConfig struct {
	senders int // accounts sending bank sends and submit-jobs side by side
	txs     int // bank sends, and submit-jobs, in all
	units   int // units posted to the pool and claimed
	batch   int // units per claim tx (commit tx, then reveal + withdraw tx)
	window  int // claim batches committed and not yet revealed, at most
	tasks   int // tasks per submitted job (each assigned on its own)
	blockMS int // the validator's timeout_commit, ms (the block time, less the block's own work)
	jobRate int // submit-jobs per second, paced (FLOPS_LOAD_JOB_RATE); 0: a flood
	// inFlight caps a flood's txs sent and not yet in a block (FLOPS_LOAD_INFLIGHT), under
	// the node's mempool (5,000 txs): a phase of more txs is fed as blocks take them
	inFlight int
	// worker is a flops-worker binary (FLOPS_LOAD_WORKER) run on a node of its own during
	// the submit-job flood (loadWorker); empty: none
	worker string
	// db is the validator's database (FLOPS_LOAD_DB: goleveldb, the default, or pebbledb)
	db dbm.BackendType
}

// smallLoad runs in `make test`; FLOPS_LOAD=1 runs largeLoad.
var (
	smallLoad = loadConfig{senders: 4, txs: 200, units: 200, batch: 20, window: 8, tasks: 1, blockMS: 500, inFlight: 4000}
	largeLoad = loadConfig{senders: 8, txs: 4000, units: 10_000, batch: 100, window: 40, tasks: 1, blockMS: 500, inFlight: 4000}
)

func configFromEnv(t *testing.T) loadConfig {
	cfg := smallLoad
	if os.Getenv("FLOPS_LOAD") == "1" {
		cfg = largeLoad
	}
	for name, field := range map[string]*int{
		"FLOPS_LOAD_TXS": &cfg.txs, "FLOPS_LOAD_UNITS": &cfg.units, "FLOPS_LOAD_BATCH": &cfg.batch, "FLOPS_LOAD_SENDERS": &cfg.senders,
		"FLOPS_LOAD_TASKS": &cfg.tasks, "FLOPS_LOAD_BLOCK_MS": &cfg.blockMS, "FLOPS_LOAD_JOB_RATE": &cfg.jobRate,
		"FLOPS_LOAD_INFLIGHT": &cfg.inFlight,
	} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, name)
			require.Positive(t, n, name)
			*field = n
		}
	}
	cfg.worker = os.Getenv("FLOPS_LOAD_WORKER")
	cfg.db = dbm.GoLevelDBBackend
	if v := os.Getenv("FLOPS_LOAD_DB"); v != "" {
		cfg.db = dbm.BackendType(v)
		require.Contains(t, []dbm.BackendType{dbm.GoLevelDBBackend, dbm.PebbleDBBackend}, cfg.db, "FLOPS_LOAD_DB")
	}
	cfg.txs -= cfg.txs % cfg.senders // an equal share per sender
	require.Positive(t, cfg.txs, "at least one tx per sender")
	return cfg
}

// phase is what one kind of load achieved.
type phase struct {
	txs, msgs, units int
	start            time.Time     // the first broadcast
	elapsed          time.Duration // first broadcast to the block holding the last tx
	admitted         time.Duration // first broadcast to the last CheckTx that took a tx (blast only)
	firstHeight      int64
	lastHeight       int64
	perBlock         map[int64]int // the phase's txs in each block
	gas              int64         // sum of gas used
	// what the phase cost the validator's serial ABCI path (blast only: from the first
	// broadcast to the block holding the last tx)
	abci abciTotals
}

func (p phase) txRate() float64   { return float64(p.txs) / p.elapsed.Seconds() }
func (p phase) unitRate() float64 { return float64(p.units) / p.elapsed.Seconds() }
func (p phase) gasPerTx() float64 { return float64(p.gas) / float64(p.txs) }
func (p phase) blocks() int64     { return p.lastHeight - p.firstHeight + 1 }

// sizes is the phase's txs in each of its blocks, in height order ("1712 2000 ...").
func (p phase) sizes() string {
	var out []string
	for h := p.firstHeight; h <= p.lastHeight; h++ {
		out = append(out, strconv.Itoa(p.perBlock[h]))
	}
	return strings.Join(out, " ")
}

// measure fills a phase from its txs: all must have succeeded.
func measure(ctx context.Context, t *testing.T, d *driver, start time.Time, hashes []string, msgs, units int) (phase, map[string]*sdk.TxResponse) {
	t.Helper()
	last, err := d.w.waitAll(ctx, hashes)
	require.NoError(t, err)
	res, err := d.results(ctx, hashes)
	require.NoError(t, err)
	p := phase{txs: len(hashes), msgs: msgs, units: units, start: start, elapsed: last.Sub(start), perBlock: map[int64]int{}}
	for _, h := range hashes {
		r := res[h]
		require.Zero(t, r.Code, "tx %s failed: %s", h, r.RawLog)
		p.gas += r.GasUsed
		p.perBlock[r.Height]++
		if p.firstHeight == 0 || r.Height < p.firstHeight {
			p.firstHeight = r.Height
		}
		p.lastHeight = max(p.lastHeight, r.Height)
	}
	return p, res
}

// blast sends perSender txs from each sender side by side, one msg each, and measures
// them: as fast as the node takes them (rate 0), or rate a second in all, sender s's
// i-th tx at start + (i x senders + s) / rate; never more than inFlight of them sent and
// not yet in a block (a phase larger than the node's mempool is fed as blocks take it).
func blast(ctx context.Context, t *testing.T, d *driver, kind string, senders []*account, perSender, rate, inFlight int, msg func(from *account, i int) sdk.Msg) (phase, map[string]*sdk.TxResponse) {
	t.Helper()
	require.NoError(t, d.load(ctx, senders...))
	_, err := d.gasLimit(ctx, kind, senders[0], msg(senders[0], 0)) // simulate before the clock starts
	require.NoError(t, err)
	// every tx signed ahead, before the clock starts, so that the flood's window holds
	// the node's work and the broadcasts, not the driver's signing
	signed := make([][][]byte, len(senders))
	g, gctx := errgroup.WithContext(ctx)
	for s, from := range senders {
		g.Go(func() error {
			var err error
			signed[s], err = d.presign(gctx, kind, from, perSender, func(i int) sdk.Msg { return msg(from, i) })
			return err
		})
	}
	require.NoError(t, g.Wait())
	hashes := make([][]string, len(senders))
	stopProfile := profilePhase(t, kind)
	gate := d.w.gate(inFlight)
	start, abciBefore := time.Now(), d.abci.totals()
	g, gctx = errgroup.WithContext(ctx)
	for s, from := range senders {
		g.Go(func() error {
			for i, bz := range signed[s] {
				if err := gate.enter(gctx); err != nil {
					return err
				}
				if rate > 0 {
					at := start.Add(time.Duration(i*len(senders)+s) * time.Second / time.Duration(rate))
					select {
					case <-gctx.Done():
						return gctx.Err()
					case <-time.After(time.Until(at)):
					}
				}
				h, err := d.broadcast(gctx, kind, from, bz)
				if err != nil {
					return err
				}
				hashes[s] = append(hashes[s], h)
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	admitted := time.Since(start)
	var all []string
	for _, hs := range hashes {
		all = append(all, hs...)
	}
	_, err = d.w.waitAll(ctx, all)
	require.NoError(t, err)
	abciAfter := d.abci.totals()
	// the window ends here: reading the txs' results back (GetTxsEvent, about a fifth of
	// the node's CPU while it runs) is the driver's work, not the load's
	stopProfile()
	p, res := measure(ctx, t, d, start, all, len(all), len(all))
	p.abci = abciAfter.minus(abciBefore)
	p.admitted = admitted
	return p, res
}

// profilePhase writes a CPU profile of one blast phase, from its first broadcast to the
// block holding its last tx, into FLOPS_LOAD_CPUPROFILE (a directory) as
// <kind>-<n>.prof; the node and the driver share the process, so the profile holds both.
// It returns the function that stops it (a no-op without FLOPS_LOAD_CPUPROFILE).
func profilePhase(t *testing.T, kind string) func() {
	dir := os.Getenv("FLOPS_LOAD_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var f *os.File
	for n := 1; ; n++ {
		var err error
		f, err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d.prof", kind, n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) {
			continue
		}
		require.NoError(t, err)
		break
	}
	require.NoError(t, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(t, f.Close())
		t.Logf("%s: CPU profile in %s", kind, f.Name())
	}
}

// genesis funds the load accounts and keeps the chain from doing work that is not the
// load's: no PoCP challenges during the run, and tasks that nobody acks do not lapse (the
// scheduler still assigns what it can).
// requireBackend: the validator's databases (the application's state and CometBFT's block
// store, state and tx index) are on disk in the backend asked for, told apart by the
// files only each writes: pebble its OPTIONS-<n> file, goleveldb its LOG.
func requireBackend(t *testing.T, dataDir string, want dbm.BackendType) {
	t.Helper()
	for _, name := range []string{"application", "blockstore", "state", "tx_index"} {
		dir := filepath.Join(dataDir, name+".db")
		options, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
		require.NoError(t, err)
		_, logErr := os.Stat(filepath.Join(dir, "LOG"))
		got := dbm.BackendType("neither")
		switch {
		case len(options) > 0 && logErr != nil:
			got = dbm.PebbleDBBackend
		case len(options) == 0 && logErr == nil:
			got = dbm.GoLevelDBBackend
		}
		require.Equal(t, want, got, "the database in %s", dir)
	}
}

func genesis(t *testing.T, cfg *sdknetwork.Config, accs []*account, withWorker bool) {
	var auth authtypes.GenesisState
	cfg.Codec.MustUnmarshalJSON(cfg.GenesisState[authtypes.ModuleName], &auth)
	var bank banktypes.GenesisState
	cfg.Codec.MustUnmarshalJSON(cfg.GenesisState[banktypes.ModuleName], &bank)
	for _, a := range accs {
		// with its public key already on chain, as an account that has sent before: no
		// measured tx pays the one-time write of its sender's key (about 13,000 gas and a
		// new store entry, which made the first bank-send phase of a run of many one-tx
		// senders dearer than the second)
		packed, err := authtypes.PackAccounts(authtypes.GenesisAccounts{authtypes.NewBaseAccount(a.addr, a.priv.PubKey(), 0, 0)})
		require.NoError(t, err)
		auth.Accounts = append(auth.Accounts, packed...)
		amount := int64(fund)
		if a.name == "provider" {
			amount = providerFund
		}
		bank.Balances = append(bank.Balances, banktypes.Balance{Address: a.addr.String(), Coins: sdk.NewCoins(sdk.NewInt64Coin(udps, amount))})
	}
	cfg.GenesisState[authtypes.ModuleName] = cfg.Codec.MustMarshalJSON(&auth)
	cfg.GenesisState[banktypes.ModuleName] = cfg.Codec.MustMarshalJSON(&bank)

	var gfl gfltypes.GenesisState
	cfg.Codec.MustUnmarshalJSON(cfg.GenesisState[gfltypes.ModuleName], &gfl)
	gfl.Params.ChallengeIntervalBlocks = 1_000_000
	cfg.GenesisState[gfltypes.ModuleName] = cfg.Codec.MustMarshalJSON(&gfl)

	var market markettypes.GenesisState
	cfg.Codec.MustUnmarshalJSON(cfg.GenesisState[markettypes.ModuleName], &market)
	market.Params.AckTimeoutBlocks = 1_000_000
	if withWorker {
		// the real worker's tasks reveal during the run: none settles before the run's
		// exact escrow and balance checks are done
		market.Params.ChallengeWindowBlocks = 10_000
	}
	cfg.GenesisState[markettypes.ModuleName] = cfg.Codec.MustMarshalJSON(&market)

	var ss sstypes.GenesisState
	cfg.Codec.MustUnmarshalJSON(cfg.GenesisState[sstypes.ModuleName], &ss)
	ss.Params.MinCollateralPerGpu = sdkmath.NewInt(minCollateralPerGPU)
	cfg.GenesisState[sstypes.ModuleName] = cfg.Codec.MustMarshalJSON(&ss)
}

// nodeSpec is node n: an 8 x A100 server that takes inference and batch work.
func nodeSpec(n int) gfltypes.NodeSpec {
	spec := gfltypes.NodeSpec{
		Region: "eu-west", Endpoint: fmt.Sprintf("https://load-provider-%d.example.com", n),
		Workloads:     []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_INFERENCE, gfltypes.WORKLOAD_CLASS_BATCH},
		AskPerGpuHour: sdk.NewInt64Coin(udps, askPerGPUHour), ClaimedGflops: 24,
	}
	for g := range gpusPerNode {
		spec.Gpus = append(spec.Gpus, gfltypes.GpuInfo{Model: "NVIDIA A100-SXM4-40GB", Uuid: fmt.Sprintf("GPU-load-%d-%d", n, g), MemoryMib: 40960, ComputeCapability: "8.0"})
	}
	return spec
}

// nodesFor is how many nodes give every job of the run a free GPU (no task is acked, so
// none frees its GPU during the run).
func nodesFor(lc loadConfig) int { return (lc.txs*lc.tasks + gpusPerNode - 1) / gpusPerNode }

// bondFor is the provider's collateral: its GPUs' minimum, the exposure of every job's task
// and of the claims in flight (value x result_penalty_multiple each), and a margin.
func bondFor(lc loadConfig, penaltyMultiple uint32) sdkmath.Int {
	gpus := sdkmath.NewInt(int64(nodesFor(lc) * gpusPerNode * minCollateralPerGPU))
	spec := jobSpec(lc.tasks)
	tasks := spec.MaxPricePerTask.Amount.Add(spec.PriorityTip.Amount).MulRaw(int64(lc.txs * lc.tasks))
	claims := sdkmath.NewInt(int64(lc.window * lc.batch * unitPrice))
	return gpus.Add(tasks.Add(claims).MulRaw(int64(penaltyMultiple))).MulRaw(2)
}

// poolSpec is an inference pool verified NONE (liveness only: the cheapest class a pool
// takes; BUILTIN_GEMM adds the on-chain sample checks to every reveal).
func poolSpec(units int) markettypes.PoolSpec {
	return markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, Verification: markettypes.VERIFICATION_CLASS_NONE,
		UnitPrice: sdk.NewInt64Coin(udps, unitPrice), Budget: sdk.NewInt64Coin(udps, int64(units+10)*unitPrice), MaxProviders: 4, UnitMaxDuration: time.Minute,
	}
}

// jobSpec is an ASSIGN job of n tasks verified NONE.
func jobSpec(n int) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin:   markettypes.BuiltinArgs{GemmN: 256, GemmR: 1},
		TaskCount: uint32(n), Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin(udps, 100_000), MaxDuration: 10 * time.Minute,
		Deadline: time.Now().Add(24 * time.Hour), PriorityTip: sdk.NewInt64Coin(udps, 1_000), Mode: markettypes.ALLOCATION_MODE_ASSIGN,
		VerificationBudget: sdk.NewInt64Coin(udps, 0),
	}
}

func unitInput(i int) markettypes.Input {
	h := sha256.Sum256([]byte(fmt.Sprintf("load prompt %d", i)))
	return markettypes.Input{Uri: fmt.Sprintf("https://client.example.com/in/%d", i), Sha256: fmt.Sprintf("%x", h)}
}

// unitResult is the provider's result root and salt for a unit.
func unitResult(unit uint64) (root, salt []byte) {
	r := sha256.Sum256([]byte(fmt.Sprintf("load result %d", unit)))
	return r[:], []byte(fmt.Sprintf("load-salt-%016d", unit))
}

func balance(ctx context.Context, t *testing.T, c *chain.Client, addr sdk.AccAddress) sdkmath.Int {
	t.Helper()
	res, err := c.Bank.Balance(ctx, &banktypes.QueryBalanceRequest{Address: addr.String(), Denom: udps})
	require.NoError(t, err)
	return res.Balance.Amount
}

// One validator with a real CometBFT (500 ms timeout_commit, zero gas prices), one run:
// bank sends from several accounts, then a POOL (the owner posts units, a provider claims
// them: commit, reveal in a later block, and withdraw its credits in the reveal's tx, one
// transfer per claim batch), then one-task submit-jobs from the same accounts as the bank
// sends, then bank sends again. Each rate is logged with its ratio to the mean bank-send
// rate (inclusion in a block, from the first broadcast); the assertions are on
// correctness only: every tx succeeded, every unit was paid exactly once, the pool's
// escrow drained to zero, and every balance moved by exactly what the txs say.
func TestPoolThroughputVsBankSend(t *testing.T) {
	if testing.Short() {
		t.Skip("in-process network: skipped with -short")
	}
	lc := configFromEnv(t)
	began := time.Now()

	senders := make([]*account, lc.senders)
	recipients := make([]*account, lc.senders)
	for i := range senders {
		senders[i] = newAccount(fmt.Sprintf("sender-%d", i))
		recipients[i] = newAccount(fmt.Sprintf("recipient-%d", i))
	}
	owner, provider := newAccount("pool-owner"), newAccount("provider")
	all := append(append(append([]*account{}, senders...), recipients...), owner, provider)
	var worker *loadWorker
	if lc.worker != "" {
		worker = newLoadWorker(t, lc.worker)
		all = append(all, worker.acc)
	}

	// state on disk: the in-memory DB deadlocked under the large run's queries
	cfg := network.OnDiskConfig(1, lc.db)
	cfg.TimeoutCommit = time.Duration(lc.blockMS) * time.Millisecond
	clock, abciTime := newCommitClock(), newABCITimer()
	cfg.AppConstructor = abciTime.wrap(clock.listen(cfg.AppConstructor))
	genesis(t, &cfg, all, worker != nil)
	net, err := sdknetwork.New(t, t.TempDir(), cfg)
	require.NoError(t, err)
	defer net.Cleanup()
	_, err = net.WaitForHeightWithTimeout(2, 60*time.Second)
	require.NoError(t, err)
	requireBackend(t, net.Validators[0].Ctx.Config.DBDir(), lc.db)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := chain.Dial(ctx, chain.Config{GRPC: net.Validators[0].AppConfig.GRPC.Address}, quiet)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	d, err := newDriver(c)
	require.NoError(t, err)
	d.abci = abciTime
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go d.w.run(wctx)

	mp, err := c.Market.Params(ctx, &markettypes.QueryParamsRequest{})
	require.NoError(t, err)
	params := mp.Params
	inFlight := sdkmath.NewInt(int64(lc.window * lc.batch * unitPrice)).MulRaw(int64(params.ResultPenaltyMultiple))
	bond := bondFor(lc, params.ResultPenaltyMultiple)
	require.True(t, inFlight.LTE(bond), "the claims in flight reserve %s udps, more than the bond", inFlight)
	escrowAcc := authtypes.NewModuleAddress(markettypes.ModuleName)

	// Setup through worker/chain's Signer, the way flops-worker and a client do it: the
	// provider bonds and registers a node, the owner opens the pool, the node joins.
	escrowStart, ownerStart := balance(ctx, t, c, escrowAcc), balance(ctx, t, c, owner.addr)
	nodeID, poolID := setup(ctx, t, c, quiet, owner, provider, lc, bond)

	// 1. Bank sends (again after the market phases: the machine's load drifts, so the
	// reference is the mean of the two and both are logged).
	perSender := lc.txs / lc.senders
	bankSends := func() phase {
		before := map[string]sdkmath.Int{}
		for _, a := range all {
			before[a.name] = balance(ctx, t, c, a.addr)
		}
		p, _ := blast(ctx, t, d, "bank-send", senders, perSender, 0, lc.inFlight, func(from *account, _ int) sdk.Msg {
			to := recipients[indexOf(senders, from)]
			return banktypes.NewMsgSend(from.addr, to.addr, sdk.NewCoins(sdk.NewInt64Coin(udps, sendAmount)))
		})
		moved := sdkmath.NewInt(int64(perSender * sendAmount))
		for i := range senders {
			require.Equal(t, before[senders[i].name].Sub(moved).String(), balance(ctx, t, c, senders[i].addr).String(), "sender %d", i)
			require.Equal(t, before[recipients[i].name].Add(moved).String(), balance(ctx, t, c, recipients[i].addr).String(), "recipient %d", i)
		}
		return p
	}
	bank := bankSends()

	// 2. POOL: post the units, then claim them.
	providerBefore := balance(ctx, t, c, provider.addr)
	post := postUnits(ctx, t, d, owner, poolID, lc.units, int(params.MaxUnitsPerMsg))
	claim, payouts := claimUnits(ctx, t, d, provider, poolID, nodeID, lc)

	// every unit paid once, in one withdrawal per claim batch
	pl, err := c.Market.Pool(ctx, &markettypes.QueryPoolRequest{PoolId: poolID})
	require.NoError(t, err)
	require.Equal(t, uint64(lc.units), pl.Pool.PaidUnits)
	require.Zero(t, pl.Pool.OpenUnits)
	require.True(t, pl.Pool.Unpaid.IsZero(), "unpaid credits %s", pl.Pool.Unpaid)
	for _, u := range []uint64{1, uint64(lc.units)} {
		_, err := c.Market.Unit(ctx, &markettypes.QueryUnitRequest{PoolId: poolID, UnitId: u})
		require.Error(t, err, "a paid unit is pruned")
	}
	wantPaid := sdkmath.ZeroInt()
	for _, n := range payouts {
		wantPaid = wantPaid.Add(markettypes.SplitPayment(sdkmath.NewInt(int64(n*unitPrice)), params.TakeRatePpm, params.TakePoolSharePpm).Provider)
	}
	require.Equal(t, providerBefore.Add(wantPaid).String(), balance(ctx, t, c, provider.addr).String(), "the provider got its units' price less the take")
	// closing refunds the unused budget: the escrow is back where it was
	_, err = d.submit(ctx, "close-pool", owner, &markettypes.MsgClosePool{Owner: owner.addr.String(), PoolId: poolID})
	require.NoError(t, err)
	pl, err = c.Market.Pool(ctx, &markettypes.QueryPoolRequest{PoolId: poolID})
	require.NoError(t, err)
	require.Equal(t, markettypes.POOL_STATUS_CLOSED, pl.Pool.Status)
	require.True(t, pl.Pool.Escrow.IsZero(), "pool escrow %s after close", pl.Pool.Escrow)
	require.Equal(t, escrowStart.String(), balance(ctx, t, c, escrowAcc).String(), "the market escrow holds nothing of the pool")
	require.Equal(t, ownerStart.SubRaw(int64(lc.units*unitPrice)).String(), balance(ctx, t, c, owner.addr).String(), "the owner paid exactly its units")

	// 3. Submit-jobs, lc.tasks tasks each, from the bank senders (and a real worker, when
	// there is one, taking the tasks its node is given).
	var workerIdle float64
	var workerBefore workerMetrics
	var workerNode uint64
	if worker != nil {
		worker.start(ctx, t, c, net.Validators[0].AppConfig.GRPC.Address)
		workerNode = worker.nodeID
		workerIdle, workerBefore = worker.idle(ctx, t)
	}
	spec := jobSpec(lc.tasks)
	escrowBefore := balance(ctx, t, c, escrowAcc)
	before := map[string]sdkmath.Int{}
	for _, a := range senders {
		before[a.name] = balance(ctx, t, c, a.addr)
	}
	jobsBegan := time.Now()
	jobs, _ := blast(ctx, t, d, "submit-job", senders, perSender, lc.jobRate, lc.inFlight, func(from *account, _ int) sdk.Msg {
		return &markettypes.MsgSubmitJob{Owner: from.addr.String(), Spec: spec}
	})
	budget := spec.Budget()
	for _, a := range senders {
		require.Equal(t, before[a.name].Sub(budget.MulRaw(int64(perSender))).String(), balance(ctx, t, c, a.addr).String(), "%s paid its jobs' escrow", a.name)
		res, err := c.Market.JobsByOwner(ctx, &markettypes.QueryJobsByOwnerRequest{Owner: a.addr.String(), Pagination: &query.PageRequest{Limit: uint64(perSender) + 1}})
		require.NoError(t, err)
		require.Len(t, res.Jobs, perSender, "%s's jobs", a.name)
	}
	require.Equal(t, escrowBefore.Add(budget.MulRaw(int64(lc.txs))).String(), balance(ctx, t, c, escrowAcc).String(), "the escrow holds every job's budget")
	assigned := waitAssigned(ctx, t, c, d, lc.txs*lc.tasks, provider.addr.String(), workerNode, spec)
	assigned.logRate(t, jobs.start)
	if lc.jobRate > 0 {
		t.Logf("submit-jobs paced at %d/s: %d tasks/s offered to the scheduler", lc.jobRate, lc.jobRate*lc.tasks)
	}
	if worker != nil {
		taken := worker.waitTaken(ctx, t, c)
		require.NotEmpty(t, taken, "the worker's node took tasks during the flood")
		for _, tk := range taken {
			require.Equal(t, worker.acc.addr.String(), tk.Provider, "task %d", tk.Id)
		}
		worker.report(ctx, t, c, clock, taken, workerIdle, workerBefore, worker.scrape(ctx, t), time.Since(jobsBegan))
	}

	bank2 := bankSends()
	report(t, lc, bank, bank2, post, claim, jobs, time.Since(began))
}

// assignment is what the scheduler did with the load's jobs: each job's tasks and the
// blocks from the job's inclusion to the task's assignment.
type assignment struct {
	tasks   int
	delays  []int64   // AssignedHeight - SubmittedHeight, sorted
	peak    int       // the most assignments one block made
	allSeen time.Time // when the watcher read the block of the last assignment
	first   int64     // the first job's inclusion height
	last    int64     // the last assignment's height
}

// waitAssigned waits (block by block, at most 2 minutes after the last submission) until
// every one of the n jobs has its task assigned, and asserts each went to one of the
// provider's nodes at a price its ask quotes and the job allows. It reads the chain: every
// job's inclusion height and every task's assignment height.
func waitAssigned(ctx context.Context, t *testing.T, c *chain.Client, d *driver, n int, provider string, workerNode uint64, spec markettypes.JobSpec) assignment {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		tasks := allTasks(ctx, t, c)
		require.Len(t, tasks, n, "every job's tasks")
		open := 0
		for _, tk := range tasks {
			if tk.AssignedHeight == 0 {
				open++
			}
		}
		if open == 0 {
			a := assignment{tasks: n}
			submitted := map[uint64]int64{}
			for _, j := range allJobs(ctx, t, c) {
				submitted[j.Id] = j.SubmittedHeight
			}
			for _, tk := range tasks {
				if workerNode != 0 && tk.NodeId == workerNode {
					// the real worker's: acked and run, perhaps revealed already (waitTaken checks them)
					require.NotEqual(t, markettypes.TASK_STATUS_PENDING, tk.Status, "task %d", tk.Id)
				} else {
					require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, tk.Status, "task %d (nobody acks in the load)", tk.Id)
					require.Equal(t, provider, tk.Provider, "task %d", tk.Id)
				}
				require.True(t, tk.Price.IsPositive() && tk.Price.LTE(spec.MaxPricePerTask.Amount), "task %d at %s", tk.Id, tk.Price)
				sub, ok := submitted[tk.JobId]
				require.True(t, ok, "task %d's job %d", tk.Id, tk.JobId)
				a.delays = append(a.delays, tk.AssignedHeight-sub)
				if a.first == 0 || sub < a.first {
					a.first = sub
				}
				a.last = max(a.last, tk.AssignedHeight)
			}
			// the time of the last assignment's block as the watcher read it, not of this
			// read of every task (tens of pages in a large run, seconds on a busy node)
			var err error
			a.allSeen, err = d.w.readAt(ctx, a.last)
			require.NoError(t, err, "block %d", a.last)
			sort.Slice(a.delays, func(i, j int) bool { return a.delays[i] < a.delays[j] })
			perBlock := map[int64]int{}
			for _, tk := range tasks {
				perBlock[tk.AssignedHeight]++
				a.peak = max(a.peak, perBlock[tk.AssignedHeight])
			}
			return a
		}
		require.Truef(t, time.Now().Before(deadline), "%d of %d jobs still unassigned 2 minutes after the last submission", open, n)
		select {
		case <-ctx.Done():
			t.Fatalf("assignments: %v", ctx.Err())
		case <-d.w.next():
		}
	}
}

func allTasks(ctx context.Context, t *testing.T, c *chain.Client) []markettypes.Task {
	return allPages(t, func(pr *query.PageRequest) ([]markettypes.Task, *query.PageResponse, error) {
		res, err := c.Market.Tasks(ctx, &markettypes.QueryTasksRequest{Pagination: pr})
		if err != nil {
			return nil, nil, err
		}
		return res.Tasks, res.Pagination, nil
	})
}

func allJobs(ctx context.Context, t *testing.T, c *chain.Client) []markettypes.Job {
	return allPages(t, func(pr *query.PageRequest) ([]markettypes.Job, *query.PageResponse, error) {
		res, err := c.Market.Jobs(ctx, &markettypes.QueryJobsRequest{Pagination: pr})
		if err != nil {
			return nil, nil, err
		}
		return res.Jobs, res.Pagination, nil
	})
}

// allPages reads a paginated list to its end, 1,000 items a page.
func allPages[T any](t *testing.T, page func(*query.PageRequest) ([]T, *query.PageResponse, error)) []T {
	t.Helper()
	var out []T
	var key []byte
	for {
		items, next, err := page(&query.PageRequest{Key: key, Limit: 1000})
		require.NoError(t, err)
		out = append(out, items...)
		if next == nil || len(next.NextKey) == 0 {
			return out
		}
		key = next.NextKey
	}
}

// logRate logs the assignment rate and the histogram of blocks from inclusion to
// assignment.
func (a assignment) logRate(t *testing.T, start time.Time) {
	pct := func(p int) int64 { return a.delays[(len(a.delays)-1)*p/100] }
	buckets := []struct {
		name   string
		lo, hi int64
	}{{"0", 0, 0}, {"1", 1, 1}, {"2", 2, 2}, {"3-5", 3, 5}, {"6-10", 6, 10}, {"11-30", 11, 30}, {">30", 31, 1 << 62}}
	var hist []string
	for _, b := range buckets {
		n := 0
		for _, d := range a.delays {
			if d >= b.lo && d <= b.hi {
				n++
			}
		}
		hist = append(hist, fmt.Sprintf("%s:%d", b.name, n))
	}
	t.Logf("assignment: %d tasks all assigned, blocks %d..%d; %.1f assignments/s (first broadcast to the block of the last assignment), at most %d in one block; blocks from inclusion to assignment p50 %d, p99 %d, max %d; histogram %s",
		a.tasks, a.first, a.last, float64(a.tasks)/a.allSeen.Sub(start).Seconds(), a.peak, pct(50), pct(99), a.delays[len(a.delays)-1], strings.Join(hist, " "))
}

func indexOf(accs []*account, a *account) int {
	for i, x := range accs {
		if x == a {
			return i
		}
	}
	panic("unknown account")
}

// setup bonds and registers the provider's nodes (a free GPU for every job), opens the
// pool and joins it with the first node, through worker/chain's Signer; it returns the
// first node's id and the pool's.
func setup(ctx context.Context, t *testing.T, c *chain.Client, log *slog.Logger, owner, provider *account, lc loadConfig, bond sdkmath.Int) (uint64, uint64) {
	t.Helper()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	ps, ws := chain.NewSigner(c, provider.priv, log), chain.NewSigner(c, owner.priv, log)
	go func() { _ = ps.Run(sctx) }()
	go func() { _ = ws.Run(sctx) }()

	op := provider.addr.String()
	res, err := ps.Submit(ctx, &sstypes.MsgBond{Provider: op, Amount: sdk.NewCoin(udps, bond)}, &gfltypes.MsgRegisterNode{Operator: op, Spec: nodeSpec(0)})
	require.NoError(t, err)
	require.Len(t, res.Responses, 2)
	var reg gfltypes.MsgRegisterNodeResponse
	require.NoError(t, reg.Unmarshal(res.Responses[1]))
	require.Equal(t, gfltypes.NODE_STATUS_ACTIVE, reg.Status)
	const perTx = 25
	for n := 1; n < nodesFor(lc); n += perTx {
		var msgs []sdk.Msg
		for i := n; i < min(n+perTx, nodesFor(lc)); i++ {
			msgs = append(msgs, &gfltypes.MsgRegisterNode{Operator: op, Spec: nodeSpec(i)})
		}
		_, err := ps.Submit(ctx, msgs...)
		require.NoError(t, err, "register nodes %d..%d", n, n+len(msgs)-1)
	}

	res, err = ws.Submit(ctx, &markettypes.MsgCreatePool{Owner: owner.addr.String(), Spec: poolSpec(lc.units)})
	require.NoError(t, err)
	var created markettypes.MsgCreatePoolResponse
	require.NoError(t, created.Unmarshal(res.Responses[0]))

	_, err = ps.Submit(ctx, &markettypes.MsgJoinPool{Provider: op, PoolId: created.PoolId, NodeId: reg.NodeId})
	require.NoError(t, err)
	return reg.NodeId, created.PoolId
}

// postUnits posts n units in MsgSubmitUnits of at most perMsg units, one msg a tx.
func postUnits(ctx context.Context, t *testing.T, d *driver, owner *account, poolID uint64, n, perMsg int) phase {
	t.Helper()
	require.NoError(t, d.load(ctx, owner))
	msgs := func(from, to int) sdk.Msg {
		m := &markettypes.MsgSubmitUnits{Owner: owner.addr.String(), PoolId: poolID}
		for i := from; i < to; i++ {
			m.Units = append(m.Units, unitInput(i))
		}
		return m
	}
	_, err := d.gasLimit(ctx, "submit-units", owner, msgs(0, min(perMsg, n)))
	require.NoError(t, err)
	var hashes []string
	start := time.Now()
	for i := 0; i < n; i += perMsg {
		h, err := d.send(ctx, "submit-units", owner, msgs(i, min(i+perMsg, n)))
		require.NoError(t, err)
		hashes = append(hashes, h)
	}
	p, _ := measure(ctx, t, d, start, hashes, len(hashes), n)
	return p
}

// claimBatch is one claim tx and its reveal.
type claimBatch struct {
	units          []uint64
	commit, reveal string
}

// claimUnits plays the provider: it commits batches of units (one MsgCommitUnit per unit,
// a batch a tx), keeps at most window batches committed and unrevealed, and reveals a batch
// once its commit's block is committed (a reveal must land in a later block), with a
// MsgWithdrawPoolEarnings in the same tx: one payment per batch. It returns the phase and
// the units paid by each withdrawal.
func claimUnits(ctx context.Context, t *testing.T, d *driver, prov *account, poolID, nodeID uint64, lc loadConfig) (phase, []int) {
	t.Helper()
	require.NoError(t, d.load(ctx, prov))
	var batches []*claimBatch
	for u := 1; u <= lc.units; u += lc.batch {
		b := &claimBatch{}
		for id := u; id < min(u+lc.batch, lc.units+1); id++ {
			b.units = append(b.units, uint64(id))
		}
		batches = append(batches, b)
	}
	op := prov.addr.String()
	commitMsgs := func(b *claimBatch) []sdk.Msg {
		var out []sdk.Msg
		for _, u := range b.units {
			root, salt := unitResult(u)
			out = append(out, &markettypes.MsgCommitUnit{Provider: op, PoolId: poolID, UnitId: u, NodeId: nodeID, Commitment: markettypes.Commitment(root, salt, prov.addr)})
		}
		return out
	}
	revealMsgs := func(b *claimBatch) []sdk.Msg {
		var out []sdk.Msg
		for _, u := range b.units {
			root, salt := unitResult(u)
			out = append(out, &markettypes.MsgRevealUnit{Provider: op, PoolId: poolID, UnitId: u, ResultRoot: root, Salt: salt,
				OutputUri: fmt.Sprintf("https://load-provider.example.com/out/%d", u)})
		}
		return append(out, &markettypes.MsgWithdrawPoolEarnings{Provider: op, PoolId: poolID})
	}
	_, err := d.gasLimit(ctx, "pool-commit", prov, commitMsgs(batches[0])...)
	require.NoError(t, err)

	start := time.Now()
	committed, revealed := 0, 0
	for revealed < len(batches) {
		tick := d.w.next()
		progressed := false
		for revealed < committed {
			b := batches[revealed]
			// A reveal must land in a block after its commit's: a tx the mempool takes once
			// the commit's block is stored goes into a later block. The first reveal is
			// simulated for its gas on the app's committed state, which may still be a block
			// behind the block store, so it waits one block more.
			s, ok := d.w.included(b.commit)
			wait := int64(1)
			if !d.hasGas("pool-reveal") {
				wait = 2
			}
			if !ok || d.w.latest() < s.height+wait {
				break
			}
			b.reveal, err = d.send(ctx, "pool-reveal", prov, revealMsgs(b)...)
			require.NoError(t, err)
			revealed++
			progressed = true
		}
		if committed < len(batches) && committed-revealed < lc.window {
			batches[committed].commit, err = d.send(ctx, "pool-commit", prov, commitMsgs(batches[committed])...)
			require.NoError(t, err)
			committed++
			continue
		}
		if !progressed {
			select {
			case <-ctx.Done():
				t.Fatalf("claims: %v", ctx.Err())
			case <-tick:
			}
		}
	}
	var hashes []string
	var reveals []string
	msgs := 0
	for _, b := range batches {
		hashes = append(hashes, b.commit, b.reveal)
		reveals = append(reveals, b.reveal)
		msgs += 2*len(b.units) + 1
	}
	p, res := measure(ctx, t, d, start, hashes, msgs, lc.units)

	// each unit credited exactly once; each reveal tx pays its batch in one withdrawal
	paid := map[uint64]int{}
	var payouts []int
	for _, h := range reveals {
		withdrawn := 0
		for _, e := range res[h].Events {
			msg, err := sdk.ParseTypedEvent(e)
			if err != nil {
				continue
			}
			switch ev := msg.(type) {
			case *markettypes.EventUnit:
				if ev.Status == markettypes.UNIT_STATUS_PAID {
					paid[ev.UnitId]++
				}
			case *markettypes.EventPool:
				if ev.Action == "withdrawn" {
					withdrawn++
					payouts = append(payouts, int(ev.Count))
				}
			}
		}
		require.Equal(t, 1, withdrawn, "one withdrawal in reveal tx %s", h)
	}
	require.Len(t, paid, lc.units)
	for u, n := range paid {
		require.Equal(t, 1, n, "unit %d paid %d times", u, n)
	}
	return p, payouts
}

func report(t *testing.T, lc loadConfig, bank, bank2, post, claim, jobs phase, total time.Duration) {
	base := (bank.txRate() + bank2.txRate()) / 2
	gasBase := float64(bank.gas+bank2.gas) / float64(bank.txs+bank2.txs)
	t.Logf("load: %d senders, %d bank sends (twice) and %d submit-jobs of %d tasks; pool of %d units, %d per claim tx, at most %d claim txs unrevealed; one validator, %d ms timeout_commit, %s",
		lc.senders, lc.txs, lc.txs, lc.tasks, lc.units, lc.batch, lc.window, lc.blockMS, lc.db)
	t.Logf("%-12s %6s %6s %8s %8s %7s %6s %9s %10s", "phase", "txs", "units", "txs/s", "units/s", "ratio", "blocks", "gas/tx", "CheckTx/s")
	line := func(name string, p phase, rate float64) {
		admitted, note := "-", ""
		if p.admitted > 0 {
			admitted = fmt.Sprintf("%.1f", float64(p.txs)/p.admitted.Seconds())
		}
		if p.blocks() <= 2 {
			note = " (in <= 2 blocks: inclusion latency, not throughput)"
		}
		t.Logf("%-12s %6d %6d %8.1f %8.1f %6.3fx %6d %9.0f %10s%s", name, p.txs, p.units, p.txRate(), p.unitRate(), rate/base, p.blocks(), p.gasPerTx(), admitted, note)
	}
	line("bank-send", bank, bank.txRate())
	line("pool-post", post, post.unitRate())
	line("pool-claim", claim, claim.unitRate())
	line("submit-job", jobs, jobs.txRate())
	line("bank-send", bank2, bank2.txRate())
	t.Logf("txs/s and units/s: first broadcast to the block that holds the last tx; CheckTx/s: to the last tx the mempool took; ratio: units/s (pool phases) or txs/s over the mean bank-send rate %.1f txs/s", base)
	// the serial ABCI path (abciTimer): what sets each flood's rate on one validator; and
	// how each flood was cut into blocks, which moves its rate and its assignments'
	// latency from one run to the next (a flood's blocks alternate large and small)
	for _, l := range []struct {
		name string
		p    phase
	}{{"bank-send", bank}, {"submit-job", jobs}, {"bank-send", bank2}} {
		t.Logf("ABCI %-10s %s", l.name, abciLine(l.p))
		t.Logf("     %-10s txs per block: %s", l.name, l.p.sizes())
	}
	t.Logf("pool-claim: %.1f units settled/s = %.3fx bank sends/s; %.2f txs/s = %.3fx; %.1f units/tx (a commit tx and a reveal+withdraw tx per %d units); %.0f gas/unit (commit + reveal + share of the withdrawal) = %.2fx a bank send",
		claim.unitRate(), claim.unitRate()/base, claim.txRate(), claim.txRate()/base, float64(claim.units)/float64(claim.txs), lc.batch,
		float64(claim.gas)/float64(claim.units), float64(claim.gas)/float64(claim.units)/gasBase)
	paced := ""
	if lc.jobRate > 0 {
		paced = fmt.Sprintf(" (paced at %d/s: the rate is the pace, not what the node can take)", lc.jobRate)
	}
	t.Logf("submit-job: %.1f txs/s = %.3fx bank sends/s (DESIGN.md section 8: >= 0.5x)%s; gas %.0f = %.2fx a bank send (<= 3x)",
		jobs.txRate(), jobs.txRate()/base, paced, jobs.gasPerTx(), jobs.gasPerTx()/gasBase)
	t.Logf("run took %s", total.Round(100*time.Millisecond))
}
