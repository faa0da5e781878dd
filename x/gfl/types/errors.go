package types

import errorsmod "cosmossdk.io/errors"

// Registered errors. Codes never move; new errors take the next free code.
var (
	ErrInvalidParams          = errorsmod.Register(ModuleName, 2, "invalid params")
	ErrInvalidAuthority       = errorsmod.Register(ModuleName, 3, "invalid authority")
	ErrInvalidGenesis         = errorsmod.Register(ModuleName, 4, "invalid genesis")
	ErrInvalidAddress         = errorsmod.Register(ModuleName, 5, "invalid address")
	ErrInvalidNodeSpec        = errorsmod.Register(ModuleName, 6, "invalid node spec")
	ErrUnknownGpuClass        = errorsmod.Register(ModuleName, 7, "unknown GPU class")
	ErrMixedGpuClasses        = errorsmod.Register(ModuleName, 8, "GPUs of different classes in one node")
	ErrDuplicateGpu           = errorsmod.Register(ModuleName, 9, "GPU already registered")
	ErrNodeNotFound           = errorsmod.Register(ModuleName, 10, "node not found")
	ErrNotOperator            = errorsmod.Register(ModuleName, 11, "signer is not the node's operator")
	ErrInvalidNodeStatus      = errorsmod.Register(ModuleName, 12, "node is not in a status that allows this")
	ErrNodeBusy               = errorsmod.Register(ModuleName, 13, "node has work in flight")
	ErrInsufficientCollateral = errorsmod.Register(ModuleName, 14, "insufficient collateral")
	ErrChallengeNotFound      = errorsmod.Register(ModuleName, 15, "challenge not found")
	ErrChallengeClosed        = errorsmod.Register(ModuleName, 16, "challenge is not in a status that allows this")
	ErrCommitTooLate          = errorsmod.Register(ModuleName, 17, "commitment after the deadline")
	ErrRevealTooEarly         = errorsmod.Register(ModuleName, 18, "reveal before the sampling block is committed")
	ErrRevealTooLate          = errorsmod.Register(ModuleName, 19, "reveal after the deadline")
	ErrMalformedReveal        = errorsmod.Register(ModuleName, 20, "malformed reveal")
	ErrBadProof               = errorsmod.Register(ModuleName, 21, "bad Merkle proof")
	ErrWrongEntry             = errorsmod.Register(ModuleName, 22, "wrong entry")
	ErrBeaconUnavailable      = errorsmod.Register(ModuleName, 23, "beacon block hash unavailable")
	ErrInvalidRoot            = errorsmod.Register(ModuleName, 24, "invalid Merkle root")
	ErrNotTransferable        = errorsmod.Register(ModuleName, 25, "ugfl is not transferable")
	ErrRoundNotFound          = errorsmod.Register(ModuleName, 26, "challenge round not found")
)
