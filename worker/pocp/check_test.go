package pocp

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

func TestSpotCheck(t *testing.T) {
	c := testChallenge(256, 3, 11)
	right, err := gflpocp.Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := int(c.N)
	bound := int32(4 * c.N * c.R)
	cases := []struct {
		name   string
		mutate func(s []int32) []int32
		want   error
	}{
		// The right answer passes.
		{"right", func(s []int32) []int32 { return s }, nil},
		// Too few entries (a truncated copy).
		{"short", func(s []int32) []int32 { return s[:len(s)-1] }, ErrMalformedAnswer},
		// Each corner is always recomputed.
		{"corner 0 0", func(s []int32) []int32 { s[0]--; return s }, ErrWrongAnswer},
		{"corner 0 n-1", func(s []int32) []int32 { s[n-1]++; return s }, ErrWrongAnswer},
		{"corner n-1 0", func(s []int32) []int32 { s[(n-1)*n]++; return s }, ErrWrongAnswer},
		// An entry at the bound is legal as far as the scan goes (then recomputed).
		{"at the bound", func(s []int32) []int32 { s[n*n-1] = bound; return s }, ErrWrongAnswer},
		// One past the bound anywhere, positive or negative.
		{"over the bound", func(s []int32) []int32 { s[12345] = bound + 1; return s }, ErrWrongAnswer},
		{"under the bound", func(s []int32) []int32 { s[54321] = -bound - 1; return s }, ErrWrongAnswer},
		// A whole wrong row band (a broken tile) is caught by the random samples with
		// this generator; in general with probability 1 - (1 - 1/4)^44.
		{"wrong tile rows", func(s []int32) []int32 {
			for x := 64 * n; x < 128*n; x++ {
				s[x] = -s[x]
			}
			return s
		}, ErrWrongAnswer},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.mutate(slices.Clone(right))
			err := spotCheck(c, s, DefaultSpotChecks, rand.New(rand.NewPCG(1, 2)))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
