package types

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"
)

// TestQuoteWordsMatchBigIntegers: the scheduler's quote in machine words gives what the
// big-integer computation gives, wherever it answers, and leaves to it what does not fit
// (a quote above 64 bits, an ask above 64 bits, a negative duration, a zero share).
func TestQuoteWordsMatchBigIntegers(t *testing.T) {
	maxAsk := sdkmath.NewIntFromUint64(math.MaxUint64)
	cases := []struct {
		ask      sdkmath.Int
		num, den uint64
		d        time.Duration
		words    bool
	}{
		{sdkmath.NewInt(1_000_000), 1, 1, 10 * time.Minute, true},
		{sdkmath.NewInt(1_000_000), 1, 1, time.Nanosecond, true},             // rounds up to 1
		{sdkmath.NewInt(3_600_000_000), 1, 1, 1500 * time.Microsecond, true}, // exact
		{sdkmath.ZeroInt(), 8, 1, time.Hour, true},
		{sdkmath.NewInt(7), 3, 7, 0, true},
		{sdkmath.NewInt(7), 3, 7, time.Duration(math.MaxInt64), true},
		{maxAsk, 1, 1, time.Hour, true},              // exactly MaxUint64
		{maxAsk, 1, 1, time.Hour + 1, false},         // one above: big integers
		{maxAsk, 2, 1, time.Nanosecond, false},       // ask x GPUs above 64 bits
		{maxAsk.AddRaw(1), 1, 1, time.Second, false}, // the ask above 64 bits
		{sdkmath.NewInt(-5), 1, 1, time.Hour, false},
		{sdkmath.NewInt(5), 1, 1, -time.Hour, false},
		{sdkmath.NewInt(5), 1, 0, time.Hour, false},
		{sdkmath.NewInt(5), 1, math.MaxUint64, time.Hour, false}, // the unit above 64 bits
	}
	for _, c := range cases {
		q, ok := quoteWords(c.ask, c.num, c.den, c.d)
		require.Equal(t, c.words, ok, "%v x %d/%d for %v", c.ask, c.num, c.den, c.d)
		if ok {
			require.Equal(t, quoteBig(c.ask, c.num, c.den, c.d), sdkmath.NewIntFromUint64(q), "%v x %d/%d for %v", c.ask, c.num, c.den, c.d)
		}
		if c.den != 0 {
			require.Equal(t, quoteBig(c.ask, c.num, c.den, c.d), quoteShare(c.ask, c.num, c.den, c.d))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		ask := sdkmath.NewIntFromUint64(r.Uint64() >> r.UintN(64))
		num, den := uint64(r.UintN(9)), uint64(1+r.UintN(8))
		d := time.Duration(r.Int64() >> r.UintN(64))
		want := quoteBig(ask, num, den, d)
		if q, ok := quoteWords(ask, num, den, d); ok {
			require.Equal(t, want, sdkmath.NewIntFromUint64(q), "%v x %d/%d for %v", ask, num, den, d)
		} else {
			// left to big integers only when the quote or the ask for the GPUs does not fit
			// a word
			fits := want.IsUint64() && ask.MulRaw(int64(num)).IsUint64()
			require.False(t, fits, "%v x %d/%d for %v = %v", ask, num, den, d, want)
		}
		require.Equal(t, want, quoteShare(ask, num, den, d))
	}
}
