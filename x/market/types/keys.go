package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account (escrow, deposits).
	ModuleName = "market"
	// StoreKey is the KV store key.
	StoreKey = ModuleName
	// TransientStoreKey is the transient store key: what the block being executed wrote,
	// kept for reading back without reaching the committed state (reset at each commit).
	TransientStoreKey = "transient_" + ModuleName

	// DomainAssign is the beacon domain of the scheduler's draws.
	DomainAssign = "flops/market/assign"
	// DomainGemmSeed is the beacon domain of BUILTIN gemm job seeds.
	DomainGemmSeed = "flops/market/gemm"
	// DomainPoolUnit is the beacon domain of a NONE pool's unit designations.
	DomainPoolUnit = "flops/market/pool-unit"
	// DomainFailedRun is what FailedRoot hashes: the result root of a verification
	// task whose run of the job failed.
	DomainFailedRun = "flops/market/failed-run"
	// DomainAudit is the beacon domain of audit draws.
	DomainAudit = "flops/market/audit"
	// DomainGemmSample is the domain of BUILTIN gemm reveal samples.
	DomainGemmSample = "flops/market/gemm-sample"
	// DomainPoolGemm is the domain of BUILTIN gemm pool units' GEMM seeds.
	DomainPoolGemm = "flops/market/pool-gemm"
	// DomainPoolSample is the beacon domain of BUILTIN gemm pool reveal samples.
	DomainPoolSample = "flops/market/pool-sample"
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey          = collections.NewPrefix(0)
	JobSeqKey          = collections.NewPrefix(1)
	JobsKey            = collections.NewPrefix(2)
	JobsByOwnerKey     = collections.NewPrefix(3)
	JobsByStatusKey    = collections.NewPrefix(4)
	TaskSeqKey         = collections.NewPrefix(5)
	TasksKey           = collections.NewPrefix(6)
	TasksByJobKey      = collections.NewPrefix(7)
	TasksByNodeKey     = collections.NewPrefix(8)
	TasksByProviderKey = collections.NewPrefix(9)
	BidsKey            = collections.NewPrefix(10)
	SlotsKey           = collections.NewPrefix(11)
	SchedIndexKey      = collections.NewPrefix(12)
	AssignQueueKey     = collections.NewPrefix(13)
	AckDeadlinesKey    = collections.NewPrefix(14)
	RunDeadlinesKey    = collections.NewPrefix(15)
	RevealDeadlinesKey = collections.NewPrefix(16)
	SettleQueueKey     = collections.NewPrefix(17)
	AuctionCloseKey    = collections.NewPrefix(18)
	JobDeadlinesKey    = collections.NewPrefix(19)
	HeartbeatsKey      = collections.NewPrefix(20)
	HeartbeatDueKey    = collections.NewPrefix(21)
	PruneQueueKey      = collections.NewPrefix(22)
	HistoryKey         = collections.NewPrefix(23)
	// 24 (the verified-work ledger) is retired: x/dps keeps it.
	TasksByShardKey  = collections.NewPrefix(25)
	DisputeSeqKey    = collections.NewPrefix(26)
	DisputesKey      = collections.NewPrefix(27)
	AuditDrawsKey    = collections.NewPrefix(28)
	ProviderTasksKey = collections.NewPrefix(29)
	PoolSeqKey       = collections.NewPrefix(30)
	PoolsKey         = collections.NewPrefix(31)
	UnitsKey         = collections.NewPrefix(32)
	OpenUnitsKey     = collections.NewPrefix(33)
	PoolMembersKey   = collections.NewPrefix(34)
	PoolEarningsKey  = collections.NewPrefix(35)
	UnitDeadlinesKey = collections.NewPrefix(36)
	ClassNodesKey    = collections.NewPrefix(37)
	MaxSlotKey       = collections.NewPrefix(38)
	AssignRetryAtKey = collections.NewPrefix(39)
	AssignRetriesKey = collections.NewPrefix(40)
	// 41 (the funding links) is retired: x/dps keeps them.
	RetryAttemptsKey = collections.NewPrefix(42)
	RetryDueKey      = collections.NewPrefix(43)
	NodeRunningKey   = collections.NewPrefix(44)
	SweepCursorsKey  = collections.NewPrefix(45)
	CancelSweepsKey  = collections.NewPrefix(46)
	JobSpecsKey      = collections.NewPrefix(47)
	// 48 (the class members, one key per position) is retired: MemberChunksKey packs them
	// (version 6).
	MemberPosKey    = collections.NewPrefix(49)
	ClassSizeKey    = collections.NewPrefix(50)
	PoolPruneKey    = collections.NewPrefix(51)
	WaitingKey      = collections.NewPrefix(52)
	GroupsKey       = collections.NewPrefix(53)
	GroupRetryAtKey = collections.NewPrefix(54)
	// IDsKey: the next job id and the next task id, in one record (version 3; versions 1
	// and 2 kept them in JobSeqKey and TaskSeqKey).
	IDsKey = collections.NewPrefix(55)
	// HistoryAddedKey: the history entries added to a job after its record counted them.
	HistoryAddedKey = collections.NewPrefix(56)
	// MemberChunksKey: the class members' node ids, memberChunk positions a key (version
	// 6; version 5 kept one key a position in 48).
	MemberChunksKey = collections.NewPrefix(57)
	// TasksByProviderNodeKey: (provider, node, task) of each task with a node (version 7;
	// version 6 kept (node, task) in 8 and (provider, task) in 9).
	TasksByProviderNodeKey = collections.NewPrefix(58)
	// PoolsByOwnerKey indexes pools by owner (store version 8): a client's pools, without
	// reading every pool (each with its spec, up to about 330 KB).
	PoolsByOwnerKey = collections.NewPrefix(59)
	// JobCountsKey: how many jobs are held in each status (store version 9), so that they
	// are counted without reading every job.
	JobCountsKey = collections.NewPrefix(60)
	// PoolSpecsKey: each pool's spec as created (store version 10). The pool's record,
	// which every unit step rewrites, holds its spec without the command and the
	// environment (up to about 330 KB).
	PoolSpecsKey = collections.NewPrefix(61)
	// JobProgramsKey: the command, environment, inputs and task arguments of each job
	// that has more than 1 KiB of them (store version 11), apart from the rest of its spec
	// in JobSpecsKey, which the scheduler reads at each examination.
	JobProgramsKey = collections.NewPrefix(62)
	// RegionNodesKey: how many schedulable nodes each region has (store version 12), so
	// that they are counted without reading every node.
	RegionNodesKey = collections.NewPrefix(63)
	// QueueCountsKey: the scheduler queue's counts (store version 15), so that the queue
	// is counted without reading every group.
	QueueCountsKey = collections.NewPrefix(64)
	// QueueMovesKey: the moves of the queue's counts since the last EndBlocker added them
	// up (store version 15).
	QueueMovesKey = collections.NewPrefix(65)
)

// Item kinds of the module's block work (internal/blockhook items; each kind is the queue its items come from).
const (
	ItemAuction   = "auction"
	ItemAck       = "ack"
	ItemHeartbeat = "heartbeat"
	ItemRun       = "run"
	ItemReveal    = "reveal"
	ItemAudit     = "audit"
	ItemSettle    = "settle"
	ItemDeadline  = "deadline"
	ItemCancel    = "cancel"
	ItemPrune     = "prune"
	ItemUnit      = "unit"
	ItemAssign    = "assign"
	ItemPoolPrune = "pool-prune"
)

// ItemKinds lists the kinds of the module's block-hook items.
var ItemKinds = []string{ItemAuction, ItemAck, ItemHeartbeat, ItemRun, ItemReveal, ItemAudit, ItemSettle, ItemDeadline, ItemCancel, ItemPrune, ItemUnit, ItemAssign, ItemPoolPrune}
