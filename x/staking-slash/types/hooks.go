package types

import (
	"context"
	"time"

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
	// Rewarded are the challenger or the verifiers, paid equal shares; empty when none.
	Rewarded []sdk.AccAddress
}
