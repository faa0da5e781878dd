package app_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/server"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/kv"
	simtypes "github.com/cosmos/cosmos-sdk/types/simulation"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"
	"github.com/cosmos/cosmos-sdk/x/feegrant"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	simcli "github.com/cosmos/cosmos-sdk/x/simulation/client/cli"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/flopsnet/flops/app"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The simulator's flags (-NumBlocks, -BlockSize, -Seed, ...), with CI-size defaults so that
// `go test ./...` runs the simulations small; `make sim-long` passes its own.
func init() {
	simcli.GetSimulatorFlags()
	for name, value := range map[string]string{"NumBlocks": "25", "BlockSize": "30", "GenesisTime": "1767225600"} {
		if err := flag.Set(name, value); err != nil {
			panic(err)
		}
	}
}

// simApp is the app as the simulations run it: every registered invariant asserted at
// the end of every block (a break panics the block, failing the simulation).
func simApp(logger log.Logger, db dbm.DB, loadLatest bool, opts servertypes.AppOptions, base ...func(*baseapp.BaseApp)) *app.App {
	m := simtestutil.AppOptionsMap{server.FlagInvCheckPeriod: 1, flags.FlagHome: opts.Get(flags.FlagHome)}
	return app.New(logger, db, loadLatest, m, base...)
}

func simState(a *app.App) simsx.SimStateFactory {
	return simsx.SimStateFactory{
		Codec:         a.AppCodec(),
		AppStateFn:    withRunningNetwork(a.AppCodec(), simtestutil.AppStateFn(a.AppCodec(), a.SimulationManager(), a.DefaultGenesis())),
		BlockedAddr:   app.BlockedAddresses(),
		AccountSource: a.AccountKeeper,
		BalanceSource: liquidBalances{a.BankKeeper},
	}
}

// TestFullAppSimulation runs the simulation and checks the states it reached: every write
// to the market's and the index's records in every block (tasks, jobs, bids, pools, units,
// disputes, history, PoCP outcomes) is recorded, and a simulation whose weights or timing
// never settle a task or pass a challenge fails, since it tests nothing there.
func TestFullAppSimulation(t *testing.T) {
	var recorders sync.Map // *app.App -> *stateRecorder
	factory := recordingApp(&recorders)
	var mu sync.Mutex
	union := map[string]int{}
	long := 0
	t.Cleanup(func() { // after every seed's (parallel) run
		t.Logf("over every seed, the msgs that reached their msg server by type, and the states reached:%s", counts(union))
		if missing := unreached(union, mustReach); len(missing) > 0 {
			t.Errorf("the simulations never reached %v", missing)
		}
		lists := [][]string{mustReachLong, mustReachLongRun, flopsMsgs}
		if union["carried-proposal:PROPOSAL_STATUS_PASSED"] > 0 {
			lists = append(lists, govMsgs) // governance carried (app/sim.go's govSim on)
		}
		if missing := unreached(union, lists...); long >= 4 && len(missing) > 0 {
			t.Errorf("the %d long simulations never reached %v", long, missing)
		}
	})
	simsx.RunWithSeeds(t, factory, simState, simSeeds(), nil, func(tb testing.TB, ti simsx.TestInstance[*app.App], _ []simtypes.Account) {
		tb.Helper()
		v, ok := recorders.Load(ti.App)
		require.True(tb, ok)
		rec := v.(*stateRecorder)
		require.NoError(tb, rec.err)
		tb.Logf("seed %d, %d blocks: the msgs that reached their msg server by type (msg:), and the states the simulation reached (records written in that state):%s",
			ti.Cfg.Seed, ti.Cfg.NumBlocks, counts(rec.seen))
		mu.Lock()
		defer mu.Unlock()
		for k, n := range rec.seen {
			union[k] += n
		}
		if ti.Cfg.NumBlocks >= 250 {
			long++
			missing := unreached(rec.seen, mustReach, mustReachLong)
			if rec.seen["carried-proposal:PROPOSAL_STATUS_PASSED"] > 0 && len(missing) > 0 {
				// Governance may stop work on purpose with params within their bounds: seed
				// 4 of 250 blocks set x/reputation's min_score to 0.568 (beta 0.902) at block
				// 42, and no simulated node stayed eligible long enough to finish a job. Its
				// invariants are still checked every block; the seeds together must still
				// reach every state (above).
				tb.Logf("seed %d: governance changed params (proposal:PROPOSAL_STATUS_PASSED above), and the simulation never reached %v: not required of it", ti.Cfg.Seed, missing)
				return
			}
			require.Emptyf(tb, missing, "seed %d: the simulation never reached these", ti.Cfg.Seed)
		}
	})
}

// recordingApp is simApp with a stateRecorder (its msgs by type, the states it reached),
// kept in recorders under the app.
func recordingApp(recorders *sync.Map) func(log.Logger, dbm.DB, bool, servertypes.AppOptions, ...func(*baseapp.BaseApp)) *app.App {
	return func(logger log.Logger, db dbm.DB, loadLatest bool, opts servertypes.AppOptions, base ...func(*baseapp.BaseApp)) *app.App {
		rec := &stateRecorder{seen: map[string]int{}, gemmJobs: map[uint64]bool{}}
		record := func(b *baseapp.BaseApp) {
			b.SetStreamingManager(storetypes.StreamingManager{ABCIListeners: []storetypes.ABCIListener{rec}})
			b.SetCircuitBreaker(rec)
		}
		a := simApp(logger, db, loadLatest, opts, append(base, record)...)
		rec.cdc = a.AppCodec()
		listFlopsMsgs.Do(func() {
			for _, url := range a.InterfaceRegistry().ListImplementations(sdk.MsgInterfaceProtoName) {
				switch {
				case strings.HasPrefix(url, "/flops.") && (strings.HasSuffix(url, ".MsgUpdateParams") || strings.HasSuffix(url, ".MsgApproveNode")):
					govMsgs = append(govMsgs, "msg:"+url)
				case strings.HasPrefix(url, "/flops."):
					flopsMsgs = append(flopsMsgs, "msg:"+url)
				}
			}
			sort.Strings(flopsMsgs)
			sort.Strings(govMsgs)
		})
		a.CommitMultiStore().AddListeners([]storetypes.StoreKey{a.GetKey(markettypes.StoreKey), a.GetKey(gfltypes.StoreKey), a.GetKey(govtypes.StoreKey), a.GetKey(dpstypes.StoreKey)})
		recorders.Store(a, rec)
		return a
	}
}

// counts prints seen's counts, one a line, by name.
func counts(seen map[string]int) string {
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "\n  %6d %s", seen[k], k)
	}
	return b.String()
}

// unreached lists what of the lists seen lacks.
func unreached(seen map[string]int, lists ...[]string) []string {
	var missing []string
	for _, l := range lists {
		for _, k := range l {
			if seen[k] == 0 {
				missing = append(missing, k)
			}
		}
	}
	return missing
}

// mustReach is what the simulations reach: every seed of a run of 250 blocks or more, the
// seeds of a CI-size run together: the task life to a verified result, PoCP answers passed.
var mustReach = []string{
	"job:JOB_STATUS_ACTIVE", "task:TASK_STATUS_ASSIGNED", "task:TASK_STATUS_RUNNING", "task:TASK_STATUS_COMMITTED",
	"history:TaskRevealed", "task:TASK_STATUS_VERIFIED", "task:TASK_STATUS_EXPIRED", "task:TASK_STATUS_CANCELLED",
	"pocp:passed",
}

// mustReachLong is what every seed of a long run (make sim-long) reaches besides: results
// settled and failed, auctions won and lost, pools paying units and closing, failure
// reports, client challenges, PoCP challenges failed and missed, ugfl burned (the genesis
// providers' power, sim_genesis_test.go).
var mustReachLong = []string{
	"task:TASK_STATUS_SETTLED", "task:TASK_STATUS_FAILED", "bid:BID_STATUS_WON", "bid:BID_STATUS_LOST",
	"unit:UNIT_STATUS_PAID", "pool:POOL_STATUS_CLOSED", "history:TaskFailureReported", "history:DisputeOpened",
	"pocp:missed", "pocp:failed", "job:JOB_STATUS_COMPLETED", "gemm-job:JOB_STATUS_COMPLETED", "gemm-unit:UNIT_STATUS_PAID",
	"ugfl:burned",
}

// flopsMsgs are "msg:" and every flops Msg's type URL but governance's: a long run of four
// seeds or more delivers each to its msg server in one seed at least. govMsgs, the
// governance-only ones (every MsgUpdateParams, MsgApproveNode), are required too when
// governance is carried (app/sim.go's govSim, off by default): x/gov's own simulated
// proposals never pass.
var (
	flopsMsgs, govMsgs []string
	listFlopsMsgs      sync.Once
)

// mustReachLongRun is what a long run of four seeds or more reaches in one seed at least:
// drand rounds brought on chain (drand is on in half of the random geneses), DPS paid
// for availability (a seed's random shares, rate and min_score may leave the genesis
// providers' short-lived power unpaid: 4 of 24 seeds of 500 blocks did).
var mustReachLongRun = []string{"beacon:drand", "dps:availability-paid"}

// stateRecorder reads every block's writes to the market's, the index's, governance's and
// the rewards' stores (the commit's change set) and counts the records written by kind
// and status: a record's last value in each block (a task revealed and verified in one
// block counts as verified; the history keeps every step).
type stateRecorder struct {
	cdc      codec.Codec
	seen     map[string]int
	gemmJobs map[uint64]bool // the BUILTIN_GEMM jobs (a job's record holds no spec)
	power    *uint64         // the network's power (= the ugfl supply) as last written
	err      error
}

func (*stateRecorder) ListenFinalizeBlock(context.Context, abci.RequestFinalizeBlock, abci.ResponseFinalizeBlock) error {
	return nil
}

// IsAllowed counts the msgs that reach their msg server, by type ("msg:<type url>"): the
// app's circuit breaker is asked for every msg of a tx that passed the ante handler, before
// the msg runs (the simulator delivers its operations' txs outside the blocks' tx lists,
// so ListenFinalizeBlock never sees them). It allows them all.
func (r *stateRecorder) IsAllowed(_ context.Context, typeURL string) (bool, error) {
	r.seen["msg:"+typeURL]++
	return true, nil
}

func (r *stateRecorder) ListenCommit(_ context.Context, _ abci.ResponseCommit, changes []*storetypes.StoreKVPair) error {
	for _, kv := range changes {
		if kv.Delete || len(kv.Key) == 0 {
			continue
		}
		if err := r.record(kv.StoreKey, kv.Key, kv.Value); err != nil && r.err == nil {
			r.err = err
		}
	}
	return nil
}

func (r *stateRecorder) record(store string, key, value []byte) error {
	is := func(p collections.Prefix) bool { return bytes.HasPrefix(key, p.Bytes()) }
	switch {
	case store == markettypes.StoreKey && is(markettypes.TasksKey):
		var t markettypes.Task
		if err := r.cdc.Unmarshal(value, &t); err != nil {
			return err
		}
		r.seen["task:"+t.Status.String()]++
	case store == markettypes.StoreKey && is(markettypes.JobsKey):
		var j markettypes.Job
		if err := r.cdc.Unmarshal(value, &j); err != nil {
			return err
		}
		r.seen["job:"+j.Status.String()]++
		if r.gemmJobs[j.Id] {
			r.seen["gemm-job:"+j.Status.String()]++
		}
	case store == markettypes.StoreKey && is(markettypes.JobSpecsKey):
		var spec markettypes.JobSpec
		if err := r.cdc.Unmarshal(value, &spec); err != nil {
			return err
		}
		if spec.Verification == markettypes.VERIFICATION_CLASS_BUILTIN_GEMM { // written once, at submission
			r.gemmJobs[binary.BigEndian.Uint64(key[len(markettypes.JobSpecsKey):])] = true
		}
	case store == markettypes.StoreKey && is(markettypes.HistoryKey):
		var e markettypes.HistoryEntry
		if err := r.cdc.Unmarshal(value, &e); err != nil {
			return err
		}
		r.seen["history:"+e.Event]++
	case store == markettypes.StoreKey && is(markettypes.BidsKey):
		var b markettypes.Bid
		if err := r.cdc.Unmarshal(value, &b); err != nil {
			return err
		}
		r.seen["bid:"+b.Status.String()]++
	case store == markettypes.StoreKey && is(markettypes.PoolsKey):
		var p markettypes.Pool
		if err := r.cdc.Unmarshal(value, &p); err != nil {
			return err
		}
		r.seen["pool:"+p.Status.String()]++
		if p.PaidUnits > 0 { // a paid unit's record is removed; its pool counts it
			r.seen["unit:UNIT_STATUS_PAID"]++
			if p.Spec.Verification == markettypes.VERIFICATION_CLASS_BUILTIN_GEMM {
				r.seen["gemm-unit:UNIT_STATUS_PAID"]++
			}
		}
	case store == markettypes.StoreKey && is(markettypes.UnitsKey):
		var u markettypes.Unit
		if err := r.cdc.Unmarshal(value, &u); err != nil {
			return err
		}
		r.seen["unit:"+u.Status.String()]++
	case store == markettypes.StoreKey && is(markettypes.DisputesKey):
		var d markettypes.Dispute
		if err := r.cdc.Unmarshal(value, &d); err != nil {
			return err
		}
		r.seen["dispute:"+d.Status.String()]++
	case store == gfltypes.StoreKey && is(gfltypes.ChallengesKey):
		var c gfltypes.Challenge
		if err := r.cdc.Unmarshal(value, &c); err != nil {
			return err
		}
		r.seen["challenge:"+c.Status.String()]++
	case store == gfltypes.StoreKey && is(gfltypes.DrandRoundsKey):
		r.seen["beacon:drand"]++
	case store == dpstypes.StoreKey && is(dpstypes.DistributionsKey):
		// an epoch's emission: the GFL it was shared over, and paid to availability (by
		// the nodes' power) and to verified work
		var d dpstypes.Distribution
		if err := r.cdc.Unmarshal(value, &d); err != nil {
			return err
		}
		r.seen["dps:distribution:"+d.Phase.String()]++
		if d.TotalGfl > 0 {
			r.seen["dps:epoch-with-gfl"]++
		}
		if d.PaidAvailability.IsPositive() {
			r.seen["dps:availability-paid"]++
		}
		if d.PaidWork.IsPositive() {
			r.seen["dps:work-paid"]++
		}
	case store == gfltypes.StoreKey && bytes.Equal(key, gfltypes.NetworkPowerKey.Bytes()):
		// the ugfl supply: minted or burned since the last write, and held at all (the
		// genesis providers' nodes, sim_genesis_test.go)
		var np gfltypes.NetworkPower
		if err := r.cdc.Unmarshal(value, &np); err != nil {
			return err
		}
		switch {
		case r.power != nil && np.TotalGflops < *r.power:
			r.seen["ugfl:burned"]++
		case r.power != nil && np.TotalGflops > *r.power:
			r.seen["ugfl:minted"]++
		}
		if np.TotalGflops > 0 {
			r.seen["ugfl:held"]++
		}
		r.power = &np.TotalGflops
	case store == govtypes.StoreKey && is(govtypes.ProposalsKeyPrefix):
		var prop govv1.Proposal
		if err := r.cdc.Unmarshal(value, &prop); err != nil {
			return err
		}
		for _, m := range prop.Messages {
			r.seen["proposal:"+prop.Status.String()+":"+m.TypeUrl]++
		}
		if strings.HasPrefix(prop.Title, app.CarriedProposalTitle) { // govSim's: carried
			r.seen["carried-proposal:"+prop.Status.String()]++
		}
	case store == gfltypes.StoreKey && is(gfltypes.StatsKey):
		var s gfltypes.NodeEpochStats
		if err := r.cdc.Unmarshal(value, &s); err != nil {
			return err
		}
		for name, n := range map[string]uint32{"pocp:passed": s.Passed, "pocp:failed": s.Failed, "pocp:missed": s.Missed} {
			if n > 0 {
				r.seen[name]++
			}
		}
	}
	return nil
}

// simStores are the stores compared after an export and import, with the prefixes that
// legitimately differ (queues and indexes rebuilt in another order, history that genesis
// does not carry).
var simStores = map[string][][]byte{
	authtypes.StoreKey:     nil,
	banktypes.StoreKey:     nil,
	stakingtypes.StoreKey:  {stakingtypes.UnbondingQueueKey, stakingtypes.RedelegationQueueKey, stakingtypes.ValidatorQueueKey, stakingtypes.HistoricalInfoKey, stakingtypes.UnbondingIDKey, stakingtypes.UnbondingIndexKey, stakingtypes.UnbondingTypeKey, stakingtypes.ValidatorUpdatesKey},
	distrtypes.StoreKey:    nil,
	slashingtypes.StoreKey: {slashingtypes.ValidatorMissedBlockBitmapKeyPrefix},
	govtypes.StoreKey:      nil,
	authzkeeper.StoreKey:   {authzkeeper.GrantQueuePrefix},
	feegrant.StoreKey:      {feegrant.FeeAllowanceQueueKeyPrefix},
	epochstypes.StoreKey:   nil,
	// An operator's pointer to its current PoCP round is rebuilt at import from the open
	// rounds (the newest); live, it goes when that round ends, even while an older round
	// still waits for reveals. Either way the operator's next challenge opens a new round
	// (openRound joins a round only while it still issues challenges), noted in issue 17.
	gfltypes.StoreKey: {gfltypes.OperatorRoundsKey},
	dpstypes.StoreKey: nil,
	// the scheduler's parking (groups and tasks that found no node wait out a backoff) is
	// not in genesis: an import queues every pending task afresh and the first block
	// examines them; the imported state is checked against every invariant instead. An
	// unfinished job whose deadline was already processed (its verification tasks still
	// open) gets its deadline entry back at import, and the first block runs it again:
	// idempotent (it only expires pending or assigned primaries, none are left), noted
	// in issue 17.
	// The scheduler's class index (each class's active nodes by position, for the uniform
	// draw) is rebuilt at import in node id order; the live one is in the order nodes
	// joined and left (a leaving node's slot takes the last one): the same members, other
	// positions, both uniform; the slots invariant checks it after the import.
	// The job counts are recounted at import, up to the last job id; live, an ASSIGN
	// submission leaves them as they are (the jobs from their next_job_id up count as
	// active until the next status move folds them in): the same counts in other bytes,
	// which TestAppImportExport compares through the JobCounts query instead.
	// The queue's counts follow the queue, parking included, and are recounted at import
	// with no moves pending; live, the simulation's txs (delivered after the EndBlocker)
	// leave moves pending into the next block. The queue invariant checks them.
	markettypes.StoreKey: {markettypes.AssignQueueKey, markettypes.AssignRetryAtKey, markettypes.AssignRetriesKey, markettypes.WaitingKey, markettypes.GroupsKey, markettypes.GroupRetryAtKey, markettypes.JobDeadlinesKey, markettypes.MemberChunksKey, markettypes.MemberPosKey, markettypes.JobCountsKey,
		markettypes.QueueCountsKey, markettypes.QueueMovesKey},
	reputationtypes.StoreKey:   nil,
	stakingslashtypes.StoreKey: nil,
}

// TestAppImportExport: the state after a simulation, exported and imported into a fresh
// app, is the same in every store (but the prefixes of simStores).
func TestAppImportExport(t *testing.T) {
	var recorders sync.Map // *app.App -> *stateRecorder
	simsx.RunWithSeeds(t, recordingApp(&recorders), simState, simSeeds(), nil, func(tb testing.TB, ti simsx.TestInstance[*app.App], _ []simtypes.Account) {
		tb.Helper()
		a := ti.App
		if v, ok := recorders.Load(a); ok {
			// what the simulation before the export did (make sim-long's report adds these
			// up over the seeds)
			rec := v.(*stateRecorder)
			require.NoError(tb, rec.err)
			tb.Logf("seed %d, %d blocks, before the export: the msgs that reached their msg server by type (msg:), and the states reached:%s",
				ti.Cfg.Seed, ti.Cfg.NumBlocks, counts(rec.seen))
		}
		exported, err := a.ExportAppStateAndValidators(false, nil, nil)
		require.NoError(tb, err)
		fresh := simsx.NewSimulationAppInstance(tb, ti.Cfg, simApp).App
		var gs app.GenesisState
		require.NoError(tb, json.Unmarshal(exported.AppState, &gs))
		ctxA := a.NewContextLegacy(true, cmtproto.Header{Height: a.LastBlockHeight()})
		ctxB := fresh.NewContextLegacy(true, cmtproto.Header{Height: a.LastBlockHeight()})
		_, err = fresh.ModuleManager.InitGenesis(ctxB, fresh.AppCodec(), gs)
		if err != nil && strings.Contains(err.Error(), "validator set is empty after InitGenesis") {
			tb.Skip("every validator unbonded")
		}
		require.NoError(tb, err)
		require.NoError(tb, fresh.StoreConsensusParams(ctxB, exported.ConsensusParams))
		require.NoError(tb, fresh.Invariants.AssertAll(ctxB), "the imported state breaks an invariant")
		names := make([]string, 0, len(simStores))
		for name := range simStores {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			storeA, storeB := ctxA.KVStore(a.GetKey(name)), ctxB.KVStore(fresh.GetKey(name))
			diffA, diffB := simtestutil.DiffKVStores(storeA, storeB, simStores[name])
			require.Equalf(tb, len(diffA), len(diffB), "store %s: unequal sets of key-values", name)
			require.Emptyf(tb, diffA, "store %s differs after import:\n%s", name, diffLog(a, name, diffA, diffB))
		}
		countsA, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).JobCounts(ctxA, &markettypes.QueryJobCountsRequest{})
		require.NoError(tb, err)
		countsB, err := marketkeeper.NewQueryServerImpl(fresh.MarketKeeper).JobCounts(ctxB, &markettypes.QueryJobCountsRequest{})
		require.NoError(tb, err)
		require.Equal(tb, countsA, countsB, "the job counts after import")
	})
}

// TestAppSimulationAfterImport: a simulation goes on from the state another one exported.
func TestAppSimulationAfterImport(t *testing.T) {
	simsx.RunWithSeeds(t, simApp, simState, simSeeds(), nil, func(tb testing.TB, ti simsx.TestInstance[*app.App], accs []simtypes.Account) {
		tb.Helper()
		a := ti.App
		exported, err := a.ExportAppStateAndValidators(true, nil, nil)
		require.NoError(tb, err)
		// x/staking's factory cancels unbonding entries by creation height, which a
		// zero-height export resets to 0 and the msg server then refuses ("invalid
		// height"): that operation is off after the import
		cfg := ti.Cfg
		cfg.ParamsFile = filepath.Join(tb.TempDir(), "params.json")
		require.NoError(tb, os.WriteFile(cfg.ParamsFile, []byte(`{"op_weight_msg_cancel_unbonding_delegation": 0}`), 0o600))
		simsx.RunWithSeed(tb, cfg, simApp, func(fresh *app.App) simsx.SimStateFactory {
			st := simState(fresh)
			st.AppStateFn = func(_ *rand.Rand, _ []simtypes.Account, cfg simtypes.Config) (json.RawMessage, []simtypes.Account, string, time.Time) {
				return exported.AppState, accs, cfg.ChainID, time.Unix(cfg.GenesisTime, 0)
			}
			return st
		}, ti.Cfg.Seed, nil)
	})
}

// TestAppStateDeterminism: the same seed, run several times one after the other, gives
// the same app hash at every height (read from each block's FinalizeBlock response).
func TestAppStateDeterminism(t *testing.T) {
	const runs = 3
	cfg := simcli.NewConfigFromFlags()
	cfg.ChainID = simsx.SimAppChainID
	for _, seed := range simSeeds() {
		hashes := make([][][]byte, runs)
		for run := range runs {
			record := func(b *baseapp.BaseApp) {
				b.SetStreamingManager(storetypes.StreamingManager{ABCIListeners: []storetypes.ABCIListener{hashRecorder{&hashes[run]}}})
			}
			factory := func(logger log.Logger, db dbm.DB, loadLatest bool, opts servertypes.AppOptions, base ...func(*baseapp.BaseApp)) *app.App {
				return simApp(logger, db, loadLatest, opts, append(base, record)...)
			}
			simsx.RunWithSeed(t, cfg, factory, simState, seed, nil)
		}
		require.NotEmpty(t, hashes[0])
		require.NotEqual(t, hashes[0][0], hashes[0][len(hashes[0])-1], "the recorder sees each block's own hash")
		for run := 1; run < runs; run++ {
			require.Lenf(t, hashes[run], len(hashes[0]), "seed %d: run %d made another number of blocks", seed, run+1)
			for h := range hashes[0] {
				require.Equalf(t, hashes[0][h], hashes[run][h], "seed %d: run %d's app hash differs from run 1's at block %d", seed, run+1, h+1)
			}
		}
		t.Logf("seed %d: %d runs, the same app hash at each of %d blocks (last %X)", seed, runs, len(hashes[0]), hashes[0][len(hashes[0])-1])
	}
}

// hashRecorder keeps each block's app hash.
type hashRecorder struct{ hashes *[][]byte }

func (r hashRecorder) ListenFinalizeBlock(_ context.Context, _ abci.RequestFinalizeBlock, res abci.ResponseFinalizeBlock) error {
	*r.hashes = append(*r.hashes, res.AppHash)
	return nil
}

func (hashRecorder) ListenCommit(context.Context, abci.ResponseCommit, []*storetypes.StoreKVPair) error {
	return nil
}

// simSeeds are the seeds of the simulations: seed 1 at CI size (SIM_SEEDS=n runs seeds
// 1..n, SIM_SEED=s seed s alone).
func simSeeds() []int64 {
	if v, err := strconv.ParseInt(os.Getenv("SIM_SEED"), 10, 64); err == nil {
		return []int64{v} // one seed again, e.g. one a long run failed on
	}
	n := 1
	if v, err := strconv.Atoi(os.Getenv("SIM_SEEDS")); err == nil && v > 0 {
		n = v
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}

// diffLog decodes a store's differing entries for the failure message, or, where the
// module's decoder cannot (an entry missing on one side), prints them raw.
func diffLog(a *app.App, name string, diffA, diffB []kv.Pair) (out string) {
	defer func() {
		if recover() != nil {
			out = fmt.Sprintf("only in the simulated app: %x\nonly in the imported one: %x", diffA, diffB)
		}
	}()
	return simtestutil.GetSimulationLog(name, a.SimulationManager().StoreDecoders, diffA, diffB)
}
