package types

import (
	"context"
	"time"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// StakingSlashHooks tell other modules (x/reputation) about slashes and jailings. They are
// called after the state change; a hook that fails writes nothing and returns its error,
// which Slash and Jail return to their caller (whose tx or block item then fails whole).
type StakingSlashHooks interface {
	// AfterSlashed is called after every slash, a zero one included.
	AfterSlashed(ctx context.Context, rec SlashRecord) error
	// AfterJailed is called after every jailing; until is the jail end now in force.
	AfterJailed(ctx context.Context, provider sdk.AccAddress, until time.Time, evidence SlashEvidence) error
}

// Beneficiaries of a slash. A share without a beneficiary is burned.
type Beneficiaries struct {
	// Compensate is the harmed client; nil when there is none.
	Compensate sdk.AccAddress
	// CompensationCap is the most Compensate is paid: the value the client paid for the
	// task or unit. Compensation makes a client whole, never richer: a client that could
	// gain from a provider's failure would buy it (a proposer censoring the provider's
	// reveal, a job built to split replicas). What the cap holds back is burned. Required
	// (zero or more) when Compensate is set.
	CompensationCap sdkmath.Int
	// Rewarded are the challenger or the verifiers, paid equal shares; empty when none.
	Rewarded []sdk.AccAddress
}
