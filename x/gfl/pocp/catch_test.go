package pocp

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand"
	"testing"
)

// cheatTrial commits honestly to s (a possibly wrong answer), draws k positions from a
// sample seed fixed by trial, reveals them and reports whether the chain accepted.
func cheatTrial(t *testing.T, c Challenge, s []int32, k, trial int) bool {
	t.Helper()
	tree := BuildTree(s, c.N, 1)
	seed := SampleSeed(binary.BigEndian.AppendUint64([]byte("catch"), uint64(trial)), uint64(trial))
	positions := SamplePositions(seed, c.N, k)
	err := VerifyReveal(c, tree.Root(), positions, honestReveal(tree, s, c.N, positions))
	if err != nil && !errors.Is(err, ErrWrongEntry) {
		t.Fatalf("trial %d: an honest commitment to a wrong S must fail only on entries: %v", trial, err)
	}
	return err == nil
}

// within4Sigma reports whether hits out of trials is within 4 binomial standard
// deviations of trials*p.
func within4Sigma(hits, trials int, p float64) (bool, float64, float64) {
	mean := float64(trials) * p
	sd := math.Sqrt(float64(trials) * p * (1 - p))
	return math.Abs(float64(hits)-mean) <= 4*sd+1e-9, mean, sd
}

// TestCatchRateFraction: a prover that got a fraction e of the entries wrong, and
// commits honestly to its wrong S, passes with probability (1-e)^k (positions are drawn
// independently and uniformly, with repetition), measured over 2000 sample seeds per e.
func TestCatchRateFraction(t *testing.T) {
	c := testChallenge(256, 1, 9)
	honest, err := Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	const k, trials = 8, 2000
	total := len(honest)
	rng := rand.New(rand.NewSource(11))
	perm := make([]int, total)
	for x := range perm {
		perm[x] = x
	}
	s := make([]int32, total)
	for _, e := range []float64{0.05, 0.1, 0.3} {
		wrong := int(e * float64(total))
		passes := 0
		for trial := range trials {
			copy(s, honest)
			// A fresh random set of exactly `wrong` entries, each off by 1 or 2.
			for x := range wrong {
				y := x + rng.Intn(total-x)
				perm[x], perm[y] = perm[y], perm[x]
				s[perm[x]] += int32(1 + rng.Intn(2))
			}
			if cheatTrial(t, c, s, k, int(e*1000)*trials+trial) {
				passes++
			}
		}
		p := math.Pow(1-float64(wrong)/float64(total), k)
		ok, mean, sd := within4Sigma(passes, trials, p)
		t.Logf("e = %.2f: %d/%d passed, expected %.1f (sd %.1f)", e, passes, trials, mean, sd)
		if !ok {
			t.Errorf("e = %.2f: %d of %d cheaters passed, expected %.1f +- 4*%.1f", e, passes, trials, mean, sd)
		}
	}
}

// TestCatchRateSingleEntry: a prover that changed exactly one entry is caught exactly
// when that entry is sampled, so per challenge with probability 1-(1-1/n^2)^k ~ k/n^2.
func TestCatchRateSingleEntry(t *testing.T) {
	c := testChallenge(256, 1, 10)
	honest, err := Solve(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	const k, trials = 64, 4000
	n := int(c.N)
	rng := rand.New(rand.NewSource(12))
	s := make([]int32, len(honest))
	caught := 0
	for trial := range trials {
		copy(s, honest)
		x := rng.Intn(len(s))
		s[x] ^= 1 << uint(rng.Intn(31))
		seed := SampleSeed(binary.BigEndian.AppendUint64([]byte("catch"), uint64(trial)), uint64(trial))
		sampled := false
		for _, p := range SamplePositions(seed, c.N, k) {
			sampled = sampled || int(p.I)*n+int(p.J) == x
		}
		passed := cheatTrial(t, c, s, k, trial)
		if passed == sampled {
			t.Fatalf("trial %d: entry %d sampled = %v but passed = %v", trial, x, sampled, passed)
		}
		if !passed {
			caught++
		}
	}
	// An unlucky cheater whose one wrong entry is sampled is always caught.
	for trial := trials; trial < trials+20; trial++ {
		copy(s, honest)
		seed := SampleSeed(binary.BigEndian.AppendUint64([]byte("catch"), uint64(trial)), uint64(trial))
		p := SamplePositions(seed, c.N, k)[trial%k]
		s[int(p.I)*n+int(p.J)]--
		if cheatTrial(t, c, s, k, trial) {
			t.Fatalf("trial %d: wrong entry at sampled %v passed", trial, p)
		}
	}
	p := 1 - math.Pow(1-1/float64(n*n), k)
	ok, mean, sd := within4Sigma(caught, trials, p)
	t.Logf("one wrong entry: caught %d/%d, expected %.2f (sd %.2f)", caught, trials, mean, sd)
	if !ok {
		t.Errorf("caught %d of %d, expected %.2f +- 4*%.2f", caught, trials, mean, sd)
	}
}
