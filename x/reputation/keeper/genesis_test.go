package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/reputation"
	"github.com/flopsnet/flops/x/reputation/types"
)

// A state in the middle of scoring (an epoch pending with its cursor part-way, counters of
// the pending and the current epoch, history) exports to a valid genesis; importing it in
// a fresh store rebuilds the ranking and the operator aggregates and exports the same
// state; scoring then finishes the same way on both.
func TestGenesisRoundTrip(t *testing.T) {
	f := newFixture(t)
	m := f.k.MarketHooks()
	for id := uint64(1); id <= 5; id++ {
		f.addNode(id, []string{"alice", "bob"}[id%2])
		require.NoError(t, m.AfterTaskVerified(f.ctx, id, id%3 != 0))
	}
	f.scoreAll()
	for id := uint64(1); id <= 5; id++ {
		require.NoError(t, m.AfterTaskAcked(f.ctx, id, id != 2))
	}
	f.endEpoch()
	f.endBlock() // nodes 1 and 2 of epoch 2
	require.NoError(t, m.AfterTaskLapsed(f.ctx, 4, "heartbeat"))

	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, gs.Validate())
	require.Equal(t, types.ScoringState{CurrentEpoch: 3, Pending: []uint64{2}, Cursor: 2}, gs.Scoring)
	require.Len(t, gs.Scores, 5)
	require.Len(t, gs.Counters, 4) // nodes 3..5 for epoch 2, node 4 for epoch 3
	require.Len(t, gs.History, 7)

	// Through JSON, as a chain export does.
	bz := f.env.Codec.MustMarshalJSON(gs)
	require.NoError(t, reputation.AppModule{}.ValidateGenesis(f.env.Codec, nil, bz))
	var imported types.GenesisState
	require.NoError(t, f.env.Codec.UnmarshalJSON(bz, &imported))

	g := newFixture(t)
	g.gfl = f.gfl
	require.NoError(t, g.k.InitGenesis(g.ctx, &imported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, f.env.Codec.MustMarshalJSON(gs), g.env.Codec.MustMarshalJSON(again))
	g.requireInvariants()

	for _, x := range []*fixture{f, g} {
		ranked, err := x.qs.Ranked(x.ctx, nil)
		require.NoError(t, err)
		require.Equal(t, rankedIDs(t, mustRanked(t, f)), rankedIDs(t, ranked))
		for _, op := range []string{"alice", "bob"} {
			a, _, err := f.k.ProviderReputation(f.ctx, accAddr(op))
			require.NoError(t, err)
			b, _, err := x.k.ProviderReputation(x.ctx, accAddr(op))
			require.NoError(t, err)
			require.Equal(t, a.String(), b.String(), op)
		}
	}

	// Both finish the pending epoch identically.
	require.Equal(t, f.endBlock(), g.endBlock())
	require.Equal(t, f.endBlock(), g.endBlock())
	a, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	b, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, f.env.Codec.MustMarshalJSON(a), g.env.Codec.MustMarshalJSON(b))
	require.Empty(t, a.Scoring.Pending)
}

func mustRanked(t *testing.T, f *fixture) *types.QueryRankedResponse {
	t.Helper()
	res, err := f.qs.Ranked(f.ctx, nil)
	require.NoError(t, err)
	return res
}

// An invalid genesis is refused and stores nothing.
func TestInitGenesisRejectsInvalidState(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	gs.Scores[0].Score = dec("1.5")

	g := newFixture(t)
	require.ErrorIs(t, g.k.InitGenesis(g.ctx, gs), types.ErrInvalidGenesis)
	has, err := g.k.Scores.Has(g.ctx, 1)
	require.NoError(t, err)
	require.False(t, has)
}
