package types

import (
	"fmt"
	"math/big"

	sdkmath "cosmossdk.io/math"
)

// The reputation formula. At each epoch end, for every known node:
//
//	A = (tasks_verified_ok + challenges_passed) /
//	    (tasks_verified_ok + tasks_verified_failed + challenges_passed + challenges_failed + challenges_missed)
//	R = (acks_on_time + settled_on_time) /
//	    (acks_on_time + acks_late + lapses + settled_on_time + settled_late)
//	S = alpha*A + beta*R + gamma*S_prev
//
// When A (or R) has no event in the epoch, S_prev stands in for it, so a term that was not
// measured neither rewards nor punishes. When neither has an event the node was idle and
// its score decays towards initial_score:
//
//	S = S_prev + idle_decay*(initial_score - S_prev)
//
// Slashes and jails are never scored: what caused them was already counted here through
// its own module's hook (see EpochCounters).
//
// Arithmetic is LegacyDec (18 decimals), every quotient and product truncated towards zero,
// so the result is exact and the same on every machine; S is clamped to [0, 1].

// Weights are the formula's parameters (a subset of Params).
type Weights struct {
	Alpha, Beta, Gamma, InitialScore, IdleDecay sdkmath.LegacyDec
}

// Weights returns the formula's parameters.
func (p Params) Weights() Weights {
	return Weights{Alpha: p.Alpha, Beta: p.Beta, Gamma: p.Gamma, InitialScore: p.InitialScore, IdleDecay: p.IdleDecay}
}

// ScoreResult is one update of a node's score.
type ScoreResult struct {
	// Score is the new S in [0, 1].
	Score sdkmath.LegacyDec
	// Accuracy and Responsiveness are the A and R used (S_prev where not measured; both
	// S_prev when idle).
	Accuracy, Responsiveness sdkmath.LegacyDec
	// Outcome says which rule applied.
	Outcome ScoreOutcome
}

// AccuracyEvents returns the good and the total accuracy events.
func (c EpochCounters) AccuracyEvents() (good, total sdkmath.Int) {
	good = sum(c.TasksVerifiedOk, c.ChallengesPassed)
	total = good.Add(sum(c.TasksVerifiedFailed, c.ChallengesFailed, c.ChallengesMissed))
	return good, total
}

// ResponsivenessEvents returns the good and the total responsiveness events.
func (c EpochCounters) ResponsivenessEvents() (good, total sdkmath.Int) {
	good = sum(c.AcksOnTime, c.SettledOnTime)
	total = good.Add(sum(c.AcksLate, c.Lapses, c.SettledLate))
	return good, total
}

// Scored reports whether the counters hold any event that enters the score.
func (c EpochCounters) Scored() bool {
	_, a := c.AccuracyEvents()
	_, r := c.ResponsivenessEvents()
	return a.IsPositive() || r.IsPositive()
}

// Empty reports whether the counters hold no event at all.
func (c EpochCounters) Empty() bool {
	return !c.Scored() && c.Slashes == 0 && c.Jails == 0
}

// sum adds counters without overflow.
func sum(vs ...uint64) sdkmath.Int {
	s := sdkmath.ZeroInt()
	for _, v := range vs {
		s = s.Add(sdkmath.NewIntFromUint64(v))
	}
	return s
}

// ratio is good/total truncated to 18 decimals; total > 0.
func ratio(good, total sdkmath.Int) sdkmath.LegacyDec {
	return sdkmath.LegacyNewDecFromInt(good).QuoInt(total)
}

// ComputeScore applies the formula to a node whose score was prev and whose epoch events
// are c. A nil prev counts as InitialScore.
func ComputeScore(w Weights, prev sdkmath.LegacyDec, c EpochCounters) ScoreResult {
	if prev.IsNil() {
		prev = w.InitialScore
	}
	aGood, aTotal := c.AccuracyEvents()
	rGood, rTotal := c.ResponsivenessEvents()
	res := ScoreResult{Accuracy: prev, Responsiveness: prev}
	switch {
	case aTotal.IsPositive() && rTotal.IsPositive():
		res.Outcome = SCORE_OUTCOME_MEASURED
		res.Accuracy, res.Responsiveness = ratio(aGood, aTotal), ratio(rGood, rTotal)
	case aTotal.IsPositive():
		res.Outcome = SCORE_OUTCOME_ACCURACY_ONLY
		res.Accuracy = ratio(aGood, aTotal)
	case rTotal.IsPositive():
		res.Outcome = SCORE_OUTCOME_RESPONSIVENESS_ONLY
		res.Responsiveness = ratio(rGood, rTotal)
	default:
		res.Outcome = SCORE_OUTCOME_IDLE
		res.Score = Clamp(prev.Add(w.IdleDecay.MulTruncate(w.InitialScore.Sub(prev))))
		return res
	}
	s := w.Alpha.MulTruncate(res.Accuracy).
		Add(w.Beta.MulTruncate(res.Responsiveness)).
		Add(w.Gamma.MulTruncate(prev))
	res.Score = Clamp(s)
	return res
}

// Clamp bounds d to [0, 1].
func Clamp(d sdkmath.LegacyDec) sdkmath.LegacyDec {
	switch {
	case d.IsNegative():
		return sdkmath.LegacyZeroDec()
	case d.GT(sdkmath.LegacyOneDec()):
		return sdkmath.LegacyOneDec()
	}
	return d
}

// rankBase is 1 at LegacyDec's 18-decimal precision.
var rankBase = sdkmath.LegacyOneDec().BigInt()

// RankKey orders scores best first: 10^18 - score*10^18, so that ascending keys are
// descending scores (ties fall to the node id, the second part of the index key). The
// score must be in [0, 1].
func RankKey(score sdkmath.LegacyDec) (uint64, error) {
	if score.IsNil() || score.IsNegative() || score.GT(sdkmath.LegacyOneDec()) {
		return 0, fmt.Errorf("score %s: must be in [0, 1]", score)
	}
	return new(big.Int).Sub(rankBase, score.BigInt()).Uint64(), nil
}

// Eligible reports whether a score may get work and rewards: score >= min_score.
func (p Params) Eligible(score sdkmath.LegacyDec) bool {
	return score.GTE(p.MinScore)
}
