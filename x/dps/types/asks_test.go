package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/dps/types"
)

// Every ask falls in a bucket whose highest ask is at least the ask and at most a
// quarter above it, and the buckets follow the asks' order: from 1 to beyond x/gfl's
// largest ask (10^30).
func TestAskBuckets(t *testing.T) {
	check := func(ask sdkmath.Int) {
		t.Helper()
		b := types.BucketOfAsk(ask)
		hi := types.BucketMaxAsk(b)
		require.True(t, hi.GTE(ask), "ask %s: bucket %d ends at %s", ask, b, hi)
		require.True(t, hi.LTE(ask.Add(ask.QuoRaw(4)).AddRaw(1)), "ask %s: bucket %d ends at %s", ask, b, hi)
		require.Equal(t, b, types.BucketOfAsk(hi), "the bucket's highest ask is in it")
		require.Greater(t, types.BucketOfAsk(hi.AddRaw(1)), b, "the next ask is in a later bucket")
	}
	for n := int64(1); n <= 5_000; n++ {
		check(sdkmath.NewInt(n))
	}
	for e := 4; e <= 30; e++ {
		p := sdkmath.NewIntWithDecimal(1, e)
		check(p)
		check(p.SubRaw(1))
		check(p.AddRaw(1))
	}
	require.Equal(t, uint32(0), types.BucketOfAsk(sdkmath.ZeroInt()))
	require.Equal(t, uint32(0), types.BucketOfAsk(sdkmath.Int{}))
	require.Less(t, types.BucketOfAsk(sdkmath.NewIntWithDecimal(1, 30)), uint32(400))
}

// The reference is the highest ask of the bucket where the power, added from the lowest
// ask, reaches half: by power, not by count.
func TestReferenceAsk(t *testing.T) {
	var asks []types.ClassAsks
	require.True(t, types.ReferenceAsk(nil).IsZero())
	asks = types.AddAsk(asks, "h100", sdkmath.NewInt(9_000), 10)
	asks = types.AddAsk(asks, "a100", sdkmath.NewInt(5_000), 100) // 5,000 to 5,119
	asks = types.AddAsk(asks, "a100", sdkmath.NewInt(1_000), 60)  // 896 to 1,023
	asks = types.AddAsk(asks, "a100", sdkmath.NewInt(1_010), 40)
	asks = types.AddAsk(asks, "a100", sdkmath.NewInt(2_000), 1)
	require.Equal(t, "a100", asks[0].GpuClass)
	require.Equal(t, "h100", asks[1].GpuClass)
	require.Len(t, asks[0].Buckets, 3)
	require.Equal(t, uint64(100), asks[0].Buckets[0].PowerGflops)
	// 201 in all: half is 101, reached only by the bucket of 2,000 (1,920 to 2,047)
	require.Equal(t, int64(2_047), types.ReferenceAsk(asks[0].Buckets).Int64())
	asks = types.AddAsk(asks, "a100", sdkmath.NewInt(100), 1) // 202: half 101 reached at 1,023
	require.Equal(t, int64(1_023), types.ReferenceAsk(asks[0].Buckets).Int64())
	require.Equal(t, int64(10_239), types.ReferenceAsk(asks[1].Buckets).Int64())
	caps := types.AskCaps(asks, types.DefaultAvailabilityAskCapPPM)
	require.Equal(t, []types.AskCap{
		{GpuClass: "a100", ReferenceAsk: sdkmath.NewInt(1_023), Cap: sdkmath.NewInt(2_046)},
		{GpuClass: "h100", ReferenceAsk: sdkmath.NewInt(10_239), Cap: sdkmath.NewInt(20_478)},
	}, caps)
	c, ok := types.ClassCap(caps, "h100")
	require.True(t, ok)
	require.Equal(t, int64(20_478), c.Cap.Int64())
	_, ok = types.ClassCap(caps, "b200")
	require.False(t, ok)
	_, out := types.PricedOut(caps, "a100", sdkmath.NewInt(2_046))
	require.False(t, out, "at the cap")
	_, out = types.PricedOut(caps, "a100", sdkmath.NewInt(2_047))
	require.True(t, out)
	_, out = types.PricedOut(caps, "b200", sdkmath.NewInt(1_000_000))
	require.False(t, out, "a class without a reference caps nothing")
	_, out = types.PricedOut([]types.AskCap{{GpuClass: "a100", ReferenceAsk: sdkmath.ZeroInt(), Cap: sdkmath.ZeroInt()}}, "a100", sdkmath.NewInt(1))
	require.False(t, out, "nor one whose reference is zero")
	require.Equal(t, int64(1_534), types.CapOf(sdkmath.NewInt(1_023), 1_500_000).Int64(), "floor(1,023 x 1.5)")

	// power saturates rather than wraps
	max := types.AddAsk(nil, "a100", sdkmath.NewInt(10), ^uint64(0))
	max = types.AddAsk(max, "a100", sdkmath.NewInt(10), 5)
	require.Equal(t, ^uint64(0), max[0].Buckets[0].PowerGflops)
}
