package types

import errorsmod "cosmossdk.io/errors"

// Registered errors. Codes never move; new errors take the next free code.
var (
	ErrInvalidParams    = errorsmod.Register(ModuleName, 2, "invalid params")
	ErrInvalidAuthority = errorsmod.Register(ModuleName, 3, "invalid authority")
	ErrInvalidGenesis   = errorsmod.Register(ModuleName, 4, "invalid genesis")
	// ErrInvalidAddress: a provider or beneficiary address is empty or malformed.
	ErrInvalidAddress = errorsmod.Register(ModuleName, 5, "invalid address")
	// ErrInvalidAmount: an amount is not positive, not in the collateral denom, or negative.
	ErrInvalidAmount = errorsmod.Register(ModuleName, 6, "invalid amount")
	// ErrInsufficientCollateral: bonded collateral does not cover the request or the
	// locked GPUs.
	ErrInsufficientCollateral = errorsmod.Register(ModuleName, 7, "insufficient collateral")
	// ErrExposureLimit: the exposure would exceed exposure_factor * bonded.
	ErrExposureLimit = errorsmod.Register(ModuleName, 8, "exposure limit exceeded")
	// ErrTooManyUnbondings: the provider already has max_unbonding_entries open.
	ErrTooManyUnbondings = errorsmod.Register(ModuleName, 9, "too many unbonding entries")
	// ErrNotJailed: MsgUnjail from a provider that is not jailed.
	ErrNotJailed = errorsmod.Register(ModuleName, 10, "provider not jailed")
	// ErrStillJailed: MsgUnjail before jailed_until.
	ErrStillJailed = errorsmod.Register(ModuleName, 11, "jail time not over")
	// ErrInvalidSlash: a slash with a fraction above 1,000,000 ppm or no reason.
	ErrInvalidSlash = errorsmod.Register(ModuleName, 12, "invalid slash")
	// ErrInvalidRelease: unlocking more GPUs, or releasing more exposure, than is held.
	ErrInvalidRelease = errorsmod.Register(ModuleName, 13, "release exceeds what is held")
)
