package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account.
	ModuleName = "gfl"
	// StoreKey is the KV store key.
	StoreKey = ModuleName
	// Denom is the GFL index denom: 1 ugfl = 1 GFLOP/s of verified power, 1 GFL = 1 PFLOP/s.
	Denom = "ugfl"
	// BeaconHistoryBlocks is how many recent block hashes the beacon keeps: far more than
	// any reveal window or audit delay needs.
	BeaconHistoryBlocks = 4096
	// DomainSchedule is the beacon domain of challenge scheduling offsets.
	DomainSchedule = "flops/gfl/schedule"
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey               = collections.NewPrefix(0)
	NodeSeqKey              = collections.NewPrefix(1)
	NodesKey                = collections.NewPrefix(2)
	NodesByOperatorKey      = collections.NewPrefix(3)
	NodesByClassKey         = collections.NewPrefix(4)
	NodesByStatusKey        = collections.NewPrefix(5)
	GpuOwnersKey            = collections.NewPrefix(6)
	ChallengeSeqKey         = collections.NewPrefix(7)
	ChallengesKey           = collections.NewPrefix(8)
	ChallengesByOperatorKey = collections.NewPrefix(9)
	ChallengeQueueKey       = collections.NewPrefix(10)
	CommitDeadlinesKey      = collections.NewPrefix(11)
	RevealDeadlinesKey      = collections.NewPrefix(12)
	StatsKey                = collections.NewPrefix(13)
	RebalanceKey            = collections.NewPrefix(14)
	NetworkPowerKey         = collections.NewPrefix(15)
	ClassPowerKey           = collections.NewPrefix(16)
	BlockHashesKey          = collections.NewPrefix(17)
	RetryAttemptsKey        = collections.NewPrefix(18)
	RetryDueKey             = collections.NewPrefix(19)
	NodeRetireAtKey         = collections.NewPrefix(20)
	RoundSeqKey             = collections.NewPrefix(21)
	RoundsKey               = collections.NewPrefix(22)
	OperatorRoundsKey       = collections.NewPrefix(23)
	RoundPullsKey           = collections.NewPrefix(24)
	BlockRoundsKey          = collections.NewPrefix(25)
	DrandRoundsKey          = collections.NewPrefix(26)
	// RoundBlocksKey: (round, height) for each BlockRounds entry (version 2).
	RoundBlocksKey = collections.NewPrefix(27)
)

// Item kinds of the module's block work (internal/blockhook items; challenge issue, miss and failure, epoch rebalance).
const (
	ItemIssue     = "issue"
	ItemMiss      = "miss"
	ItemFail      = "fail"
	ItemRebalance = "rebalance"
	ItemRetire    = "retire"
	ItemPull      = "pull"
)

// ItemKinds lists the kinds of the module's block-hook items.
var ItemKinds = []string{ItemIssue, ItemMiss, ItemFail, ItemRebalance, ItemRetire, ItemPull}
