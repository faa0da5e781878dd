package pocp

import (
	"errors"
	"math"
	"math/big"
	"math/rand"
	"testing"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		n, r uint32
		ok   bool
	}{
		{"smallest", 256, 1, true},                    // the lower bound of n
		{"largest", 65536, 63, true},                  // 4*65536*63 = 16515072 < 2^24
		{"r one too many at max n", 65536, 64, false}, // 4*65536*64 = 2^24 is not exact
		{"largest r at 256", 256, 16383, true},        // 4*256*16383 = 2^24 - 1024
		{"r too many at 256", 256, 16384, false},      // 4*256*16384 = 2^24
		{"zero rounds", 1024, 0, false},               // r >= 1
		{"n below min", 0, 1, false},                  // n >= 256
		{"n not a multiple of 256", 300, 1, false},    // whole chunks per row
		{"n above max", 65536 + 256, 1, false},        // n <= 65536
		{"huge r overflows nothing", 256, math.MaxUint32, false},
	}
	for _, tc := range cases {
		err := Challenge{N: tc.n, R: tc.r}.Validate()
		if tc.ok && err != nil {
			t.Errorf("%s: (%d, %d): %v", tc.name, tc.n, tc.r, err)
		}
		if !tc.ok && !errors.Is(err, ErrBadSize) {
			t.Errorf("%s: (%d, %d): err = %v, want ErrBadSize", tc.name, tc.n, tc.r, err)
		}
	}
}

func TestWorkAndCost(t *testing.T) {
	c := Challenge{N: 65536, R: 63}
	// 2 n^3 r for the largest challenge: 2 * 2^48 * 63.
	if got, want := c.FLOPs(), uint64(35465847065542656); got != want {
		t.Errorf("FLOPs = %d, want %d", got, want)
	}
	// n^2/256 leaves: 2^24 at n = 65536.
	if got := c.LeafCount(); got != 1<<24 {
		t.Errorf("LeafCount = %d, want 2^24", got)
	}
	// k*r*n multiply-adds: 32 * 63 * 65536.
	if got := VerifyTerms(c, 32); got != 132120576 {
		t.Errorf("VerifyTerms = %d", got)
	}
	// No sample, no cost; a negative k is no sample.
	if VerifyTerms(c, 0) != 0 || VerifyTerms(c, -1) != 0 {
		t.Errorf("VerifyTerms of k <= 0 is not 0")
	}
	// Out-of-range sizes saturate instead of wrapping.
	if got := (Challenge{N: math.MaxUint32, R: math.MaxUint32}).FLOPs(); got != math.MaxUint64 {
		t.Errorf("FLOPs of a huge challenge = %d, want saturation", got)
	}
}

func TestPowerGFLOPS(t *testing.T) {
	cases := []struct {
		name    string
		n, r    uint32
		elapsed uint64
		want    uint64
	}{
		// 2*256^3 = 33554432 FLOPs in 1 ms = 33.55 GFLOP/s, truncated.
		{"small in 1 ms", 256, 1, 1, 33},
		// 2^31 FLOPs in 1 s = 2.147 GFLOP/s, truncated to 2.
		{"truncation", 1024, 1, 1000, 2},
		// 805306368 FLOPs in 7 ms = 115.04 GFLOP/s.
		{"odd elapsed", 512, 3, 7, 115},
		// 2*768^3*5 = 4529848320 FLOPs in 3 ms = 1509.9 GFLOP/s.
		{"r > 1", 768, 5, 3, 1509},
		// The largest challenge in 1 ms: 2*2^48*63 / 10^6, no overflow.
		{"max challenge 1 ms", 65536, 63, 1, 35465847065},
		{"max challenge 1 s", 65536, 63, 1000, 35465847},
		// Answers that took forever are worth nothing.
		{"max elapsed", 65536, 63, math.MaxUint64, 0},
		// Elapsed 0 (commit with the issue block's time) is a zero sample.
		{"zero elapsed", 65536, 63, 0, 0},
		// Beyond valid sizes the 128-bit arithmetic saturates instead of wrapping.
		{"saturates", math.MaxUint32, math.MaxUint32, 1, math.MaxUint64},
	}
	for _, tc := range cases {
		if got := PowerGFLOPS(tc.n, tc.r, tc.elapsed); got != tc.want {
			t.Errorf("%s: PowerGFLOPS(%d, %d, %d) = %d, want %d", tc.name, tc.n, tc.r, tc.elapsed, got, tc.want)
		}
	}
}

func TestChooseSize(t *testing.T) {
	const rn = 1 << 22
	cases := []struct {
		name          string
		power, target uint64
		minN, maxN    uint32
		maxRN         uint64
		wantN, wantR  uint32
	}{
		// No power estimate: the smallest challenge.
		{"zero power", 0, 10, 256, 65536, rn, 256, 1},
		// No time: the smallest challenge.
		{"zero target", 1, 0, 256, 65536, rn, 256, 1},
		// W = 1e9: 2*768^3 = 905969664 <= W < 2*1024^3; r = 1.
		{"1 GFLOP/s for 1 s", 1, 1, 256, 65536, rn, 768, 1},
		// W = 1.5e12: n = 8960 (2*8960^3 = 1.44e12), r = 1.
		{"50 GFLOP/s for 30 s", 50, 30, 256, 65536, rn, 8960, 1},
		// W = 6e13: n = 30976.
		{"1 TFLOP/s for 60 s", 1000, 60, 256, 65536, rn, 30976, 1},
		// n capped by max_n, so r takes the rest: floor(8e9 / (2*512^3)) = 29.
		{"r fills in above max_n", 1, 8, 256, 512, rn, 512, 29},
		// W = 1e12 over n = 1024: r = floor(1e12 / 2^31) = 465, within both caps.
		{"r below caps", 100, 10, 256, 1024, rn, 1024, 465},
		// 1 EFLOP/s: n = 65536, r = 106581 capped by max_rn (64) and then 4nr < 2^24 (63).
		{"huge power, exactness cap", 1_000_000_000, 60, 256, 65536, rn, 65536, 63},
		// The same with max_rn = 2^20: r = 16.
		{"huge power, max_rn cap", 1_000_000_000, 60, 256, 65536, 1 << 20, 65536, 16},
		// max_rn below n: r never goes below 1.
		{"max_rn below n", 1_000_000_000, 60, 256, 65536, 1000, 65536, 1},
		// W saturates at 2^128-1 instead of overflowing.
		{"overflowing budget", math.MaxUint64, math.MaxUint64, 256, 65536, rn, 65536, 63},
		// min_n is rounded up to a multiple of 256.
		{"min_n 300", 0, 10, 300, 65536, rn, 512, 1},
		// min_n above max_n: min_n wins.
		{"min above max", 0, 1, 4096, 1024, rn, 4096, 1},
		// Zero bounds are clamped to [256, 65536]; W = 2.5e10 gives r = 745 at n = 256.
		{"zero bounds", 5, 5, 0, 0, rn, 256, 745},
		// max_n above 65536 is clamped.
		{"max_n above limit", 1_000_000_000, 60, 256, 100000, rn, 65536, 63},
	}
	for _, tc := range cases {
		n, r := ChooseSize(tc.power, tc.target, tc.minN, tc.maxN, tc.maxRN)
		if n != tc.wantN || r != tc.wantR {
			t.Errorf("%s: ChooseSize = (%d, %d), want (%d, %d)", tc.name, n, r, tc.wantN, tc.wantR)
		}
	}
}

// TestChooseSizeProperties checks over random and extreme inputs that the size is always
// a valid challenge, never exceeds the budget when r > 1, uses the largest n allowed,
// and r is as large as the budget and the caps allow.
func TestChooseSizeProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	pick := func(choices ...uint64) uint64 { return choices[rng.Intn(len(choices))] }
	for trial := range 20000 {
		power := pick(0, 1, uint64(rng.Intn(100_000)), rng.Uint64()>>uint(rng.Intn(64)), math.MaxUint64)
		target := pick(0, 1, uint64(rng.Intn(600)), rng.Uint64()>>uint(rng.Intn(64)), math.MaxUint64)
		minN := uint32(pick(0, 256, 512, uint64(rng.Intn(70000)), math.MaxUint32))
		maxN := uint32(pick(0, 256, 65536, uint64(rng.Intn(70000)), math.MaxUint32))
		maxRN := pick(0, 1000, 1<<22, rng.Uint64()>>uint(rng.Intn(64)), math.MaxUint64)
		n, r := ChooseSize(power, target, minN, maxN, maxRN)
		if err := (Challenge{N: n, R: r}).Validate(); err != nil {
			t.Fatalf("trial %d: ChooseSize(%d, %d, %d, %d, %d) = (%d, %d): %v", trial, power, target, minN, maxN, maxRN, n, r, err)
		}
		w := new(big.Int).Mul(new(big.Int).SetUint64(power), big.NewInt(1_000_000_000))
		w.Mul(w, new(big.Int).SetUint64(target))
		cost := func(n, r uint64) *big.Int {
			c := new(big.Int).SetUint64(2 * n * n * n)
			return c.Mul(c, new(big.Int).SetUint64(r))
		}
		if r > 1 && cost(uint64(n), uint64(r)).Cmp(w) > 0 {
			t.Fatalf("trial %d: 2n^3r = %v exceeds W = %v for (%d, %d)", trial, cost(uint64(n), uint64(r)), w, n, r)
		}
		// n is the largest allowed size within the budget (or the smallest allowed).
		lo := min(max((uint64(minN)+255)/256*256, MinN), MaxN)
		hi := max(min(uint64(maxN), MaxN)/256*256, lo)
		if uint64(n) < lo || uint64(n) > hi {
			t.Fatalf("trial %d: n = %d outside [%d, %d]", trial, n, lo, hi)
		}
		if uint64(n) > lo && cost(uint64(n), 1).Cmp(w) > 0 {
			t.Fatalf("trial %d: n = %d over budget", trial, n)
		}
		if uint64(n) < hi && cost(uint64(n)+256, 1).Cmp(w) <= 0 {
			t.Fatalf("trial %d: n = %d but n+256 fits the budget", trial, n)
		}
		// r + 1 would break the budget or a cap.
		r1 := uint64(r) + 1
		if cost(uint64(n), r1).Cmp(w) <= 0 && r1*uint64(n) <= maxRN && 4*uint64(n)*r1 < ExactLimit {
			t.Fatalf("trial %d: r = %d but r+1 fits (n = %d, maxRN = %d)", trial, r, n, maxRN)
		}
	}
}
