package types_test

import (
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// SplitSlash shares a slash exactly: the parts always sum to the total and every share is
// truncated, its remainder burned.
func TestSplitSlash(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		total                int64
		comp, reward         uint32
		compensated          bool
		rewarded             int
		wantComp, wantEach   int64
		wantPaid, wantBurned int64
	}{
		// no beneficiary: everything is burned
		{"no beneficiaries", 1_000, 500_000, 250_000, false, 0, 0, 0, 0, 1_000},
		// the client's share only; the unused reward share is burned
		{"compensation only", 1_000, 500_000, 250_000, true, 0, 500, 0, 0, 500},
		// one rewarded gets the whole reward share
		{"one rewarded", 1_000, 500_000, 250_000, true, 1, 500, 250, 250, 250},
		// three rewarded: floor(250/3)=83 each, 249 paid, the remainder 1 is burned
		{"three rewarded remainder burned", 1_000, 500_000, 250_000, true, 3, 500, 83, 249, 251},
		// truncation of the compensation share: floor(7*0.5)=3
		{"odd total truncates", 7, 500_000, 250_000, true, 3, 3, 0, 0, 4},
		// zero total gives zero parts
		{"zero total", 0, 500_000, 250_000, true, 3, 0, 0, 0, 0},
		// the shares may take everything
		{"full shares", 999, 600_000, 400_000, true, 1, 599, 399, 399, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := sdkmath.NewInt(tc.total)
			s, err := types.SplitSlash(total, tc.comp, tc.reward, tc.compensated, tc.rewarded)
			require.NoError(t, err)
			require.Equal(t, tc.wantComp, s.Compensation.Int64())
			require.Equal(t, tc.wantEach, s.RewardEach.Int64())
			require.Equal(t, tc.wantPaid, s.RewardPaid.Int64())
			require.Equal(t, tc.wantBurned, s.Burned.Int64())
			require.True(t, s.Compensation.Add(s.RewardPaid).Add(s.Burned).Equal(total), "parts must sum to the total")
		})
	}
}

// Shares above 100% are refused rather than creating coins.
func TestSplitSlashRejectsOverfullShares(t *testing.T) {
	_, err := types.SplitSlash(sdkmath.NewInt(10), 600_000, 400_001, true, 1)
	require.Error(t, err)
}

// PPMOf truncates and refuses negative input and 256-bit overflow instead of panicking.
func TestPPMOf(t *testing.T) {
	got, err := types.PPMOf(sdkmath.NewInt(999_999), 1)
	require.NoError(t, err)
	require.True(t, got.IsZero())
	got, err = types.PPMOf(sdkmath.NewInt(3_000_000), 333_333)
	require.NoError(t, err)
	require.Equal(t, int64(999_999), got.Int64())
	_, err = types.PPMOf(sdkmath.NewInt(-1), 1)
	require.Error(t, err)
	huge := sdkmath.NewIntFromBigInt(new(big.Int).Lsh(big.NewInt(1), 250))
	_, err = types.PPMOf(huge, 1_000_000)
	require.Error(t, err)
}
