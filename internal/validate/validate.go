// Package validate holds the small value checks that every module's Params.Validate and
// message validation share. Each returns a plain error naming the field and the value; the
// caller wraps it in its module's registered error.
package validate

import (
	"fmt"
	"time"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// PPMOne is 1 in parts per million.
const PPMOne = 1_000_000

// PPM checks that v is a fraction in parts per million, 0..1,000,000.
func PPM(name string, v uint32) error {
	if v > PPMOne {
		return fmt.Errorf("%s %d: must be at most %d ppm", name, v, PPMOne)
	}
	return nil
}

// Positive checks v > 0.
func Positive[T ~uint32 | ~uint64 | ~int64](name string, v T) error {
	if v <= 0 {
		return fmt.Errorf("%s %d: must be positive", name, v)
	}
	return nil
}

// Range checks lo <= v <= hi.
func Range[T ~uint32 | ~uint64 | ~int64](name string, v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s %d: must be in [%d, %d]", name, v, lo, hi)
	}
	return nil
}

// PositiveDuration checks d > 0.
func PositiveDuration(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s %s: must be positive", name, d)
	}
	return nil
}

// DurationRange checks lo <= d <= hi.
func DurationRange(name string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s %s: must be in [%s, %s]", name, d, lo, hi)
	}
	return nil
}

// Denom checks a coin denomination.
func Denom(name, denom string) error {
	if err := sdk.ValidateDenom(denom); err != nil {
		return fmt.Errorf("%s %q: %w", name, denom, err)
	}
	return nil
}

// NonNegativeInt checks that an Int is set and not negative.
func NonNegativeInt(name string, v sdkmath.Int) error {
	if v.IsNil() || v.IsNegative() {
		return fmt.Errorf("%s %s: must be a non-negative integer", name, v)
	}
	return nil
}

// PositiveInt checks that an Int is set and positive.
func PositiveInt(name string, v sdkmath.Int) error {
	if v.IsNil() || !v.IsPositive() {
		return fmt.Errorf("%s %s: must be a positive integer", name, v)
	}
	return nil
}

// UnitDec checks that a LegacyDec is set and in [0, 1].
func UnitDec(name string, d sdkmath.LegacyDec) error {
	if d.IsNil() || d.IsNegative() || d.GT(sdkmath.LegacyOneDec()) {
		return fmt.Errorf("%s %s: must be in [0, 1]", name, d)
	}
	return nil
}

// PositiveDec checks that a LegacyDec is set and positive.
func PositiveDec(name string, d sdkmath.LegacyDec) error {
	if d.IsNil() || !d.IsPositive() {
		return fmt.Errorf("%s %s: must be positive", name, d)
	}
	return nil
}

// Coin checks that a coin is valid and of the given denom.
func Coin(name string, c sdk.Coin, denom string) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s %s: %w", name, c, err)
	}
	if c.Denom != denom {
		return fmt.Errorf("%s %s: denom must be %s", name, c, denom)
	}
	return nil
}

// Identifier checks a short identifier: 1..64 characters of [A-Za-z0-9._-].
func Identifier(name, s string) error {
	if len(s) == 0 || len(s) > 64 {
		return fmt.Errorf("%s %s: must be 1 to 64 characters", name, Quote(s))
	}
	for _, r := range s {
		ok := r == '-' || r == '_' || r == '.' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return fmt.Errorf("%s %q: only letters, digits, '.', '_' and '-' are allowed", name, s)
		}
	}
	return nil
}

// The bounds of a block-hook work budget (a module's *_gas_per_block or end_block_gas
// param): enough for a block's ordinary work, and far below what would stall a block.
const (
	MinBlockGas = 10_000_000
	MaxBlockGas = 2_000_000_000
)

// BlockGas checks a block-hook work budget.
func BlockGas(name string, v uint64) error { return Range(name, v, MinBlockGas, MaxBlockGas) }
