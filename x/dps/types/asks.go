package types

import (
	"cmp"
	"math/big"
	"slices"
	"strings"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/validate"
)

// The reference ask of a GPU class (x/dps/README.md, "Priced out"): the power of the
// class's nodes is added up by ask bucket, four buckets to a power of two (an ask of
// 2^k to 2^(k+1) - 1 falls in one of four, by its two bits below the leading one), and
// the reference is the highest ask of the bucket where the power, added from the lowest
// ask up, reaches half the class's. A bucket spans at most a quarter of its lowest ask
// above it, so the reference lies within 25% above the exact median, and the record of a
// class stays small whatever its number of nodes (an ask is at most 10^30: at most 400
// buckets).

// BucketOfAsk is the bucket of an ask per GPU-hour (positive; 0 for anything below 1).
func BucketOfAsk(ask sdkmath.Int) uint32 {
	if ask.IsNil() || !ask.IsPositive() {
		return 0
	}
	b := ask.BigInt()
	l := b.BitLen()
	if l <= 2 {
		return uint32(4 * (l - 1)) // 1: 0; 2 and 3: 4
	}
	top := new(big.Int).Rsh(b, uint(l-3)).Uint64() // the leading bit and the two below: 4 to 7
	return uint32(4*(l-1)) + uint32(top-4)
}

// BucketMaxAsk is the highest ask of bucket b.
func BucketMaxAsk(b uint32) sdkmath.Int {
	l, t := b/4+1, int64(b%4+4)
	switch l {
	case 1:
		return sdkmath.OneInt()
	case 2:
		return sdkmath.NewInt(3)
	}
	hi := new(big.Int).Lsh(big.NewInt(t+1), uint(l-3))
	return sdkmath.NewIntFromBigInt(hi.Sub(hi, big.NewInt(1)))
}

// AddAsk adds power at an ask to class's buckets in asks (kept in class order, each
// class's buckets in bucket order) and returns asks. The power of a bucket saturates
// rather than wraps.
func AddAsk(asks []ClassAsks, class string, ask sdkmath.Int, power uint64) []ClassAsks {
	i, found := slices.BinarySearchFunc(asks, class, func(c ClassAsks, class string) int { return strings.Compare(c.GpuClass, class) })
	if !found {
		asks = slices.Insert(asks, i, ClassAsks{GpuClass: class})
	}
	c := &asks[i]
	b := BucketOfAsk(ask)
	j, found := slices.BinarySearchFunc(c.Buckets, b, func(x AskBucket, b uint32) int { return cmp.Compare(x.Bucket, b) })
	if !found {
		c.Buckets = slices.Insert(c.Buckets, j, AskBucket{Bucket: b})
	}
	c.Buckets[j].PowerGflops = addSaturating(c.Buckets[j].PowerGflops, power)
	return asks
}

// ReferenceAsk is the highest ask of the bucket that holds the power-weighted median of
// buckets (in bucket order): the first at which the power added from the lowest reaches
// half the total. Zero for no power.
func ReferenceAsk(buckets []AskBucket) sdkmath.Int {
	var total uint64
	for _, b := range buckets {
		total = addSaturating(total, b.PowerGflops)
	}
	if total == 0 {
		return sdkmath.ZeroInt()
	}
	half := total/2 + total%2
	var sum uint64
	for _, b := range buckets {
		if sum = addSaturating(sum, b.PowerGflops); sum >= half {
			return BucketMaxAsk(b.Bucket)
		}
	}
	return BucketMaxAsk(buckets[len(buckets)-1].Bucket)
}

// ClassCap is class's entry in a distribution's ask caps (sorted by class), and whether
// the class is there.
func ClassCap(caps []AskCap, class string) (AskCap, bool) {
	i, found := slices.BinarySearchFunc(caps, class, func(c AskCap, class string) int { return strings.Compare(c.GpuClass, class) })
	if !found {
		return AskCap{}, false
	}
	return caps[i], true
}

// PricedOut says whether ask is above class's cap in caps (a distribution's ask_caps),
// and the class's entry. A class without a positive reference ask (none of its nodes had
// power at the asks pass) caps nothing.
func PricedOut(caps []AskCap, class string, ask sdkmath.Int) (AskCap, bool) {
	c, ok := ClassCap(caps, class)
	if !ok || !c.ReferenceAsk.IsPositive() || ask.IsNil() {
		return c, false
	}
	return c, ask.GT(c.Cap)
}

// AskCaps are the reference ask and cap of each class of asks (in class order).
func AskCaps(asks []ClassAsks, capPPM uint64) []AskCap {
	out := make([]AskCap, 0, len(asks))
	for _, c := range asks {
		ref := ReferenceAsk(c.Buckets)
		out = append(out, AskCap{GpuClass: c.GpuClass, ReferenceAsk: ref, Cap: CapOf(ref, capPPM)})
	}
	return out
}

// CapOf is the highest ask that earns availability at a class's reference ask:
// floor(reference * capPPM / 1,000,000).
func CapOf(reference sdkmath.Int, capPPM uint64) sdkmath.Int {
	return reference.Mul(sdkmath.NewIntFromUint64(capPPM)).Quo(sdkmath.NewInt(validate.PPMOne))
}

func addSaturating(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}
