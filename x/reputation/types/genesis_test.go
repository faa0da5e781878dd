package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/reputation/types"
)

// validGenesis is a consistent mid-scoring state: epoch 2 pending with node 1 scored, node
// 2 not yet, epoch 3 counting.
func validGenesis() types.GenesisState {
	zero := sdkmath.LegacyZeroDec()
	op := keepertest.Addr("op")
	return types.GenesisState{
		Params:  types.DefaultParams(),
		Scoring: types.ScoringState{CurrentEpoch: 3, Pending: []uint64{2}, Cursor: 1},
		Scores: []types.NodeScore{
			{
				NodeId: 1, Operator: op, Score: dec("0.9"), Accuracy: dec("1"), Responsiveness: dec("1"),
				PrevScore: dec("0.5"), FirstEpoch: 1, LastEpoch: 2, Outcome: types.SCORE_OUTCOME_MEASURED,
			},
			{
				NodeId: 2, Operator: op, Score: dec("0.5"), Accuracy: zero, Responsiveness: zero,
				PrevScore: zero, FirstEpoch: 2,
			},
		},
		Counters: []types.EpochCounters{
			{NodeId: 2, Epoch: 2, AcksOnTime: 1},
			{NodeId: 1, Epoch: 3, TasksVerifiedOk: 1},
		},
		History: []types.ScoreRecord{
			{
				NodeId: 1, Epoch: 2, Score: dec("0.9"), Accuracy: dec("1"), Responsiveness: dec("1"), PrevScore: dec("0.5"),
				Outcome: types.SCORE_OUTCOME_MEASURED, Counters: types.EpochCounters{NodeId: 1, Epoch: 2, TasksVerifiedOk: 1, AcksOnTime: 1},
			},
		},
	}
}

// Every inconsistency is refused with ErrInvalidGenesis naming what is wrong; the valid
// state and the default pass.
func TestGenesisValidate(t *testing.T) {
	require.NoError(t, types.DefaultGenesisState().Validate())
	gs := validGenesis()
	require.NoError(t, gs.Validate())

	cases := []struct {
		name   string
		mutate func(gs *types.GenesisState)
		want   string
	}{
		{"epoch 0", func(gs *types.GenesisState) { gs.Scoring = types.ScoringState{} }, "current_epoch"},
		{"pending not before current", func(gs *types.GenesisState) { gs.Scoring.Pending = []uint64{3} }, "pending[0]"},
		{"pending not increasing", func(gs *types.GenesisState) { gs.Scoring.Pending = []uint64{2, 2} }, "pending[1]"},
		{"cursor without pending", func(gs *types.GenesisState) {
			gs.Scoring.Pending = nil
			gs.Counters = gs.Counters[1:]
		}, "cursor"},
		{"node 0", func(gs *types.GenesisState) { gs.Scores[1].NodeId = 0 }, "node_id"},
		{"duplicate node", func(gs *types.GenesisState) { gs.Scores[1].NodeId = 1 }, "duplicate"},
		{"bad operator", func(gs *types.GenesisState) { gs.Scores[0].Operator = "nobody" }, "operator"},
		{"score above 1", func(gs *types.GenesisState) { gs.Scores[0].Score = dec("1.1") }, "score"},
		{"nil accuracy", func(gs *types.GenesisState) { gs.Scores[0].Accuracy = sdkmath.LegacyDec{} }, "accuracy"},
		{"first epoch in the future", func(gs *types.GenesisState) { gs.Scores[1].FirstEpoch = 4 }, "first_epoch"},
		{"last epoch not ended", func(gs *types.GenesisState) { gs.Scores[0].LastEpoch = 3 }, "last_epoch"},
		{"outcome without update", func(gs *types.GenesisState) { gs.Scores[1].Outcome = types.SCORE_OUTCOME_IDLE }, "outcome"},
		{"counters of unknown node", func(gs *types.GenesisState) { gs.Counters[0].NodeId = 9 }, "no score record"},
		{"counters of a finished epoch", func(gs *types.GenesisState) { gs.Counters[0].Epoch = 1 }, "neither the current"},
		{"counters already scored", func(gs *types.GenesisState) { gs.Counters[0].NodeId = 1 }, "scored up to"},
		{"duplicate counters", func(gs *types.GenesisState) { gs.Counters[1] = gs.Counters[0] }, "duplicate"},
		{"history of unknown node", func(gs *types.GenesisState) { gs.History[0].NodeId = 9 }, "no score record"},
		{"history after last update", func(gs *types.GenesisState) {
			gs.History[0].Epoch = 3
			gs.History[0].Counters.Epoch = 3
		}, "last_epoch"},
		{"history counters of another epoch", func(gs *types.GenesisState) { gs.History[0].Counters.Epoch = 1 }, "counters"},
		{"history score out of range", func(gs *types.GenesisState) { gs.History[0].PrevScore = dec("-1") }, "prev_score"},
		{"history without outcome", func(gs *types.GenesisState) { gs.History[0].Outcome = 0 }, "outcome"},
		{"duplicate history", func(gs *types.GenesisState) { gs.History = append(gs.History, gs.History[0]) }, "duplicate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gs := validGenesis()
			tc.mutate(&gs)
			err := gs.Validate()
			require.ErrorIs(t, err, types.ErrInvalidGenesis)
			require.Contains(t, err.Error(), tc.want)
		})
	}

	bad := validGenesis()
	bad.Params.Alpha = dec("2")
	require.ErrorIs(t, bad.Validate(), types.ErrInvalidParams)
}
