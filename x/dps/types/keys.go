package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account (the reward pool).
	ModuleName = "dps"
	// StoreKey is the KV store key.
	StoreKey = ModuleName
	// Denom is the DPS denomination that the pool holds and pays (1 DPS = 10^6 udps).
	Denom = "udps"
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey        = collections.NewPrefix(0)
	EraKey           = collections.NewPrefix(1)
	PendingEpochsKey = collections.NewPrefix(2)
	InProgressKey    = collections.NewPrefix(3)
	DistributionsKey = collections.NewPrefix(4)
	RewardsKey       = collections.NewPrefix(5)
	CurrentEpochKey  = collections.NewPrefix(6)
	WorkKey          = collections.NewPrefix(7)
	FundedByKey      = collections.NewPrefix(8)
	// DeferredKey: (item kind, item ref) -> DeferredPayout, the payouts waiting for a
	// retry; DeferredTotalKey holds the sum of their amounts (reserved in the pool).
	DeferredKey      = collections.NewPrefix(9)
	DeferredTotalKey = collections.NewPrefix(10)
	// RetryAttemptsKey and RetryDueKey hold the block hook's failed items
	// (internal/blockhook.Retries).
	RetryAttemptsKey = collections.NewPrefix(11)
	RetryDueKey      = collections.NewPrefix(12)
	// RewardsByEpochKey: (epoch, provider), the index by which an epoch's rewards are
	// pruned distribution_retention_epochs later.
	RewardsByEpochKey = collections.NewPrefix(13)
)

// Kinds of the distribution's block-hook items (internal/blockhook). A start or step
// item's id is the epoch; a payout's id is the epoch, its sub the node (availability)
// and its address the recipient.
const (
	ItemStart        = "start"
	ItemStep         = "step"
	ItemAvailability = RewardKindAvailability
	ItemWork         = RewardKindWork
)

// ItemKinds lists the kinds of the module's block-hook items.
var ItemKinds = []string{ItemStart, ItemStep, ItemAvailability, ItemWork}

// Invariant routes.
const (
	InvariantPool          = "reward-pool"
	InvariantDistributions = "distributions"
)

// Reward kinds in EventRewardPaid.
const (
	RewardKindAvailability = "availability"
	RewardKindWork         = "work"
)
