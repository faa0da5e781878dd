package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/reputation/types"
)

var defaults = types.DefaultParams().Weights()

// Every case is computed by hand with the default weights (alpha 0.6, beta 0.2, gamma 0.2,
// initial 0.5, idle decay 0.1) unless it says otherwise.
func TestComputeScore(t *testing.T) {
	cases := []struct {
		name    string
		w       types.Weights
		prev    string
		c       types.EpochCounters
		score   string
		a, r    string
		outcome types.ScoreOutcome
	}{
		{
			// No event: no move from initial_score.
			name: "idle at initial stays", w: defaults, prev: "0.5",
			score: "0.5", a: "0.5", r: "0.5", outcome: types.SCORE_OUTCOME_IDLE,
		},
		{
			// 0.3 + 0.1*(0.5-0.3) = 0.32: a low score recovers slowly.
			name: "idle low decays up", w: defaults, prev: "0.3",
			score: "0.32", a: "0.3", r: "0.3", outcome: types.SCORE_OUTCOME_IDLE,
		},
		{
			// 0.9 + 0.1*(0.5-0.9) = 0.86: a high score fades without work.
			name: "idle high decays down", w: defaults, prev: "0.9",
			score: "0.86", a: "0.9", r: "0.9", outcome: types.SCORE_OUTCOME_IDLE,
		},
		{
			// Slashes and jails alone are not scored: same as idle.
			name: "slashes and jails only are idle", w: defaults, prev: "0.3",
			c:     types.EpochCounters{Slashes: 3, Jails: 1},
			score: "0.32", a: "0.3", r: "0.3", outcome: types.SCORE_OUTCOME_IDLE,
		},
		{
			// A = 3/4; R = S_prev = 0.5: 0.6*0.75 + 0.2*0.5 + 0.2*0.5 = 0.65.
			name: "only task verifications", w: defaults, prev: "0.5",
			c:     types.EpochCounters{TasksVerifiedOk: 3, TasksVerifiedFailed: 1},
			score: "0.65", a: "0.75", r: "0.5", outcome: types.SCORE_OUTCOME_ACCURACY_ONLY,
		},
		{
			// A = 1/(1+0+1) = 0.5; R = 0.8: 0.3 + 0.16 + 0.16 = 0.62.
			name: "only challenges", w: defaults, prev: "0.8",
			c:     types.EpochCounters{ChallengesPassed: 1, ChallengesMissed: 1},
			score: "0.62", a: "0.5", r: "0.8", outcome: types.SCORE_OUTCOME_ACCURACY_ONLY,
		},
		{
			// A = (1+1)/(1+1+1+1+0) = 0.5 over tasks and challenges together.
			name: "tasks and challenges share accuracy", w: defaults, prev: "0.5",
			c:     types.EpochCounters{TasksVerifiedOk: 1, TasksVerifiedFailed: 1, ChallengesPassed: 1, ChallengesFailed: 1},
			score: "0.5", a: "0.5", r: "0.5", outcome: types.SCORE_OUTCOME_ACCURACY_ONLY,
		},
		{
			// R = (1+1)/(1+1+1+1+0) = 0.5; A = 0.9: 0.54 + 0.1 + 0.18 = 0.82.
			name: "only responsiveness", w: defaults, prev: "0.9",
			c:     types.EpochCounters{AcksOnTime: 1, AcksLate: 1, Lapses: 1, SettledOnTime: 1},
			score: "0.82", a: "0.9", r: "0.5", outcome: types.SCORE_OUTCOME_RESPONSIVENESS_ONLY,
		},
		{
			// R = 0/(0+0+2+0+2) = 0: 0.6*0.5 + 0 + 0.1 = 0.4.
			name: "lapses and late settlements", w: defaults, prev: "0.5",
			c:     types.EpochCounters{Lapses: 2, SettledLate: 2},
			score: "0.4", a: "0.5", r: "0", outcome: types.SCORE_OUTCOME_RESPONSIVENESS_ONLY,
		},
		{
			// A = 2/3 truncated = 0.666666666666666666; 0.6*A = 0.3999999999999999996
			// truncated to 0.399999999999999999; + 0.2*1 + 0.2*0.5.
			name: "measured, truncated", w: defaults, prev: "0.5",
			c:     types.EpochCounters{TasksVerifiedOk: 2, TasksVerifiedFailed: 1, AcksOnTime: 2},
			score: "0.699999999999999999", a: "0.666666666666666666", r: "1", outcome: types.SCORE_OUTCOME_MEASURED,
		},
		{
			// A cheater caught in its first epoch: 0 + 0.2*1 + 0.2*0.5 = 0.3 < min 0.4.
			name: "cheater's first epoch", w: defaults, prev: "0.5",
			c:     types.EpochCounters{TasksVerifiedFailed: 4, AcksOnTime: 4},
			score: "0.3", a: "0", r: "1", outcome: types.SCORE_OUTCOME_MEASURED,
		},
		{
			// Slashes and jails next to scored events change nothing.
			name: "slashes beside scored events", w: defaults, prev: "0.5",
			c:     types.EpochCounters{TasksVerifiedFailed: 4, AcksOnTime: 4, Slashes: 4, Jails: 1},
			score: "0.3", a: "0", r: "1", outcome: types.SCORE_OUTCOME_MEASURED,
		},
		{
			// An unset previous score counts as initial_score.
			name: "nil prev is initial", w: defaults,
			c:     types.EpochCounters{TasksVerifiedOk: 1, AcksOnTime: 1},
			score: "0.9", a: "1", r: "1", outcome: types.SCORE_OUTCOME_MEASURED,
		},
		{
			// Weights summing to 2 (not valid params): 2 is clamped to 1.
			name: "clamped to 1",
			w: types.Weights{
				Alpha: dec("1"), Beta: dec("1"), Gamma: dec("0"), InitialScore: dec("0.5"), IdleDecay: dec("0.1"),
			},
			prev:  "0.5",
			c:     types.EpochCounters{TasksVerifiedOk: 1, AcksOnTime: 1},
			score: "1", a: "1", r: "1", outcome: types.SCORE_OUTCOME_MEASURED,
		},
		{
			// An out-of-range previous score: -0.5 + 0.1*(0.5+0.5) = -0.4, clamped to 0.
			name: "clamped to 0", w: defaults, prev: "-0.5",
			score: "0", a: "-0.5", r: "-0.5", outcome: types.SCORE_OUTCOME_IDLE,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := sdkmath.LegacyDec{}
			if tc.prev != "" {
				prev = dec(tc.prev)
			}
			got := types.ComputeScore(tc.w, prev, tc.c)
			require.Equal(t, dec(tc.score).String(), got.Score.String(), "score")
			require.Equal(t, dec(tc.a).String(), got.Accuracy.String(), "accuracy")
			require.Equal(t, dec(tc.r).String(), got.Responsiveness.String(), "responsiveness")
			require.Equal(t, tc.outcome, got.Outcome)
		})
	}
}

// scoreEpochs applies the same epoch n times from initial_score and returns every score.
func scoreEpochs(c types.EpochCounters, n int) []string {
	s := defaults.InitialScore
	var out []string
	for range n {
		s = types.ComputeScore(defaults, s, c).Score
		out = append(out, s.String())
	}
	return out
}

// A node that fails every verification but answers on time drops below min_score (0.4)
// in the first epoch it is caught and stays there, approaching beta/(1-gamma) = 0.25:
// 0.3, 0.26, 0.252, 0.2504, 0.25008.
func TestCheaterFallsBelowMinScoreAndStays(t *testing.T) {
	min := types.DefaultParams().MinScore
	cheater := types.EpochCounters{TasksVerifiedFailed: 5, ChallengesFailed: 1, AcksOnTime: 5}
	want := []string{"0.3", "0.26", "0.252", "0.2504", "0.25008"}
	got := scoreEpochs(cheater, len(want))
	for i := range want {
		require.Equal(t, dec(want[i]).String(), got[i], "epoch %d", i+1)
		require.True(t, dec(got[i]).LT(min), "epoch %d: %s must stay below min_score", i+1, got[i])
		require.True(t, dec(got[i]).GT(dec("0.25")), "epoch %d: the limit 0.25 is approached from above", i+1)
	}
}

// An honest, punctual node rises towards 1: 0.8 + 0.2*S_prev = 0.9, 0.98, 0.996, 0.9992.
func TestHonestNodeRises(t *testing.T) {
	honest := types.EpochCounters{TasksVerifiedOk: 3, ChallengesPassed: 1, AcksOnTime: 3, SettledOnTime: 3}
	want := []string{"0.9", "0.98", "0.996", "0.9992", "0.99984"}
	require.Equal(t, decStrings(want), scoreEpochs(honest, len(want)))
}

func decStrings(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = dec(s).String()
	}
	return out
}

// Rank keys sort best first and reject scores outside [0, 1].
func TestRankKey(t *testing.T) {
	var prev uint64
	for i, s := range []string{"1", "0.999999999999999999", "0.5", "0.000000000000000001", "0"} {
		k, err := types.RankKey(dec(s))
		require.NoError(t, err)
		if i > 0 {
			require.Greater(t, k, prev, "score %s must rank after the previous one", s)
		}
		prev = k
	}
	k, err := types.RankKey(dec("1"))
	require.NoError(t, err)
	require.Zero(t, k)
	for _, bad := range []sdkmath.LegacyDec{dec("1.000000000000000001"), dec("-0.1"), {}} {
		_, err := types.RankKey(bad)
		require.Error(t, err)
	}
}
