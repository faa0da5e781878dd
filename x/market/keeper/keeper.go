package keeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"cosmossdk.io/collections"
	collcodec "cosmossdk.io/collections/codec"
	"cosmossdk.io/collections/indexes"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/internal/unitstore"
	"github.com/flopsnet/flops/x/market/types"
)

// JobIndexes index jobs by owner and status.
type JobIndexes struct {
	ByOwner  *indexes.Multi[sdk.AccAddress, uint64, types.Job]
	ByStatus *indexes.Multi[int32, uint64, types.Job]
}

// IndexesList implements collections.Indexes.
func (i JobIndexes) IndexesList() []collections.Index[uint64, types.Job] {
	return []collections.Index[uint64, types.Job]{i.ByOwner, i.ByStatus}
}

// PoolIndexes index pools by owner.
type PoolIndexes struct {
	ByOwner *indexes.Multi[sdk.AccAddress, uint64, types.Pool]
}

// IndexesList implements collections.Indexes.
func (i PoolIndexes) IndexesList() []collections.Index[uint64, types.Pool] {
	return []collections.Index[uint64, types.Pool]{i.ByOwner}
}

// TaskIndexes index tasks by job, shard (job, index), node and provider.
type TaskIndexes struct {
	// ByJob holds only the tasks added to a job after submission (escalations, audits,
	// committee members): its primaries' ids are a range that follows from the job's
	// first task id (walkJobTasks).
	ByJob *sparseMulti[uint64, uint64, types.Task]
	// ByShard holds only the tasks added to a shard after submission (escalations,
	// audits, committee members): its primaries' ids follow from the job's first task id
	// (shardTasks).
	ByShard *sparseMulti[collections.Pair[uint64, uint32], uint64, types.Task]
	// ByProviderNode holds the tasks with a node, under (provider, node): a provider's
	// tasks by the provider's prefix, a node's by (its operator, node). One entry a task
	// where a node's and a provider's index were two, the node's at a random place in the
	// tree (README, make load).
	ByProviderNode *sparseMulti[collections.Pair[sdk.AccAddress, uint64], uint64, types.Task]
}

// IndexesList implements collections.Indexes.
func (i TaskIndexes) IndexesList() []collections.Index[uint64, types.Task] {
	return []collections.Index[uint64, types.Task]{i.ByJob, i.ByShard, i.ByProviderNode}
}

// wiring is shared by every copy of the keeper, so that dependencies set after the keeper
// was copied into the module and other keepers reach all of them.
type wiring struct {
	reputation types.ReputationKeeper
	workRules  types.WorkRules
	hooks      types.MarketHooks
	// lastWork is what the last EndBlock spent of its budgets: an observation for
	// operators and tests, never read by the state machine.
	lastWork BlockWork
}

// BlockWork is the gas an EndBlock spent of its two budgets.
type BlockWork struct {
	Height                 int64
	QueueGas, QueueLimit   uint64
	AssignGas, AssignLimit uint64
}

// LastBlockWork is what the last EndBlock run by this keeper spent of its budgets.
func (k Keeper) LastBlockWork() BlockWork { return k.wiring.lastWork }

// Keeper owns x/market's state.
type Keeper struct {
	cdc           codec.BinaryCodec
	storeService  corestore.KVStoreService
	addressCodec  address.Codec
	authority     string
	accountKeeper types.AccountKeeper
	bankKeeper    types.BankKeeper
	gfl           types.GFLKeeper
	collateral    types.CollateralKeeper
	feeCollector  string
	rewardPool    string
	wiring        *wiring

	Schema collections.Schema
	Params collections.Item[types.Params]

	// IDs: the next job id and the next task id. One record, so that a submission takes
	// both with one read and one write (two sequences cost 3,000 gas more).
	IDs collections.Item[collections.Pair[uint64, uint64]]
	// Jobs holds each job without its spec, which never changes and is kept apart in
	// JobSpecs: the record a task's every step rewrites stays small whatever the size of
	// the spec (loadJob and saveJob join and split them).
	Jobs     *collections.IndexedMap[uint64, types.Job, JobIndexes]
	JobSpecs collections.Map[uint64, types.JobSpec]
	// JobPrograms: the program (command, environment, inputs, task arguments) of each job
	// that keeps it apart from the rest of its spec (job_program.go).
	JobPrograms collections.Map[uint64, types.JobSpec]
	Tasks       *collections.IndexedMap[uint64, types.Task, TaskIndexes]
	// taskValues and jobValues are the primary maps of Tasks and Jobs alone (the same
	// keys), for setTask and saveJob.
	taskValues collections.Map[uint64, types.Task]
	jobValues  collections.Map[uint64, types.Job]
	// Bids: (job id, node id) -> bid.
	Bids collections.Map[collections.Pair[uint64, uint64], types.Bid]

	// Slots: the market's view of every node; SchedIndex orders the schedulable ones by
	// (GPU class, load in ppm, node id) so that the scheduler finds the least loaded
	// eligible nodes of a class in O(log N).
	Slots      collections.Map[uint64, types.NodeSlot]
	SchedIndex collections.KeySet[collections.Triple[string, uint32, uint64]]
	// ClassNodes counts the indexed nodes per GPU class: (idle, loaded). The scheduler reads
	// one counter instead of opening an iterator on a class with nothing to offer.
	ClassNodes collections.Map[string, collections.Pair[uint64, uint64]]
	// RegionNodes counts the indexed nodes per region (SchedulableByRegion); written only
	// when a node joins, leaves or moves region, not at an assignment.
	RegionNodes collections.Map[string, uint64]
	// MaxSlot is the highest node id with a slot (the range of the scheduler's random start).
	MaxSlot collections.Item[uint64]
	// MemberChunks numbers the schedulable nodes of each GPU class densely, positions
	// 0..ClassSize-1, and MemberPos is the reverse (node id -> position): the scheduler
	// draws nodes uniformly by position, so that the history of node ids (gaps left by
	// deactivated nodes) cannot weigh a draw. A node that leaves gives its position to the
	// class's last node. The positions are packed memberChunk to a key, (class, position /
	// memberChunk) -> their node ids (members.go): a draw reads one of a class's
	// size/memberChunk keys, not one of size, so the keys it reads stay in IAVL's caches.
	MemberChunks collections.Map[collections.Pair[string, uint64], []byte]
	MemberPos    collections.Map[uint64, uint64]
	ClassSize    collections.Map[string, uint64]

	// The scheduler's queue holds groups, not tasks: a group is the pending tasks of one
	// job and role, which need the same hardware at the same price, so that a group no
	// node can take is parked as one entry whatever its size (scheduler.go).
	//
	// AssignQueue: (MaxUint64 - tip, deadline in unix seconds, job id, role) of the groups
	// that have waiting tasks and are not parked: higher tips first, then earlier
	// deadlines, then older jobs.
	AssignQueue collections.KeySet[collections.Quad[uint64, int64, uint64, int32]]
	// Waiting: (job id, role, task id) of the pending tasks the scheduler may take, in
	// their group.
	Waiting collections.KeySet[collections.Triple[uint64, int32, uint64]]
	// Groups: (job id, role) -> (waiting tasks, the lowest waiting task id or 0 when not
	// known, parked until this height or 0 when queued, failed tries) of the groups that
	// have waiting tasks; GroupRetryAt: (height, job id, role) of the parked ones.
	Groups       collections.Map[collections.Pair[uint64, int32], collections.Quad[uint64, uint64, int64, uint32]]
	GroupRetryAt collections.KeySet[collections.Triple[int64, uint64, int32]]
	// AssignRetryAt: (height, task id) of pending tasks that no node could take for a
	// reason of their own (the nodes they exclude), parked out of their group until that
	// height; AssignRetries: task id -> (that height, failed tries).
	AssignRetryAt collections.KeySet[collections.Pair[int64, uint64]]
	AssignRetries collections.Map[uint64, collections.Pair[int64, uint32]]

	// Work that falls due later, keyed by (height or time, id); only the due range is walked.
	AckDeadlines    collections.KeySet[collections.Pair[int64, uint64]]
	RunDeadlines    collections.KeySet[collections.Pair[time.Time, uint64]]
	RevealDeadlines collections.KeySet[collections.Pair[int64, uint64]]
	SettleQueue     collections.KeySet[collections.Pair[int64, uint64]]
	AuctionClose    collections.KeySet[collections.Pair[int64, uint64]]
	JobDeadlines    collections.KeySet[collections.Pair[time.Time, uint64]]
	PruneQueue      collections.KeySet[collections.Pair[int64, uint64]]
	// PoolPruneQueue: (height, pool id) of closed pools, deleted job_retention_blocks
	// after their close once they hold nothing (pool.go, prunePool).
	PoolPruneQueue collections.KeySet[collections.Pair[int64, uint64]]

	// Heartbeats: node -> height of its last heartbeat; HeartbeatDue: (height its tasks
	// lapse, node).
	Heartbeats   collections.Map[uint64, int64]
	HeartbeatDue collections.KeySet[collections.Pair[int64, uint64]]

	// History: (job, seq) -> entry, at most max_history_per_job per job. HistoryAdded:
	// job -> the entries added after the job's record last counted them (its
	// history_len, written at submission): the history length is the sum, and a step
	// that adds an entry and changes nothing else of the job does not rewrite its record.
	// HistoryAdded is written only through setHistoryAdded and removeHistoryAdded, which
	// keep freshHistoryAdded in step with it.
	History      collections.Map[collections.Pair[uint64, uint32], types.HistoryEntry]
	HistoryAdded collections.Map[uint64, uint32]
	// freshHistoryAdded is HistoryAdded for the jobs submitted in the block being executed,
	// in the transient store (historyAdded): such a job has no entry in the committed
	// state, and reading one that is not there reaches the node's database (a miss in
	// IAVL's caches): 27% of a real node's EndBlock in the 12,000-sender make load.
	freshHistoryAdded collections.Map[uint64, uint32]

	// JobCounts: the jobs held in each status, the jobs from its next_job_id up counted
	// as ACTIVE (job_counts.go).
	JobCounts collections.Item[types.JobCounts]
	// QueueCounts: the scheduler queue's groups, waiting tasks, parked groups and tasks
	// parked alone, as of the last EndBlocker; QueueMoves: their moves since
	// (queue_counts.go).
	QueueCounts collections.Item[queueCounts]
	QueueMoves  collections.Item[queueMoves]

	DisputeSeq collections.Sequence
	Disputes   collections.Map[uint64, types.Dispute]
	// AuditDraws: (height the draw is due, task id): single-replica EXACT tasks whose audit
	// is drawn from the hash of the block after their commitment.
	AuditDraws collections.KeySet[collections.Pair[int64, uint64]]
	// ProviderTasks: provider -> its settled tasks, for the audit warm-up.
	ProviderTasks collections.Map[sdk.AccAddress, uint64]

	PoolSeq collections.Sequence
	Pools   *collections.IndexedMap[uint64, types.Pool, PoolIndexes]
	// PoolSpecs: each pool's spec as created; its record in Pools holds the spec without
	// its command and environment (savePool, viewPool).
	PoolSpecs collections.Map[uint64, types.PoolSpec]
	// Units: (pool, unit) -> unit; OpenUnits: the units waiting for a claim.
	Units     collections.Map[collections.Pair[uint64, uint64], types.Unit]
	OpenUnits collections.KeySet[collections.Pair[uint64, uint64]]
	// PoolMembers: (pool, node) -> member.
	PoolMembers collections.Map[collections.Pair[uint64, uint64], types.PoolMember]
	// PoolEarnings: (pool, provider) -> credited and unpaid.
	PoolEarnings collections.Map[collections.Pair[uint64, sdk.AccAddress], types.PoolEarning]
	// UnitDeadlines: (reveal deadline height, pool, unit) of claimed units.
	UnitDeadlines collections.KeySet[collections.Triple[int64, uint64, uint64]]

	// Retries: the block hook's items that failed, due again with back-off
	// (internal/blockhook; blockwork.go).
	Retries blockhook.Retries
	// NodeRunning: (node, task) of every RUNNING task, so that a lapsed heartbeat walks a
	// node's running tasks only.
	NodeRunning collections.KeySet[collections.Pair[uint64, uint64]]
	// SweepCursors: (sweep kind, job) -> the last task id a job sweep handled (an
	// expiry or a cancellation walks a job's tasks in parts across blocks).
	SweepCursors collections.Map[collections.Pair[uint32, uint64], uint64]
	// CancelSweeps: (height, job) of cancelled jobs with tasks left to cancel.
	CancelSweeps collections.KeySet[collections.Pair[int64, uint64]]
}

// NewKeeper builds the keeper; it panics on a malformed authority or schema, which only
// happens while wiring the app. feeCollector and rewardPool are the module accounts that
// receive the protocol take.
func NewKeeper(
	cdc codec.BinaryCodec, storeService corestore.KVStoreService, transientService corestore.TransientStoreService,
	addressCodec address.Codec, authority string, ak types.AccountKeeper, bk types.BankKeeper, gk types.GFLKeeper, ck types.CollateralKeeper,
	feeCollector, rewardPool string,
) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic(errorsmod.Wrapf(err, "market: invalid authority %q", authority))
	}
	if transientService == nil {
		panic("market: no transient store service")
	}
	storeService = unitstore.Wrap(storeService) // a unit's store opened once (unitstore)
	sb := collections.NewSchemaBuilder(storeService)
	addr := func(s string) (sdk.AccAddress, error) { return addressCodec.StringToBytes(s) }
	k := Keeper{
		cdc: cdc, storeService: storeService, addressCodec: addressCodec, authority: authority,
		accountKeeper: ak, bankKeeper: bk, gfl: gk, collateral: ck, feeCollector: feeCollector, rewardPool: rewardPool,
		wiring: &wiring{reputation: types.NeutralReputation{}, workRules: types.AllWorkCounts{}},

		Params: collections.NewItem(sb, types.ParamsKey, "params", codec.CollValue[types.Params](cdc)),
		IDs: collections.NewItem(sb, types.IDsKey, "ids",
			collcodec.KeyToValueCodec(collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key))),
		Jobs: collections.NewIndexedMap(sb, types.JobsKey, "jobs", collections.Uint64Key, newCompactValue(codec.CollValue[types.Job](cdc), jobOmit), JobIndexes{
			ByOwner: indexes.NewMulti(sb, types.JobsByOwnerKey, "jobs_by_owner", sdk.AccAddressKey, collections.Uint64Key,
				func(_ uint64, j types.Job) (sdk.AccAddress, error) { return addr(j.Owner) }),
			ByStatus: indexes.NewMulti(sb, types.JobsByStatusKey, "jobs_by_status", collections.Int32Key, collections.Uint64Key,
				func(_ uint64, j types.Job) (int32, error) { return int32(j.Status), nil }),
		}),
		JobSpecs:    collections.NewMap(sb, types.JobSpecsKey, "job_specs", collections.Uint64Key, codec.CollValue[types.JobSpec](cdc)),
		JobPrograms: collections.NewMap(sb, types.JobProgramsKey, "job_programs", collections.Uint64Key, codec.CollValue[types.JobSpec](cdc)),
		Tasks: collections.NewIndexedMap(sb, types.TasksKey, "tasks", collections.Uint64Key, newCompactValue(codec.CollValue[types.Task](cdc), taskOmit), TaskIndexes{
			ByJob: newSparseMulti(indexes.NewMulti(sb, types.TasksByJobKey, "tasks_by_job", collections.Uint64Key, collections.Uint64Key,
				func(_ uint64, t types.Task) (uint64, error) { return t.JobId, nil }), func(t types.Task) bool { return t.Role != types.TASK_ROLE_PRIMARY }),
			ByShard: newSparseMulti(indexes.NewMulti(sb, types.TasksByShardKey, "tasks_by_shard",
				collections.PairKeyCodec(collections.Uint64Key, collections.Uint32Key), collections.Uint64Key,
				func(_ uint64, t types.Task) (collections.Pair[uint64, uint32], error) {
					return collections.Join(t.JobId, t.Index), nil
				}), func(t types.Task) bool { return t.Role != types.TASK_ROLE_PRIMARY }),
			ByProviderNode: newSparseMulti(indexes.NewMulti(sb, types.TasksByProviderNodeKey, "tasks_by_provider_node",
				collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key), collections.Uint64Key,
				func(_ uint64, t types.Task) (collections.Pair[sdk.AccAddress, uint64], error) {
					p, err := addr(t.Provider)
					return collections.Join(p, t.NodeId), err
				}), func(t types.Task) bool { return t.NodeId != 0 && t.Provider != "" }),
		}),
		// outside the schema: the same prefixes as Tasks and Jobs, which the schema has
		taskValues: collections.NewMap(collections.NewSchemaBuilder(storeService), types.TasksKey, "tasks", collections.Uint64Key, newCompactValue(codec.CollValue[types.Task](cdc), taskOmit)),
		jobValues:  collections.NewMap(collections.NewSchemaBuilder(storeService), types.JobsKey, "jobs", collections.Uint64Key, newCompactValue(codec.CollValue[types.Job](cdc), jobOmit)),
		Bids:       collections.NewMap(sb, types.BidsKey, "bids", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key), codec.CollValue[types.Bid](cdc)),
		Slots:      collections.NewMap(sb, types.SlotsKey, "slots", collections.Uint64Key, codec.CollValue[types.NodeSlot](cdc)),
		SchedIndex: collections.NewKeySet(sb, types.SchedIndexKey, "sched_index",
			collections.TripleKeyCodec(collections.StringKey, collections.Uint32Key, collections.Uint64Key)),
		ClassNodes: collections.NewMap(sb, types.ClassNodesKey, "class_nodes", collections.StringKey,
			collcodec.KeyToValueCodec(collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key))),
		RegionNodes: collections.NewMap(sb, types.RegionNodesKey, "region_nodes", collections.StringKey, collections.Uint64Value),
		MaxSlot:     collections.NewItem(sb, types.MaxSlotKey, "max_slot", collections.Uint64Value),
		MemberChunks: collections.NewMap(sb, types.MemberChunksKey, "member_chunks",
			collections.PairKeyCodec(collections.StringKey, collections.Uint64Key), collections.BytesValue),
		MemberPos: collections.NewMap(sb, types.MemberPosKey, "member_pos", collections.Uint64Key, collections.Uint64Value),
		ClassSize: collections.NewMap(sb, types.ClassSizeKey, "class_size", collections.StringKey, collections.Uint64Value),
		AssignQueue: collections.NewKeySet(sb, types.AssignQueueKey, "assign_queue",
			collections.QuadKeyCodec(collections.Uint64Key, collections.Int64Key, collections.Uint64Key, collections.Int32Key)),
		Waiting: collections.NewKeySet(sb, types.WaitingKey, "assign_waiting",
			collections.TripleKeyCodec(collections.Uint64Key, collections.Int32Key, collections.Uint64Key)),
		Groups: collections.NewMap(sb, types.GroupsKey, "assign_groups", collections.PairKeyCodec(collections.Uint64Key, collections.Int32Key),
			newGroupValueCodec()),
		GroupRetryAt: collections.NewKeySet(sb, types.GroupRetryAtKey, "assign_group_retry_at",
			collections.TripleKeyCodec(collections.Int64Key, collections.Uint64Key, collections.Int32Key)),
		AssignRetryAt: collections.NewKeySet(sb, types.AssignRetryAtKey, "assign_retry_at", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		AssignRetries: collections.NewMap(sb, types.AssignRetriesKey, "assign_retries", collections.Uint64Key,
			collcodec.KeyToValueCodec(collections.PairKeyCodec(collections.Int64Key, collections.Uint32Key))),
		AckDeadlines:    collections.NewKeySet(sb, types.AckDeadlinesKey, "ack_deadlines", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		RunDeadlines:    collections.NewKeySet(sb, types.RunDeadlinesKey, "run_deadlines", collections.PairKeyCodec(collkeys.TimeKey, collections.Uint64Key)),
		RevealDeadlines: collections.NewKeySet(sb, types.RevealDeadlinesKey, "reveal_deadlines", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		SettleQueue:     collections.NewKeySet(sb, types.SettleQueueKey, "settle_queue", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		AuctionClose:    collections.NewKeySet(sb, types.AuctionCloseKey, "auction_close", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		JobDeadlines:    collections.NewKeySet(sb, types.JobDeadlinesKey, "job_deadlines", collections.PairKeyCodec(collkeys.TimeKey, collections.Uint64Key)),
		PruneQueue:      collections.NewKeySet(sb, types.PruneQueueKey, "prune_queue", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		PoolPruneQueue:  collections.NewKeySet(sb, types.PoolPruneKey, "pool_prune_queue", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		Heartbeats:      collections.NewMap(sb, types.HeartbeatsKey, "heartbeats", collections.Uint64Key, collections.Int64Value),
		HeartbeatDue:    collections.NewKeySet(sb, types.HeartbeatDueKey, "heartbeat_due", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		History: collections.NewMap(sb, types.HistoryKey, "history", collections.PairKeyCodec(collections.Uint64Key, collections.Uint32Key),
			codec.CollValue[types.HistoryEntry](cdc)),
		HistoryAdded:  collections.NewMap(sb, types.HistoryAddedKey, "history_added", collections.Uint64Key, collections.Uint32Value),
		DisputeSeq:    collections.NewSequence(sb, types.DisputeSeqKey, "dispute_seq"),
		Disputes:      collections.NewMap(sb, types.DisputesKey, "disputes", collections.Uint64Key, codec.CollValue[types.Dispute](cdc)),
		AuditDraws:    collections.NewKeySet(sb, types.AuditDrawsKey, "audit_draws", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		ProviderTasks: collections.NewMap(sb, types.ProviderTasksKey, "provider_tasks", sdk.AccAddressKey, collections.Uint64Value),
		JobCounts:     collections.NewItem(sb, types.JobCountsKey, "job_counts", codec.CollValue[types.JobCounts](cdc)),
		PoolSeq:       collections.NewSequence(sb, types.PoolSeqKey, "pool_seq"),
		Pools: collections.NewIndexedMap(sb, types.PoolsKey, "pools", collections.Uint64Key, codec.CollValue[types.Pool](cdc), PoolIndexes{
			ByOwner: indexes.NewMulti(sb, types.PoolsByOwnerKey, "pools_by_owner", sdk.AccAddressKey, collections.Uint64Key,
				func(_ uint64, p types.Pool) (sdk.AccAddress, error) { return addr(p.Owner) }),
		}),
		PoolSpecs: collections.NewMap(sb, types.PoolSpecsKey, "pool_specs", collections.Uint64Key, codec.CollValue[types.PoolSpec](cdc)),
		Units: collections.NewMap(sb, types.UnitsKey, "units", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key),
			codec.CollValue[types.Unit](cdc)),
		OpenUnits: collections.NewKeySet(sb, types.OpenUnitsKey, "open_units", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key)),
		PoolMembers: collections.NewMap(sb, types.PoolMembersKey, "pool_members", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key),
			codec.CollValue[types.PoolMember](cdc)),
		PoolEarnings: collections.NewMap(sb, types.PoolEarningsKey, "pool_earnings", collections.PairKeyCodec(collections.Uint64Key, sdk.AccAddressKey),
			codec.CollValue[types.PoolEarning](cdc)),
		UnitDeadlines: collections.NewKeySet(sb, types.UnitDeadlinesKey, "unit_deadlines",
			collections.TripleKeyCodec(collections.Int64Key, collections.Uint64Key, collections.Uint64Key)),
		Retries:     blockhook.NewRetries(sb, types.ModuleName, types.RetryAttemptsKey, types.RetryDueKey),
		NodeRunning: collections.NewKeySet(sb, types.NodeRunningKey, "node_running", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key)),
		SweepCursors: collections.NewMap(sb, types.SweepCursorsKey, "sweep_cursors",
			collections.PairKeyCodec(collections.Uint32Key, collections.Uint64Key), collections.Uint64Value),
		CancelSweeps: collections.NewKeySet(sb, types.CancelSweepsKey, "cancel_sweeps", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		QueueCounts:  collections.NewItem(sb, types.QueueCountsKey, "queue_counts", queueCountsCodec),
		QueueMoves:   collections.NewItem(sb, types.QueueMovesKey, "queue_moves", queueMovesCodec),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	tsb := collections.NewSchemaBuilderFromAccessor(transientService.OpenTransientStore)
	k.freshHistoryAdded = collections.NewMap(tsb, collections.NewPrefix(0), "fresh_history_added", collections.Uint64Key, collections.Uint32Value)
	if _, err := tsb.Build(); err != nil {
		panic(err)
	}
	return k
}

// SetReputation replaces the neutral reputation with x/reputation's scores.
func (k Keeper) SetReputation(r types.ReputationKeeper) { k.wiring.reputation = r }

// SetWorkRules gives the market x/dps's rule of whose work counts: wash work (for a payer
// its provider funded) earns neither reputation nor progress through the audit warm-up.
func (k Keeper) SetWorkRules(r types.WorkRules) { k.wiring.workRules = r }

// counts: the task's work counts for its provider's record (see SetWorkRules).
func (k Keeper) counts(ctx context.Context, job types.Job, t types.Task) (bool, error) {
	payer, err := k.acc(job.Owner)
	if err != nil {
		return false, err
	}
	provider, err := k.acc(t.Provider)
	if err != nil {
		return false, err
	}
	return k.wiring.workRules.EarnsWork(ctx, payer, provider)
}

// SetHooks sets the market hooks (x/reputation's and x/dps's); twice is a wiring error.
func (k Keeper) SetHooks(h types.MarketHooks) {
	if k.wiring.hooks != nil {
		panic("market: hooks already set")
	}
	k.wiring.hooks = h
}

func (k Keeper) hooks() types.MarketHooks {
	if k.wiring.hooks == nil {
		return types.MultiMarketHooks{}
	}
	return k.wiring.hooks
}

// escrowIn moves coins from an account into the module's escrow. It is the bank's
// SendCoinsFromAccountToModule without its read of the module account (about 1,400 gas a
// job, bid, pool and challenge): the account exists from InitGenesis on, and the module's
// address is a hash of its name.
func (k Keeper) escrowIn(ctx context.Context, from sdk.AccAddress, amt sdk.Coins) error {
	return k.bankKeeper.SendCoins(ctx, from, k.accountKeeper.GetModuleAddress(types.ModuleName), amt)
}

// Authority returns the address allowed to update params.
func (k Keeper) Authority() string { return k.authority }

// GetParams returns the stored params.
func (k Keeper) GetParams(ctx context.Context) (types.Params, error) { return k.Params.Get(ctx) }

// TakeRatePpm is the take on every provider payment (x/dps keeps its work reward cap below
// it).
func (k Keeper) TakeRatePpm(ctx context.Context) (uint32, error) {
	p, err := k.Params.Get(ctx)
	return p.TakeRatePpm, err
}

// loadJob reads a job with its spec.
func (k Keeper) loadJob(ctx context.Context, id uint64) (types.Job, error) {
	j, err := k.Jobs.Get(ctx, id)
	if err != nil {
		return j, err
	}
	if j.Spec, err = k.JobSpecs.Get(ctx, id); err != nil {
		return j, fmt.Errorf("market: spec of job %d: %w", id, err)
	}
	return j, nil
}

// saveJob stores a job's record without its spec (written once, at submission, in
// JobSpecs).
//
// It is Jobs.Set, cut to what changes: a job's owner never does, so its ByOwner entry is
// written only for a new job (or an owner changed, which nothing does), and its ByStatus
// entry only when its status moved; a new job's record is not read twice (SubmitJob,
// whose job is new by its id, does not read it at all: storeNewJob).
func (k Keeper) saveJob(ctx context.Context, j types.Job) error {
	j.Spec = types.JobSpec{}
	old, err := k.jobValues.Get(ctx, j.Id)
	if errors.Is(err, collections.ErrNotFound) {
		return k.storeNewJob(ctx, j)
	}
	if err != nil {
		return err
	}
	if err := k.moveJobCount(ctx, old.Status, j.Status); err != nil {
		return err
	}
	if old.Owner != j.Owner {
		return k.Jobs.Set(ctx, j.Id, j)
	}
	if sameRecord(old, j) {
		return nil // a step that changed nothing of the job (an assignment, an ack...)
	}
	if old.Status != j.Status {
		if err := k.Jobs.Indexes.ByStatus.Unreference(ctx, j.Id, func() (types.Job, error) { return old, nil }); err != nil {
			return err
		}
		if err := k.Jobs.Indexes.ByStatus.Reference(ctx, j.Id, j, func() (types.Job, error) { return types.Job{}, collections.ErrNotFound }); err != nil {
			return err
		}
	}
	return k.jobValues.Set(ctx, j.Id, j)
}

// sameRecord says whether two job records (without their specs) are equal, field by
// field (TestSameRecordComparesEveryField makes each field differ in turn).
func sameRecord(a, b types.Job) bool {
	return a.Id == b.Id && a.Owner == b.Owner && a.Status == b.Status && intEqual(a.Escrow, b.Escrow) &&
		a.SubmittedHeight == b.SubmittedHeight && a.SubmittedTime.Equal(b.SubmittedTime) &&
		a.AuctionCloseHeight == b.AuctionCloseHeight && intEqual(a.ClearingPrice, b.ClearingPrice) &&
		a.TasksSettled == b.TasksSettled && a.TasksFailed == b.TasksFailed && a.FinishedHeight == b.FinishedHeight &&
		bytes.Equal(a.GemmSeed, b.GemmSeed) && a.HistoryLen == b.HistoryLen &&
		intEqual(a.VerificationLeft, b.VerificationLeft) && a.OpenTasks == b.OpenTasks &&
		a.RevealGas == b.RevealGas && a.RevealCost == b.RevealCost && a.FirstTaskId == b.FirstTaskId &&
		a.ProgramApart == b.ProgramApart
}

// intEqual compares two Ints, an unset one (nil) as zero.
func intEqual(a, b sdkmath.Int) bool {
	if a.IsNil() || b.IsNil() {
		return (a.IsNil() || a.IsZero()) && (b.IsNil() || b.IsZero())
	}
	return a.Equal(b)
}

// PeekIDs returns the next job id and the next task id, taking neither.
func (k Keeper) PeekIDs(ctx context.Context) (job, task uint64, err error) {
	ids, err := k.IDs.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return 1, 1, nil // before genesis
	}
	return ids.K1(), ids.K2(), err
}

// takeIDs takes jobs job ids and tasks task ids and returns the first of each.
func (k Keeper) takeIDs(ctx context.Context, jobs, tasks uint64) (job, task uint64, err error) {
	if job, task, err = k.PeekIDs(ctx); err != nil {
		return 0, 0, err
	}
	return job, task, k.IDs.Set(ctx, collections.Join(job+jobs, task+tasks))
}

// storeNewJob stores a job that was never stored (a new id, from JobSeq): saveJob without
// the read of a record it cannot have.
//
// A new job counts as ACTIVE in the job counts with nothing written (job_counts.go); one
// that starts in another status (an auction's, BIDDING) is a move.
func (k Keeper) storeNewJob(ctx context.Context, j types.Job) error {
	j.Spec = types.JobSpec{}
	if err := k.moveJobCount(ctx, types.JOB_STATUS_ACTIVE, j.Status); err != nil {
		return err
	}
	for _, idx := range k.Jobs.Indexes.IndexesList() {
		if err := idx.Reference(ctx, j.Id, j, noJob); err != nil {
			return err
		}
	}
	return k.jobValues.Set(ctx, j.Id, j)
}

func noJob() (types.Job, error)   { return types.Job{}, collections.ErrNotFound }
func noTask() (types.Task, error) { return types.Task{}, collections.ErrNotFound }

// storeNewTask stores a task that was never stored (a new id): Tasks.Set without reading the
// value it cannot have.
func (k Keeper) storeNewTask(ctx context.Context, t types.Task) error {
	for _, idx := range k.Tasks.Indexes.IndexesList() {
		if err := idx.Reference(ctx, t.Id, t, noTask); err != nil {
			return err
		}
	}
	return k.taskValues.Set(ctx, t.Id, t)
}

// setTask saves a task whose stored value the caller holds (old, as read): what
// Tasks.Set does, without reading the stored value back and rewriting the index entries
// that do not change (a task's job and shard never do; its node and provider change
// when it is assigned or given back).
func (k Keeper) setTask(ctx context.Context, old, t types.Task) error {
	if old.Id != t.Id || old.JobId != t.JobId || old.Index != t.Index {
		return k.Tasks.Set(ctx, t.Id, t)
	}
	if old.NodeId != t.NodeId || old.Provider != t.Provider {
		// the old entry (if it had one) goes, the new one (if it has one) is written
		if err := k.Tasks.Indexes.ByProviderNode.Reference(ctx, t.Id, t, func() (types.Task, error) { return old, nil }); err != nil {
			return err
		}
	}
	return k.taskValues.Set(ctx, t.Id, t)
}

// GetJob returns a job, or ErrJobNotFound.
func (k Keeper) GetJob(ctx context.Context, id uint64) (types.Job, error) {
	j, err := k.loadJob(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return j, errorsmod.Wrapf(types.ErrJobNotFound, "job %d", id)
	}
	return j, err
}

// GetTask returns a task, or ErrTaskNotFound.
func (k Keeper) GetTask(ctx context.Context, id uint64) (types.Task, error) {
	t, err := k.Tasks.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return t, errorsmod.Wrapf(types.ErrTaskNotFound, "task %d", id)
	}
	return t, err
}

func (k Keeper) address(field, s string) (sdk.AccAddress, error) {
	bz, err := k.addressCodec.StringToBytes(s)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddress, "%s %q: %s", field, s, err)
	}
	return bz, nil
}

// addressString is the canonical bech32 form of an address: what the module stores and
// compares, so that two spellings of one account (upper and lower case) are one account.
func (k Keeper) addressString(field string, addr sdk.AccAddress) (string, error) {
	if len(addr) == 0 {
		return "", errorsmod.Wrapf(types.ErrInvalidAddress, "%s is empty", field)
	}
	s, err := k.addressCodec.BytesToString(addr)
	if err != nil {
		return "", errorsmod.Wrapf(types.ErrInvalidAddress, "%s: %s", field, err)
	}
	return s, nil
}

// acc decodes an address the module stored itself (validated and made canonical when it
// came in): a failure is a broken invariant, returned as an error, never a panic.
func (k Keeper) acc(s string) (sdk.AccAddress, error) {
	bz, err := k.addressCodec.StringToBytes(s)
	if err != nil {
		return nil, fmt.Errorf("market: stored address %q: %w", s, err)
	}
	return bz, nil
}
