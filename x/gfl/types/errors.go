package types

import (
	"google.golang.org/grpc/codes"

	errorsmod "cosmossdk.io/errors"
)

// Registered errors. Codes never move; new errors take the next free code. Each carries
// the gRPC code a query or a tx simulation answers with (REST: not found 404, bad input
// 400, a signer without the right 403, a state that does not allow it 412).
var (
	ErrInvalidParams          = errorsmod.RegisterWithGRPCCode(ModuleName, 2, codes.InvalidArgument, "invalid params")
	ErrInvalidAuthority       = errorsmod.RegisterWithGRPCCode(ModuleName, 3, codes.PermissionDenied, "invalid authority")
	ErrInvalidGenesis         = errorsmod.RegisterWithGRPCCode(ModuleName, 4, codes.InvalidArgument, "invalid genesis")
	ErrInvalidAddress         = errorsmod.RegisterWithGRPCCode(ModuleName, 5, codes.InvalidArgument, "invalid address")
	ErrInvalidNodeSpec        = errorsmod.RegisterWithGRPCCode(ModuleName, 6, codes.InvalidArgument, "invalid node spec")
	ErrUnknownGpuClass        = errorsmod.RegisterWithGRPCCode(ModuleName, 7, codes.InvalidArgument, "unknown GPU class")
	ErrMixedGpuClasses        = errorsmod.RegisterWithGRPCCode(ModuleName, 8, codes.InvalidArgument, "GPUs of different classes in one node")
	ErrDuplicateGpu           = errorsmod.RegisterWithGRPCCode(ModuleName, 9, codes.AlreadyExists, "GPU already registered")
	ErrNodeNotFound           = errorsmod.RegisterWithGRPCCode(ModuleName, 10, codes.NotFound, "node not found")
	ErrNotOperator            = errorsmod.RegisterWithGRPCCode(ModuleName, 11, codes.PermissionDenied, "signer is not the node's operator")
	ErrInvalidNodeStatus      = errorsmod.RegisterWithGRPCCode(ModuleName, 12, codes.FailedPrecondition, "node is not in a status that allows this")
	ErrNodeBusy               = errorsmod.RegisterWithGRPCCode(ModuleName, 13, codes.FailedPrecondition, "node has work in flight")
	ErrInsufficientCollateral = errorsmod.RegisterWithGRPCCode(ModuleName, 14, codes.FailedPrecondition, "insufficient collateral")
	ErrChallengeNotFound      = errorsmod.RegisterWithGRPCCode(ModuleName, 15, codes.NotFound, "challenge not found")
	ErrChallengeClosed        = errorsmod.RegisterWithGRPCCode(ModuleName, 16, codes.FailedPrecondition, "challenge is not in a status that allows this")
	ErrCommitTooLate          = errorsmod.RegisterWithGRPCCode(ModuleName, 17, codes.FailedPrecondition, "commitment after the deadline")
	ErrRevealTooEarly         = errorsmod.RegisterWithGRPCCode(ModuleName, 18, codes.FailedPrecondition, "reveal before the sampling block is committed")
	ErrRevealTooLate          = errorsmod.RegisterWithGRPCCode(ModuleName, 19, codes.FailedPrecondition, "reveal after the deadline")
	ErrMalformedReveal        = errorsmod.RegisterWithGRPCCode(ModuleName, 20, codes.InvalidArgument, "malformed reveal")
	ErrBadProof               = errorsmod.RegisterWithGRPCCode(ModuleName, 21, codes.InvalidArgument, "bad Merkle proof")
	ErrWrongEntry             = errorsmod.RegisterWithGRPCCode(ModuleName, 22, codes.InvalidArgument, "wrong entry")
	ErrBeaconUnavailable      = errorsmod.RegisterWithGRPCCode(ModuleName, 23, codes.FailedPrecondition, "beacon block hash unavailable")
	ErrInvalidRoot            = errorsmod.RegisterWithGRPCCode(ModuleName, 24, codes.InvalidArgument, "invalid Merkle root")
	ErrNotTransferable        = errorsmod.RegisterWithGRPCCode(ModuleName, 25, codes.FailedPrecondition, "ugfl is not transferable")
	ErrRoundNotFound          = errorsmod.RegisterWithGRPCCode(ModuleName, 26, codes.NotFound, "challenge round not found")
	ErrDrandOff               = errorsmod.RegisterWithGRPCCode(ModuleName, 27, codes.FailedPrecondition, "the drand beacon is off")
	ErrInvalidBeacon          = errorsmod.RegisterWithGRPCCode(ModuleName, 28, codes.InvalidArgument, "invalid drand round")
	ErrBeaconKnown            = errorsmod.RegisterWithGRPCCode(ModuleName, 29, codes.AlreadyExists, "drand round already on chain")
	ErrInvalidRandomness      = errorsmod.RegisterWithGRPCCode(ModuleName, 30, codes.InvalidArgument, "invalid proposer randomness")
	ErrRandomnessKnown        = errorsmod.RegisterWithGRPCCode(ModuleName, 31, codes.AlreadyExists, "block value already fixed")
	ErrNotProposer            = errorsmod.RegisterWithGRPCCode(ModuleName, 32, codes.PermissionDenied, "signer is not the block proposer's operator")
)
