package pocp

import (
	"math"
	"math/bits"
)

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func mul128(a u128, b uint64) (u128, bool) {
	h1, l1 := bits.Mul64(a.lo, b)
	h2, l2 := bits.Mul64(a.hi, b)
	hi, carry := bits.Add64(h1, l2, 0)
	return u128{hi, l1}, h2 == 0 && carry == 0
}

func div128(a u128, d uint64) u128 {
	qhi, rem := a.hi/d, a.hi%d
	qlo, _ := bits.Div64(rem, a.lo, d)
	return u128{qhi, qlo}
}

func less128(a, b u128) bool {
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo)
}

func (a u128) sat64() uint64 {
	if a.hi != 0 {
		return math.MaxUint64
	}
	return a.lo
}

var max128 = u128{math.MaxUint64, math.MaxUint64}

// PowerGFLOPS is the power sample of a verified challenge in GFLOP/s (= ugfl), docs/pocp.md
// section 6:
//
//	power = floor(2 * n^3 * r / (elapsedMillis * 10^6))
//
// that is 2*n^3*r FLOPs over elapsedMillis/1000 seconds, in units of 10^9 FLOP/s,
// truncated once. It is exact for every uint32 n and r (n^3*r < 2^128 is carried in 128
// bits) and saturates at MaxUint64. elapsedMillis == 0 (commit in the issue block's
// time) gives 0, a zero sample: an answer in no time is not evidence of power.
func PowerGFLOPS(n, r uint32, elapsedMillis uint64) uint64 {
	if elapsedMillis == 0 {
		return 0
	}
	nn := uint64(n)
	x, _ := mul128(u128{0, nn * nn}, nn) // n^3 < 2^96
	x, _ = mul128(x, uint64(r))          // n^3*r < 2^128
	// floor(2x / (e*10^6)) == floor(floor(x / 500000) / e).
	return div128(div128(x, 500_000), elapsedMillis).sat64()
}

// ChooseSize sizes a challenge for a node of estimated power powerGFLOPS (GFLOP/s) so
// that it takes about targetSeconds (docs/pocp.md section 7). With the work budget
// W = powerGFLOPS * 10^9 * targetSeconds FLOPs (in 128 bits, saturating):
//
//  1. n = the largest multiple of 256 in [minN, maxN] with 2*n^3 <= W, or minN if none;
//  2. r = max(1, floor(W / (2*n^3)));
//  3. r is lowered until r*n <= maxRN and 4*n*r < 2^24, never below 1.
//
// The result always passes Validate: minN is first rounded up to a multiple of 256 and
// clamped to [MinN, MaxN], maxN rounded down and clamped to [minN, MaxN] (so minN > maxN
// yields minN). If maxRN < n, r = 1 and r*n exceeds maxRN; params should keep
// maxRN >= maxN. Whenever r > 1, 2*n^3*r <= W.
func ChooseSize(powerGFLOPS uint64, targetSeconds uint64, minN, maxN uint32, maxRN uint64) (n, r uint32) {
	w, ok := mul128(u128{0, powerGFLOPS}, 1_000_000_000)
	if ok {
		w, ok = mul128(w, targetSeconds)
	}
	if !ok {
		w = max128
	}

	lo := (max(uint64(minN), MinN) + ChunkEntries - 1) / ChunkEntries * ChunkEntries
	lo = min(lo, MaxN)
	hi := min(uint64(maxN), MaxN) / ChunkEntries * ChunkEntries
	hi = max(hi, lo)

	// cost(m) = 2*m^3 < 2^49 for m <= MaxN. At most 256 steps.
	cost := func(m uint64) uint64 { return 2 * m * m * m }
	n64 := lo
	for m := hi; m >= lo; m -= ChunkEntries {
		if !less128(w, u128{0, cost(m)}) {
			n64 = m
			break
		}
	}

	r64 := max(div128(w, cost(n64)).sat64(), 1)
	if capRN := maxRN / n64; r64 > capRN {
		r64 = max(capRN, 1)
	}
	if capExact := (ExactLimit - 1) / (4 * n64); r64 > capExact {
		r64 = capExact // >= 63 since n64 <= MaxN
	}
	return uint32(n64), uint32(r64)
}
