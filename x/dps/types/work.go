package types

import sdk "github.com/cosmos/cosmos-sdk/types"

// ProviderWork is one provider's verified work of one workload class in one reward epoch,
// as the distribution reads it from the ledger.
type ProviderWork struct {
	Provider sdk.AccAddress
	Workload int32
	Record   WorkRecord
}

// WorkCursor positions a walk over an epoch's work: the last entry seen.
type WorkCursor struct {
	Provider sdk.AccAddress
	Workload int32
}
