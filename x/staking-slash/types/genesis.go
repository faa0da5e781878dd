package types

import (
	"fmt"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
)

// DefaultGenesisState returns the genesis state with default params and nothing else.
func DefaultGenesisState() *GenesisState {
	return &GenesisState{Params: DefaultParams()}
}

// Validate checks the params and every record of the genesis state: well-formed
// addresses, non-negative amounts, no duplicate providers or ids, next ids above every id,
// and every unbonding entry belonging to a provider with a collateral record. Whether the
// locked GPUs are covered is not checked: params may have changed since they were locked.
func (gs GenesisState) Validate() error {
	if err := gs.Params.Validate(); err != nil {
		return errorsmod.Wrap(err, "genesis params")
	}
	if err := gs.validateRecords(); err != nil {
		return errorsmod.Wrap(ErrInvalidGenesis, err.Error())
	}
	if err := gs.Retries.Validate(ItemKinds...); err != nil {
		return errorsmod.Wrap(ErrInvalidGenesis, err.Error())
	}
	return nil
}

func (gs GenesisState) validateRecords() error {
	// Keyed by address bytes so two spellings of one address count as duplicates; used for
	// lookups only, never iterated.
	providers := make(map[string]struct{}, len(gs.Collaterals))
	for i, c := range gs.Collaterals {
		addr, err := accAddress(fmt.Sprintf("collaterals[%d].provider", i), c.Provider)
		if err != nil {
			return err
		}
		if _, dup := providers[string(addr)]; dup {
			return fmt.Errorf("collaterals[%d]: duplicate provider %s", i, c.Provider)
		}
		providers[string(addr)] = struct{}{}
		if err := nonNegative(fmt.Sprintf("collaterals[%d]", i), named3("bonded", c.Bonded, "exposure", c.Exposure, "slashed_total", c.SlashedTotal)); err != nil {
			return err
		}
	}

	unbondingIDs := make(map[uint64]struct{}, len(gs.Unbondings))
	for i, u := range gs.Unbondings {
		addr, err := accAddress(fmt.Sprintf("unbondings[%d].provider", i), u.Provider)
		if err != nil {
			return err
		}
		if _, ok := providers[string(addr)]; !ok {
			return fmt.Errorf("unbondings[%d] (id %d): provider %s has no collateral record", i, u.Id, u.Provider)
		}
		if _, dup := unbondingIDs[u.Id]; dup {
			return fmt.Errorf("unbondings[%d]: duplicate id %d", i, u.Id)
		}
		unbondingIDs[u.Id] = struct{}{}
		if u.Id >= gs.NextUnbondingId {
			return fmt.Errorf("unbondings[%d]: id %d not below next_unbonding_id %d", i, u.Id, gs.NextUnbondingId)
		}
		if err := validate.NonNegativeInt(fmt.Sprintf("unbondings[%d].amount", i), u.Amount); err != nil {
			return err
		}
	}

	slashIDs := make(map[uint64]struct{}, len(gs.Slashes))
	for i, s := range gs.Slashes {
		name := fmt.Sprintf("slashes[%d]", i)
		if _, err := accAddress(name+".provider", s.Provider); err != nil {
			return err
		}
		if _, dup := slashIDs[s.Id]; dup {
			return fmt.Errorf("%s: duplicate id %d", name, s.Id)
		}
		slashIDs[s.Id] = struct{}{}
		if s.Id >= gs.NextSlashId {
			return fmt.Errorf("%s: id %d not below next_slash_id %d", name, s.Id, gs.NextSlashId)
		}
		if err := ValidateSlashReason(s.Reason); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := validate.PPM(name+".fraction_ppm", s.FractionPpm); err != nil {
			return err
		}
		if err := nonNegative(name, named3("compensation", s.Compensation, "reward", s.Reward, "burned", s.Burned)); err != nil {
			return err
		}
		if err := validate.NonNegativeInt(name+".amount", s.Amount); err != nil {
			return err
		}
		if sum := s.Compensation.Add(s.Reward).Add(s.Burned); !sum.Equal(s.Amount) {
			return fmt.Errorf("%s: amount %s is not compensation + reward + burned = %s", name, s.Amount, sum)
		}
		if s.Compensated != "" {
			if _, err := accAddress(name+".compensated", s.Compensated); err != nil {
				return err
			}
		}
		for j, r := range s.Rewarded {
			if _, err := accAddress(fmt.Sprintf("%s.rewarded[%d]", name, j), r); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateSlashReason accepts the defined reasons other than UNSPECIFIED.
func ValidateSlashReason(r SlashReason) error {
	if _, ok := SlashReason_name[int32(r)]; !ok || r == SLASH_REASON_UNSPECIFIED {
		return fmt.Errorf("slash reason %s: must be a defined reason other than %s", r, SLASH_REASON_UNSPECIFIED)
	}
	return nil
}

type namedInt struct {
	name string
	v    sdkmath.Int
}

func named3(n1 string, v1 sdkmath.Int, n2 string, v2 sdkmath.Int, n3 string, v3 sdkmath.Int) []namedInt {
	return []namedInt{{n1, v1}, {n2, v2}, {n3, v3}}
}

func nonNegative(prefix string, vs []namedInt) error {
	for _, v := range vs {
		if err := validate.NonNegativeInt(prefix+"."+v.name, v.v); err != nil {
			return err
		}
	}
	return nil
}

func accAddress(name, s string) (sdk.AccAddress, error) {
	addr, err := sdk.AccAddressFromBech32(s)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", name, s, err)
	}
	return addr, nil
}
