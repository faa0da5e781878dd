package types

import errorsmod "cosmossdk.io/errors"

// Registered errors. Codes never move; new errors take the next free code.
var (
	ErrInvalidParams    = errorsmod.Register(ModuleName, 2, "invalid params")
	ErrInvalidAuthority = errorsmod.Register(ModuleName, 3, "invalid authority")
	ErrInvalidGenesis   = errorsmod.Register(ModuleName, 4, "invalid genesis")
	ErrNotWired         = errorsmod.Register(ModuleName, 5, "keeper dependency not set")
	ErrNotFound         = errorsmod.Register(ModuleName, 6, "not found")
)
