package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account.
	ModuleName = "reputation"
	// StoreKey is the KV store key.
	StoreKey = ModuleName
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey = collections.NewPrefix(0)
	// ScoringKey holds the ScoringState (current epoch, pending epochs, cursor).
	ScoringKey = collections.NewPrefix(1)
	// ScoresKey: node id -> NodeScore.
	ScoresKey = collections.NewPrefix(2)
	// ScoresByRankKey: (RankKey(score), node id), the ranking index of ScoresKey.
	ScoresByRankKey = collections.NewPrefix(3)
	// CountersKey: (epoch, node id) -> EpochCounters.
	CountersKey = collections.NewPrefix(4)
	// HistoryKey: (node id, epoch) -> ScoreRecord.
	HistoryKey = collections.NewPrefix(5)
	// OperatorsKey: operator -> OperatorReputation (sum and count of its nodes' scores).
	OperatorsKey = collections.NewPrefix(6)
	// RetryAttemptsKey and RetryDueKey hold the block hook's failed items
	// (internal/blockhook.Retries).
	RetryAttemptsKey = collections.NewPrefix(7)
	RetryDueKey      = collections.NewPrefix(8)
)

// ItemScore is the kind of the scoring's block-hook items (internal/blockhook): a node's
// score for an epoch (id: the node, sub: the epoch).
const ItemScore = "score"

// ItemKinds lists the kinds of the module's block-hook items.
var ItemKinds = []string{ItemScore}
