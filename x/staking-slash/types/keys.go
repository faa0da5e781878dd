package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account.
	ModuleName = "stakingslash"
	// StoreKey is the KV store key. Not the module name: multistore keys may not be
	// prefixes of one another, and "staking" is a prefix of "stakingslash".
	StoreKey = "collateral"
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey = collections.NewPrefix(0)
)
