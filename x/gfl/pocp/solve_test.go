package pocp

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"sync/atomic"
	"testing"
)

func testChallenge(n, r uint32, tag byte) Challenge {
	c := Challenge{N: n, R: r}
	c.Seed = ChallengeSeed([]byte{tag, 0xAB}, uint64(n), uint64(r))
	return c
}

func TestSolveMatchesReference(t *testing.T) {
	cases := []struct {
		name    string
		n, r    uint32
		workers int
	}{
		// The smallest size, one round, one worker: the serial path.
		{"n256 r1 w1", 256, 1, 1},
		// Several rounds accumulate, and more goroutines than cores share the work.
		{"n256 r3 w3", 256, 3, 3},
		// 1024 leaves, pairs per row (256) not a multiple of a sept (7): padding.
		{"n512 r2 w2", 512, 2, 2},
		// 2304 leaves (not a power of two) and 384 pairs per row.
		{"n768 r1 w2", 768, 1, 2},
		// The largest r at n = 256 allowed by 4nr < 2^24 would be slow for the
		// reference; r = 5 checks the bias correction across rounds with odd r.
		{"n256 r5 w0", 256, 5, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testChallenge(tc.n, tc.r, 1)
			want := ReferenceSolve(c)
			got, err := Solve(context.Background(), c, tc.workers)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				for x := range want {
					if got[x] != want[x] {
						t.Fatalf("S[%d][%d] = %d, want %d", x/int(tc.n), x%int(tc.n), got[x], want[x])
					}
				}
			}
			// Entry, the chain's recomputation, agrees at random positions and at the
			// corners.
			rng := rand.New(rand.NewSource(int64(tc.n)*10 + int64(tc.r)))
			pos := []Position{{0, 0}, {0, tc.n - 1}, {tc.n - 1, 0}, {tc.n - 1, tc.n - 1}}
			for range 60 {
				pos = append(pos, Position{uint32(rng.Intn(int(tc.n))), uint32(rng.Intn(int(tc.n)))})
			}
			for _, p := range pos {
				if e, s := c.Entry(p.I, p.J), want[int(p.I)*int(tc.n)+int(p.J)]; e != s {
					t.Fatalf("Entry(%d, %d) = %d, S = %d", p.I, p.J, e, s)
				}
			}
		})
	}
}

// countdownCtx is a context that reports cancellation after its Err has been asked
// `left` times: it stops Solve at a chosen point without timing.
type countdownCtx struct {
	context.Context
	left atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestSolveRejectsAndCancels(t *testing.T) {
	// An invalid size is refused before any work.
	if _, err := Solve(context.Background(), Challenge{N: 300, R: 1}, 1); !errors.Is(err, ErrBadSize) {
		t.Fatalf("n = 300: err = %v, want ErrBadSize", err)
	}
	// A cancelled context stops the solver and its error says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, testChallenge(512, 2, 2), 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v, want context.Canceled", err)
	}
	// Cancellation in the middle of a round (after the round check and a few column
	// blocks) stops it too.
	cd := &countdownCtx{Context: context.Background()}
	cd.left.Store(5)
	if _, err := Solve(cd, testChallenge(512, 2, 2), 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled mid-round: err = %v, want context.Canceled", err)
	}
}
