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
	ErrNotWired         = errorsmod.RegisterWithGRPCCode(ModuleName, 5, codes.Internal, "keeper dependency not set")
	ErrNotFound         = errorsmod.RegisterWithGRPCCode(ModuleName, 6, codes.NotFound, "not found")
)
