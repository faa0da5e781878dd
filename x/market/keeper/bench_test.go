package keeper_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/collections"
	corestore "cosmossdk.io/core/store"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/internal/appdb"
	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/market"
	"github.com/flopsnet/flops/x/market/types"
)

// BenchmarkEndBlockAssign measures one EndBlock that assigns 1,000 single-task jobs
// (max_assign_per_block = 1000) against N nodes of 8 GPUs, all eligible. DESIGN.md
// section 8: an assignment costs O(log N), and 1,000 of them against 100,000 nodes take
// well under 100 ms. The nodes and 1,000 pending jobs are set up once per N, outside the
// timer, and committed (as the chain's store is at the start of a block); each iteration
// runs the EndBlock on a fresh cache branch of that state (as the chain does) and drops it.
// Each iteration draws other nodes (a salt in the fake beacon), as each block does: with
// the same draws every iteration, the members and slots the first one read stayed in
// IAVL's caches, and at 100k nodes a block with new draws (which mostly miss them)
// measures about a fifth slower than that. The members are packed 16 a key (members.go),
// so that the misses left at 100k nodes are the slots'.
// Besides assign=1000 (the target), assign=1 and assign=100 (the default param) run on the
// same state with a lower max_assign_per_block, which separates the cost that grows with N
// from the cost that grows with the assignments already made in the block.
func BenchmarkEndBlockAssign(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			benchEndBlockAssign(b, keepertest.NewEnv(b, types.StoreKey, market.AppModule{}), n, []uint32{1, 100, 1000}, nil)
		})
	}
}

// benchEndBlockAssign is BenchmarkEndBlockAssign at n nodes on env's store: 1,000 jobs
// pending, one sub-benchmark per max_assign_per_block in assigns. settle, if not nil, runs
// once the state is committed, before anything is timed.
func benchEndBlockAssign(b *testing.B, env keepertest.Env, n int, assigns []uint32, settle func()) {
	const jobs = 1000
	f := buildFixture(b, env, func(p *types.Params) { p.MaxAssignPerBlock = jobs }, false)
	f.addNodes(n)
	f.commitStore()
	ids := f.submitGemms(jobs)
	f.commitStore()
	if settle != nil {
		settle()
	}
	// the jobs were submitted in an earlier block: the EndBlock reads each one's history
	// counter from the committed state (a job assigned in its own block reads the block's
	// transient copy: TestAssignmentStoreOps)
	h := f.ctx.BlockHeight() + 1
	f.ctx = f.ctx.WithBlockHeight(h).WithBlockTime(f.ctx.BlockTime().Add(time.Second)).WithHeaderHash(blockHash(h))

	// once, untimed: one EndBlock assigns every job
	ctx, _ := f.ctx.CacheContext()
	require.NoError(b, f.k.EndBlocker(ctx))
	f.requireAssigned(ctx, ids)

	for _, assign := range assigns {
		b.Run(fmt.Sprintf("assign=%d", assign), func(b *testing.B) {
			p := f.params()
			p.MaxAssignPerBlock = assign
			defer func() { f.gfl.salt = 0 }()
			for b.Loop() {
				b.StopTimer()
				f.gfl.salt++ // new draws (see BenchmarkEndBlockAssign)
				ctx, _ := f.ctx.CacheContext()
				ctx = ctx.WithEventManager(sdk.NewEventManager())
				if err := f.k.Params.Set(ctx, p); err != nil {
					b.Fatal(err)
				}
				// the garbage of the setup (100k nodes: gigabytes) is collected here, not
				// by GC workers stealing the timed EndBlock's CPU; the EndBlock's own
				// garbage is still collected inside the timer
				runtime.GC()
				b.StartTimer()
				if err := f.k.EndBlocker(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(assign), "ns/assignment")
			// the work budget an assignment spends (assign_gas_per_block / this = the
			// assignments a block can make)
			b.ReportMetric(float64(f.k.LastBlockWork().AssignGas)/float64(assign), "gas/assignment")
		})
	}
}

// BenchmarkEndBlockAssignInterBlockCache is BenchmarkEndBlockAssign's 1,000 assignments
// at 10,000 nodes on the market's store as flopsd runs it (no inter-block cache: its
// app.toml and --inter-block-cache default to false) and behind the SDK's inter-block
// cache (ibc=sdk, what the SDK's own default, --inter-block-cache=true, puts in front of
// every store: an ARC of 1,000 entries). Against IAVL's own fast-node cache (100,000
// entries), the ARC's misses and evictions on a draw's random reads cost more than its
// hits save: here, 3 rounds, 49-55 ms against 63-71 (1.26-1.37x). The same comparison
// at 1,000 nodes gave 32-34 ms against 40, and at 100,000 nodes 62-74 against 83-100
// (2 rounds each, BenchmarkEndBlockAssign on a fixture with the cache).
//
// At 100,000 nodes it also runs behind an ARC of 2^20 entries (ibc=1M), which holds the
// whole store (the setup's writes go through it), so that a draw's random reads never
// reach IAVL: they fell from 18 ms a block to 4, but the ARC's own lookups took 17 ms
// (hashicorp's ARC on a million entries), and the block was no faster: 80, 71 and 83 ms
// against 74, 67 and 78 in three pairs, each run one after the other in one process
// (2026-12-02). What a block pays at 100k nodes over 1k is random access to a working
// set of that size, whichever cache holds it.
func BenchmarkEndBlockAssignInterBlockCache(b *testing.B) {
	for _, c := range []struct {
		name  string
		nodes int
		env   func(testing.TB, string, ...module.AppModuleBasic) keepertest.Env
	}{
		{"ibc=none", 10_000, keepertest.NewEnv},
		{"ibc=sdk", 10_000, keepertest.NewEnvWithInterBlockCache},
		{"ibc=none", 100_000, keepertest.NewEnv},
		{"ibc=1M", 100_000, func(t testing.TB, key string, m ...module.AppModuleBasic) keepertest.Env {
			return keepertest.NewEnvWithInterBlockCacheSize(t, 1<<20, key, m...)
		}},
	} {
		b.Run(fmt.Sprintf("%s/nodes=%d", c.name, c.nodes), func(b *testing.B) {
			benchEndBlockAssign(b, c.env(b, types.StoreKey, market.AppModule{}), c.nodes, []uint32{1000}, nil)
		})
	}
}

// BenchmarkEndBlockAssignOnDisk is BenchmarkEndBlockAssign's 1,000 assignments on the
// market's store as a node keeps it: IAVL on goleveldb in a directory, opened as flopsd
// opens its application database (internal/appdb), next to the in-memory database
// BenchmarkEndBlockAssign runs on (db=mem). After the setup the database is compacted,
// so that the state is in goleveldb's tables, as on a node with a history longer than its
// memtable (35 MB of tables at 100,000 nodes), and not in the memtable: a read IAVL's
// fast-node cache misses is then a goleveldb Get (bloom filter, table index, 8 MiB block
// cache, a file read on a miss), where on db=mem it is a lookup in a B-tree.
//
// At 100,000 nodes (2026-12-02, profiled, 20 blocks each) goleveldb's Get took 21 ms of
// a block (a fifth) where the B-tree's took 11 (an eighth): a node pays about a tenth
// more than BenchmarkEndBlockAssign says (the profiled blocks: 106 ms against 89). Timed
// without the profiler, the difference was inside this machine's noise: 86-121 ms on
// goleveldb against 84-131 in memory over nine pairs. A larger block cache recovered
// little: the blocks goleveldb read from its files were 6% of the block, and 64 to 512
// MiB against its 8 gave 81-119 ms against 102-116 (three rounds), so flopsd keeps 8.
func BenchmarkEndBlockAssignOnDisk(b *testing.B) {
	for _, nodes := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("db=mem/nodes=%d", nodes), func(b *testing.B) {
			benchEndBlockAssign(b, keepertest.NewEnv(b, types.StoreKey, market.AppModule{}), nodes, []uint32{1000}, nil)
		})
		b.Run(fmt.Sprintf("db=goleveldb/nodes=%d", nodes), func(b *testing.B) {
			db, err := appdb.Open(b.TempDir(), dbm.GoLevelDBBackend, appdb.DefaultOptions())
			require.NoError(b, err)
			b.Cleanup(func() { require.NoError(b, db.Close()) })
			benchEndBlockAssign(b, keepertest.NewEnvOnDB(b, db, types.StoreKey, market.AppModule{}), nodes, []uint32{1000}, func() {
				require.NoError(b, db.(*dbm.GoLevelDB).ForceCompact(nil, nil))
			})
		})
	}
}

// TestBenchSaltDrawsOtherNodes holds the salt BenchmarkEndBlockAssign raises to what it is
// for: the same block run with another salt gives its tasks other nodes (with one salt,
// the benchmark would time the same draws, warm in IAVL's caches, run after run), and
// the same salt gives the same nodes (the draws stay the beacon's, reproducible).
func TestBenchSaltDrawsOtherNodes(t *testing.T) {
	const jobs = 20
	f := newFixture(t, func(p *types.Params) { p.MaxAssignPerBlock = jobs })
	f.addNodes(1000)
	ids := f.submitGemms(jobs)
	f.commitStore()
	nodes := func(salt uint64) []uint64 {
		f.gfl.salt = salt
		defer func() { f.gfl.salt = 0 }()
		ctx, _ := f.ctx.CacheContext()
		require.NoError(t, f.k.EndBlocker(ctx))
		f.requireAssigned(ctx, ids)
		var out []uint64
		for _, id := range ids {
			tasks, err := f.k.JobTasksForTest(ctx, id)
			require.NoError(t, err)
			out = append(out, tasks[0].NodeId)
		}
		return out
	}
	unsalted, one, two := nodes(0), nodes(1), nodes(2)
	require.Equal(t, one, nodes(1), "the same salt draws the same nodes")
	require.NotEqual(t, unsalted, one, "a salt draws other nodes than none")
	require.NotEqual(t, one, two, "another salt draws other nodes")
}

// BenchmarkEndBlockAssignSameBlock is BenchmarkEndBlockAssign's 1,000 assignments at
// 10,000 nodes with the jobs submitted in the block itself, as make load's are: the
// block's branch holds their writes (about 8,000 keys of the market's store, not yet
// committed) when EndBlock runs. Every iterator EndBlock opens on that branch goes
// through them: the SDK's cache store sorts the writes it holds unsorted when an
// iterator opens, and, when they are many, moves only those in the iterator's range (and
// about a thousand more) into its sorted index, so each of the due-work queues' iterators
// sorted the block's writes again. The submissions are outside the timer.
func BenchmarkEndBlockAssignSameBlock(b *testing.B) {
	const jobs, nodes = 1000, 10_000
	f := newFixture(b, func(p *types.Params) { p.MaxAssignPerBlock = jobs })
	f.addNodes(nodes)
	f.commitStore()
	base := f.ctx
	defer func() { f.ctx = base }()
	block := func() (sdk.Context, []uint64) {
		ctx, _ := base.CacheContext()
		f.ctx = ctx.WithEventManager(sdk.NewEventManager())
		ids := f.submitGemms(jobs)
		return f.ctx, ids
	}
	// once, untimed: one EndBlock assigns every job submitted in its block
	ctx, ids := block()
	require.NoError(b, f.k.EndBlocker(ctx))
	f.requireAssigned(ctx, ids)
	for b.Loop() {
		b.StopTimer()
		ctx, _ := block()
		runtime.GC()
		b.StartTimer()
		if err := f.k.EndBlocker(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/jobs, "ns/assignment")
}

// TestAssignmentStoreOps holds an assignment to the store operations it needs: 200
// one-task jobs assigned in one EndBlock against 2,000 idle nodes, counted by the market
// keeper's store (the collateral and reputation modules' reads are their own). Every
// operation goes through the gas meter, two cache layers and IAVL (BenchmarkStoreFloor:
// 41 µs for the 23 of an assignment on this machine, about 40% of the assignment), so
// their number sets what an assignment costs: a change that adds one fails here,
// deterministically, where a timing could not, and is a decision to make on purpose
// (update the table and say why in the commit).
//
// Per assignment, read: the task, the job and its spec, the group (in the queue walk and
// again at the dequeue), the two drawn members (their chunks of 16) and their slots, the
// job's history counter, the class's idle/loaded counter, the queue's pending moves.
// Written: the task and its (provider, node) index entry, the slot, its load index entry
// (moved: a delete and a set), the class counter, the ack deadline, the history entry and
// its counter, the queue's pending moves (one record the block's cache holds, which the
// EndBlocker folds into the queue's counts and deletes: queue_counts.go); deleted: the
// queue entry and the group record.
//
// A job submitted in the block that assigns it has no history counter in the committed
// state yet, and its count is read from the block's transient store instead (historyAdded):
// before, a real node's database answered that read for a key that is not there (in the
// 12,000-sender make load, 27% of the EndBlock).
func TestAssignmentStoreOps(t *testing.T) {
	const jobs = 200
	for _, c := range []struct {
		name    string
		later   bool // the jobs were submitted in an earlier block
		counter int  // reads of the job's history counter per assignment
	}{
		{"submitted in an earlier block", true, 1},
		{"submitted in the same block", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newCountingFixture(t, func(p *types.Params) { p.MaxAssignPerBlock = jobs })
			f.addNodes(2000)
			ids := f.submitGemms(jobs)
			f.commitStore()
			ctx, _ := f.ctx.CacheContext()
			if c.later {
				ctx = ctx.WithBlockHeight(ctx.BlockHeight() + 1)
			}
			f.ops.On = true
			require.NoError(t, f.k.EndBlocker(ctx))
			f.ops.On = false
			f.requireAssigned(ctx, ids)
			requireAssignmentOps(t, f, jobs, c.counter)
			// the count the history counter holds either way: one entry added
			for _, id := range ids {
				added, err := f.k.HistoryAdded.Get(ctx, id)
				require.NoError(t, err)
				require.Equal(t, uint32(1), added, "job %d", id)
			}
		})
	}
}

// requireAssignmentOps checks the store operations counted while `jobs` one-task jobs were
// assigned against TestAssignmentStoreOps's table (counter: the history counter's reads
// per assignment).
func requireAssignmentOps(t *testing.T, f *fixture, jobs, counter int) {
	t.Helper()
	per := func(n int) float64 { return float64(n) / float64(jobs) }
	name := map[byte]string{}
	for _, c := range []struct {
		name   string
		prefix collections.Prefix
	}{
		{"tasks", types.TasksKey}, {"jobs", types.JobsKey}, {"job specs", types.JobSpecsKey}, {"groups", types.GroupsKey},
		{"member chunks", types.MemberChunksKey}, {"slots", types.SlotsKey}, {"history added", types.HistoryAddedKey},
		{"class nodes", types.ClassNodesKey}, {"tasks by provider and node", types.TasksByProviderNodeKey},
		{"sched index", types.SchedIndexKey}, {"ack deadlines", types.AckDeadlinesKey}, {"history", types.HistoryKey},
		{"assign queue", types.AssignQueueKey}, {"class size", types.ClassSizeKey}, {"queue moves", types.QueueMovesKey},
	} {
		name[c.prefix.Bytes()[0]] = c.name
	}
	// per assignment: what each collection sees jobs times, the block's own reads (the
	// params, the class's size and counters, once per round of the walk) set apart
	perBlock := 0
	byName := func(m map[byte]int) map[string]int {
		out := map[string]int{}
		for b, n := range m {
			k, ok := name[b]
			if !ok {
				k = fmt.Sprintf("prefix %d", b)
			}
			if n/jobs > 0 {
				out[k] = n / jobs
			}
			perBlock += n % jobs
		}
		return out
	}
	t.Logf("per assignment: %.2f reads, %.2f writes, %.2f deletes, %.2f iterators, %.2f store opens",
		per(keepertest.Total(f.ops.GetsBy)), per(keepertest.Total(f.ops.SetsBy)), per(keepertest.Total(f.ops.DeletesBy)), per(f.ops.Its), per(f.ops.Opens))
	reads := map[string]int{
		"tasks": 1, "jobs": 1, "job specs": 1, "groups": 2, "member chunks": 2, "slots": 2, "class nodes": 1, "queue moves": 1,
	}
	if counter > 0 {
		reads["history added"] = counter
	}
	require.Equal(t, reads, byName(f.ops.GetsBy), "reads per assignment")
	require.Equal(t, map[string]int{
		"tasks": 1, "tasks by provider and node": 1, "slots": 1, "sched index": 1, "class nodes": 1,
		"ack deadlines": 1, "history": 1, "history added": 1, "queue moves": 1,
	}, byName(f.ops.SetsBy), "writes per assignment")
	require.Equal(t, map[string]int{"sched index": 1, "assign queue": 1, "groups": 1}, byName(f.ops.DeletesBy), "deletes per assignment")
	require.LessOrEqual(t, perBlock, 20, "the block's own operations")
	// the EndBlock's queue and deadline scans and the walk's reads of the next groups: a
	// few iterators a block (16 here), none per assignment
	require.LessOrEqual(t, f.ops.Its, 20, "iterators in the block")
	// a unit of assignments opens the market's store once (internal/unitstore), not once per
	// operation as collections would (23 an assignment before), and each move of the
	// queue's counts once more, without the unit's gas meter (queue_counts.go)
	require.LessOrEqual(t, per(f.ops.Opens), 2.5, "store opens per assignment")
}

// BenchmarkStoreFloor is the store's part of BenchmarkEndBlockAssign: per "assignment",
// the operations TestAssignmentStoreOps counts (11 reads of distinct keys already in
// IAVL; its 9 writes and 3 deletes as 12 writes of new keys of 100 bytes) and no
// scheduler logic, on the same state (10,000 nodes, committed), through the same layers
// (the gas meter, a unit branch per 16 assignments written back into the block's branch,
// IAVL). ns/assignment here over BenchmarkEndBlockAssign's is the share of an assignment
// that is store operations (open=op: the store opened for each operation, as collections
// does).
func BenchmarkStoreFloor(b *testing.B) {
	const assignments, reads, writes, unit = 1000, 11, 12, 16
	f := newFixture(b, nil)
	f.addNodes(10_000)
	f.commitStore()
	// every key of the market's store, in a fixed shuffled order: the reads' keys
	var keys [][]byte
	it, err := f.env.StoreService.OpenKVStore(f.ctx).Iterator(nil, nil)
	require.NoError(b, err)
	for ; it.Valid(); it.Next() {
		keys = append(keys, slices.Clone(it.Key()))
	}
	require.NoError(b, it.Close())
	require.GreaterOrEqual(b, len(keys), assignments*reads)
	for i := range keys {
		j := int(binary.BigEndian.Uint64(blockHash(int64(i))) % uint64(i+1))
		keys[i], keys[j] = keys[j], keys[i]
	}
	value := bytes.Repeat([]byte{7}, 100)
	for _, c := range []struct {
		name string
		// open returns the unit's store for each operation: opened once per unit, or
		// once per operation as collections does (OpenKVStore unwraps the context and
		// wraps the store in the gas meter every time)
		open func(c sdk.Context) func() corestore.KVStore
	}{
		{"open=unit", func(c sdk.Context) func() corestore.KVStore {
			kv := f.env.StoreService.OpenKVStore(c)
			return func() corestore.KVStore { return kv }
		}},
		{"open=op", func(c sdk.Context) func() corestore.KVStore {
			var cc context.Context = c
			return func() corestore.KVStore { return f.env.StoreService.OpenKVStore(cc) }
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				block, _ := f.ctx.CacheContext()
				runtime.GC()
				b.StartTimer()
				for u := 0; u < assignments; u += unit {
					uc, write := block.CacheContext()
					kv := c.open(uc)
					for a := u; a < min(u+unit, assignments); a++ {
						for r := range reads {
							if _, err := kv().Get(keys[a*reads+r]); err != nil {
								b.Fatal(err)
							}
						}
						for w := range writes {
							key := binary.BigEndian.AppendUint64([]byte{0xf0, byte(w)}, uint64(a))
							if err := kv().Set(key, value); err != nil {
								b.Fatal(err)
							}
						}
					}
					write()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/assignments, "ns/assignment")
		})
	}
}
