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
)
