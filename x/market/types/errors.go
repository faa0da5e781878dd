package types

import (
	"google.golang.org/grpc/codes"

	errorsmod "cosmossdk.io/errors"
)

// Registered errors. Codes never move; new errors take the next free code. Each carries
// the gRPC code a query or a tx simulation answers with (REST: not found 404, bad input
// 400, a signer without the right 403, a state that does not allow it 412).
var (
	ErrInvalidParams     = errorsmod.RegisterWithGRPCCode(ModuleName, 2, codes.InvalidArgument, "invalid params")
	ErrInvalidAuthority  = errorsmod.RegisterWithGRPCCode(ModuleName, 3, codes.PermissionDenied, "invalid authority")
	ErrInvalidGenesis    = errorsmod.RegisterWithGRPCCode(ModuleName, 4, codes.InvalidArgument, "invalid genesis")
	ErrInvalidAddress    = errorsmod.RegisterWithGRPCCode(ModuleName, 5, codes.InvalidArgument, "invalid address")
	ErrInvalidJobSpec    = errorsmod.RegisterWithGRPCCode(ModuleName, 6, codes.InvalidArgument, "invalid job spec")
	ErrInsufficientFunds = errorsmod.RegisterWithGRPCCode(ModuleName, 7, codes.FailedPrecondition, "insufficient funds for the escrow")
	ErrJobNotFound       = errorsmod.RegisterWithGRPCCode(ModuleName, 8, codes.NotFound, "job not found")
	ErrTaskNotFound      = errorsmod.RegisterWithGRPCCode(ModuleName, 9, codes.NotFound, "task not found")
	ErrNotOwner          = errorsmod.RegisterWithGRPCCode(ModuleName, 10, codes.PermissionDenied, "signer is not the job's owner")
	ErrNotProvider       = errorsmod.RegisterWithGRPCCode(ModuleName, 11, codes.PermissionDenied, "signer is not the task's provider")
	ErrInvalidJobStatus  = errorsmod.RegisterWithGRPCCode(ModuleName, 12, codes.FailedPrecondition, "job is not in a status that allows this")
	ErrInvalidTaskStatus = errorsmod.RegisterWithGRPCCode(ModuleName, 13, codes.FailedPrecondition, "task is not in a status that allows this")
	ErrNotAuction        = errorsmod.RegisterWithGRPCCode(ModuleName, 14, codes.FailedPrecondition, "job is not taking bids")
	ErrInvalidBid        = errorsmod.RegisterWithGRPCCode(ModuleName, 15, codes.InvalidArgument, "invalid bid")
	ErrDuplicateBid      = errorsmod.RegisterWithGRPCCode(ModuleName, 16, codes.AlreadyExists, "node already bid on this job")
	ErrBidNotFound       = errorsmod.RegisterWithGRPCCode(ModuleName, 17, codes.NotFound, "bid not found")
	ErrNodeNotEligible   = errorsmod.RegisterWithGRPCCode(ModuleName, 18, codes.FailedPrecondition, "node is not eligible for this job")
	ErrNodeUnknown       = errorsmod.RegisterWithGRPCCode(ModuleName, 19, codes.NotFound, "node unknown to the market")
	ErrDeadlinePassed    = errorsmod.RegisterWithGRPCCode(ModuleName, 20, codes.FailedPrecondition, "task deadline passed")
	ErrInvalidCommitment = errorsmod.RegisterWithGRPCCode(ModuleName, 21, codes.InvalidArgument, "invalid commitment")
	ErrRevealMismatch    = errorsmod.RegisterWithGRPCCode(ModuleName, 22, codes.InvalidArgument, "reveal does not match the commitment")
	ErrRevealNotOpen     = errorsmod.RegisterWithGRPCCode(ModuleName, 23, codes.FailedPrecondition, "reveals are not open for this task yet")
	ErrInvalidCheckpoint = errorsmod.RegisterWithGRPCCode(ModuleName, 24, codes.InvalidArgument, "invalid checkpoint")
	ErrInvalidReveal     = errorsmod.RegisterWithGRPCCode(ModuleName, 25, codes.InvalidArgument, "invalid reveal")
	ErrNodeBusy          = errorsmod.RegisterWithGRPCCode(ModuleName, 26, codes.FailedPrecondition, "node has tasks in flight")
	ErrNotChallengeable  = errorsmod.RegisterWithGRPCCode(ModuleName, 27, codes.FailedPrecondition, "result cannot be challenged")
	ErrWrongResult       = errorsmod.RegisterWithGRPCCode(ModuleName, 28, codes.InvalidArgument, "wrong result")
	ErrAlreadyDisputed   = errorsmod.RegisterWithGRPCCode(ModuleName, 29, codes.AlreadyExists, "task already disputed")
	ErrPoolNotFound      = errorsmod.RegisterWithGRPCCode(ModuleName, 30, codes.NotFound, "pool not found")
	ErrInvalidPool       = errorsmod.RegisterWithGRPCCode(ModuleName, 31, codes.InvalidArgument, "invalid pool")
	ErrUnitNotFound      = errorsmod.RegisterWithGRPCCode(ModuleName, 32, codes.NotFound, "unit not found")
	ErrUnitClaimed       = errorsmod.RegisterWithGRPCCode(ModuleName, 33, codes.AlreadyExists, "unit already claimed")
	ErrNotMember         = errorsmod.RegisterWithGRPCCode(ModuleName, 34, codes.FailedPrecondition, "node is not a member of the pool")
	ErrDisputeNotFound   = errorsmod.RegisterWithGRPCCode(ModuleName, 35, codes.NotFound, "dispute not found")
	ErrUnitReserved      = errorsmod.RegisterWithGRPCCode(ModuleName, 36, codes.FailedPrecondition, "unit reserved for another member")
	ErrInvalidFailure    = errorsmod.RegisterWithGRPCCode(ModuleName, 37, codes.InvalidArgument, "invalid failure report")
	ErrInvalidProgress   = errorsmod.RegisterWithGRPCCode(ModuleName, 38, codes.InvalidArgument, "invalid task progress")
	ErrBidBinding        = errorsmod.RegisterWithGRPCCode(ModuleName, 39, codes.FailedPrecondition, "bid is binding")
	ErrInvalidRelease    = errorsmod.RegisterWithGRPCCode(ModuleName, 40, codes.InvalidArgument, "invalid task release")
	ErrAlreadyMember     = errorsmod.RegisterWithGRPCCode(ModuleName, 41, codes.AlreadyExists, "node is already a member of the pool")
)
