// Package sdkint holds helpers for cosmossdk.io/math's Int in stored records.
package sdkint

import sdkmath "cosmossdk.io/math"

// OrZero is x, or zero when x is nil: a field that a record written before the field
// existed (or a genesis that leaves it out) does not hold.
func OrZero(x sdkmath.Int) sdkmath.Int {
	if x.IsNil() {
		return sdkmath.ZeroInt()
	}
	return x
}
