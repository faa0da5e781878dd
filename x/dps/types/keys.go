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
)

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
