package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and module account.
	ModuleName = "gfl"
	// StoreKey is the KV store key.
	StoreKey = ModuleName
	// Denom is the GFL index denom: 1 ugfl = 1 GFLOP/s of verified power, 1 GFL = 1 PFLOP/s.
	Denom = "ugfl"
)

// Store prefixes. Numbers are never reused.
var (
	ParamsKey = collections.NewPrefix(0)
)
