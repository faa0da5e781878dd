package types

import (
	"google.golang.org/grpc/codes"

	errorsmod "cosmossdk.io/errors"
)

// Registered errors. Codes never move; new errors take the next free code. Each carries
// the gRPC code a query or a tx simulation answers with (REST: not found 404, bad input
// 400, a signer without the right 403, a state that does not allow it 412).
var (
	ErrInvalidParams    = errorsmod.RegisterWithGRPCCode(ModuleName, 2, codes.InvalidArgument, "invalid params")
	ErrInvalidAuthority = errorsmod.RegisterWithGRPCCode(ModuleName, 3, codes.PermissionDenied, "invalid authority")
	ErrInvalidGenesis   = errorsmod.RegisterWithGRPCCode(ModuleName, 4, codes.InvalidArgument, "invalid genesis")
	// ErrInvalidAddress: a provider or beneficiary address is empty or malformed.
	ErrInvalidAddress = errorsmod.RegisterWithGRPCCode(ModuleName, 5, codes.InvalidArgument, "invalid address")
	// ErrInvalidAmount: an amount is not positive, not in the collateral denom, or negative.
	ErrInvalidAmount = errorsmod.RegisterWithGRPCCode(ModuleName, 6, codes.InvalidArgument, "invalid amount")
	// ErrInsufficientCollateral: bonded collateral does not cover the request or the
	// locked GPUs.
	ErrInsufficientCollateral = errorsmod.RegisterWithGRPCCode(ModuleName, 7, codes.FailedPrecondition, "insufficient collateral")
	// ErrExposureLimit: the exposure would exceed exposure_factor * bonded.
	ErrExposureLimit = errorsmod.RegisterWithGRPCCode(ModuleName, 8, codes.FailedPrecondition, "exposure limit exceeded")
	// ErrTooManyUnbondings: the provider already has max_unbonding_entries open.
	ErrTooManyUnbondings = errorsmod.RegisterWithGRPCCode(ModuleName, 9, codes.ResourceExhausted, "too many unbonding entries")
	// ErrNotJailed: MsgUnjail from a provider that is not jailed.
	ErrNotJailed = errorsmod.RegisterWithGRPCCode(ModuleName, 10, codes.FailedPrecondition, "provider not jailed")
	// ErrStillJailed: MsgUnjail before jailed_until.
	ErrStillJailed = errorsmod.RegisterWithGRPCCode(ModuleName, 11, codes.FailedPrecondition, "jail time not over")
	// ErrInvalidSlash: a slash with a fraction above 1,000,000 ppm or no reason.
	ErrInvalidSlash = errorsmod.RegisterWithGRPCCode(ModuleName, 12, codes.Internal, "invalid slash")
	// ErrInvalidRelease: unlocking more GPUs, or releasing more exposure, than is held.
	ErrInvalidRelease = errorsmod.RegisterWithGRPCCode(ModuleName, 13, codes.Internal, "release exceeds what is held")
)
