package types

import errorsmod "cosmossdk.io/errors"

// Registered errors. Codes never move; new errors take the next free code.
var (
	ErrInvalidParams     = errorsmod.Register(ModuleName, 2, "invalid params")
	ErrInvalidAuthority  = errorsmod.Register(ModuleName, 3, "invalid authority")
	ErrInvalidGenesis    = errorsmod.Register(ModuleName, 4, "invalid genesis")
	ErrInvalidAddress    = errorsmod.Register(ModuleName, 5, "invalid address")
	ErrInvalidJobSpec    = errorsmod.Register(ModuleName, 6, "invalid job spec")
	ErrInsufficientFunds = errorsmod.Register(ModuleName, 7, "insufficient funds for the escrow")
	ErrJobNotFound       = errorsmod.Register(ModuleName, 8, "job not found")
	ErrTaskNotFound      = errorsmod.Register(ModuleName, 9, "task not found")
	ErrNotOwner          = errorsmod.Register(ModuleName, 10, "signer is not the job's owner")
	ErrNotProvider       = errorsmod.Register(ModuleName, 11, "signer is not the task's provider")
	ErrInvalidJobStatus  = errorsmod.Register(ModuleName, 12, "job is not in a status that allows this")
	ErrInvalidTaskStatus = errorsmod.Register(ModuleName, 13, "task is not in a status that allows this")
	ErrNotAuction        = errorsmod.Register(ModuleName, 14, "job is not taking bids")
	ErrInvalidBid        = errorsmod.Register(ModuleName, 15, "invalid bid")
	ErrDuplicateBid      = errorsmod.Register(ModuleName, 16, "node already bid on this job")
	ErrBidNotFound       = errorsmod.Register(ModuleName, 17, "bid not found")
	ErrNodeNotEligible   = errorsmod.Register(ModuleName, 18, "node is not eligible for this job")
	ErrNodeUnknown       = errorsmod.Register(ModuleName, 19, "node unknown to the market")
	ErrDeadlinePassed    = errorsmod.Register(ModuleName, 20, "task deadline passed")
	ErrInvalidCommitment = errorsmod.Register(ModuleName, 21, "invalid commitment")
	ErrRevealMismatch    = errorsmod.Register(ModuleName, 22, "reveal does not match the commitment")
	ErrRevealNotOpen     = errorsmod.Register(ModuleName, 23, "reveals are not open for this task yet")
	ErrInvalidCheckpoint = errorsmod.Register(ModuleName, 24, "invalid checkpoint")
	ErrInvalidReveal     = errorsmod.Register(ModuleName, 25, "invalid reveal")
	ErrNodeBusy          = errorsmod.Register(ModuleName, 26, "node has tasks in flight")
)
