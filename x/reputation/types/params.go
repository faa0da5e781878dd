package types

import (
	"fmt"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/validate"
)

// DefaultParams returns the launch parameters (DESIGN.md section 4, x/reputation).
//
// Accuracy weighs three times responsiveness so that a node caught cheating drops below
// min_score in the first epoch it is caught: failing every verification while answering
// on time gives at most beta + gamma*S_prev = 0.2 + 0.2*0.5 = 0.3 < 0.4 after one epoch,
// and beta/(1-gamma) = 0.25 in the limit; an honest node (A = R = 1) rises towards 1
// (0.9, 0.98, 0.996, ...). See the module README.
func DefaultParams() Params {
	return Params{
		EndBlockGas:        100_000_000,
		Alpha:              sdkmath.LegacyNewDecWithPrec(6, 1), // accuracy
		Beta:               sdkmath.LegacyNewDecWithPrec(2, 1), // responsiveness
		Gamma:              sdkmath.LegacyNewDecWithPrec(2, 1), // memory of the previous score
		InitialScore:       sdkmath.LegacyNewDecWithPrec(5, 1),
		MinScore:           sdkmath.LegacyNewDecWithPrec(4, 1),
		IdleDecay:          sdkmath.LegacyNewDecWithPrec(1, 1),
		EpochIdentifier:    "flops",
		MaxUpdatesPerBlock: 100,
		HistoryLength:      30,
	}
}

// Validate rejects every out-of-range value, naming it.
func (p Params) Validate() error {
	if err := p.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidParams, err.Error())
	}
	return nil
}

func (p Params) validate() error {
	for _, err := range []error{
		validate.UnitDec("alpha", p.Alpha),
		validate.UnitDec("beta", p.Beta),
		validate.UnitDec("gamma", p.Gamma),
		validate.UnitDec("initial_score", p.InitialScore),
		validate.UnitDec("min_score", p.MinScore),
		validate.UnitDec("idle_decay", p.IdleDecay),
		validate.Identifier("epoch_identifier", p.EpochIdentifier),
		validate.Range("max_updates_per_block", p.MaxUpdatesPerBlock, 1, 10_000),
		validate.BlockGas("end_block_gas", p.EndBlockGas),
		validate.Range("history_length", p.HistoryLength, 1, 1000),
	} {
		if err != nil {
			return err
		}
	}
	if sum := p.Alpha.Add(p.Beta).Add(p.Gamma); !sum.Equal(sdkmath.LegacyOneDec()) {
		return fmt.Errorf("alpha + beta + gamma = %s: must equal 1", sum)
	}
	// a new node starts at initial_score: below min_score it could never be given work,
	// so never earn a better score
	if p.InitialScore.LT(p.MinScore) {
		return fmt.Errorf("initial_score %s: must be at least min_score %s, or no new node is ever eligible for work", p.InitialScore, p.MinScore)
	}
	return nil
}
