package keeper_test

import (
	"testing"

	"cosmossdk.io/collections"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/reputation/types"
)

// rankScenario gives five nodes of alice the scores of one epoch with verifications
// only (R = S_prev = 0.5), so S = 0.6*A + 0.2: node 1 0.2, nodes 2 and 4 0.8, node 3 0.5,
// node 5 idle at 0.5.
func (f *fixture) rankScenario() {
	f.t.Helper()
	// node: (ok, failed).
	m := f.k.MarketHooks()
	for id, c := range map[uint64][2]int{1: {0, 1}, 2: {1, 0}, 3: {1, 1}, 4: {1, 0}, 5: {0, 0}} {
		f.addNode(id, "alice")
		for range c[0] {
			require.NoError(f.t, m.AfterTaskVerified(f.ctx, id, true))
		}
		for range c[1] {
			require.NoError(f.t, m.AfterTaskVerified(f.ctx, id, false))
		}
	}
	f.scoreAll()
}

func rankedIDs(t *testing.T, res *types.QueryRankedResponse) []uint64 {
	t.Helper()
	var out []uint64
	for _, s := range res.Scores {
		out = append(out, s.NodeId)
	}
	return out
}

// Ranked lists best first, ties by node id, and pages by key, by offset and in reverse.
func TestRankedQuery(t *testing.T) {
	f := newFixture(t)
	f.rankScenario()
	// Scores: 2 and 4: 0.8; 3 and 5: 0.5; 1: 0.2.
	res, err := f.qs.Ranked(f.ctx, &types.QueryRankedRequest{})
	require.NoError(t, err)
	require.Equal(t, []uint64{2, 4, 3, 5, 1}, rankedIDs(t, res))
	require.Equal(t, "0.800000000000000000", res.Scores[0].Score.String())

	page1, err := f.qs.Ranked(f.ctx, &types.QueryRankedRequest{Pagination: &query.PageRequest{Limit: 2, CountTotal: true}})
	require.NoError(t, err)
	require.Equal(t, []uint64{2, 4}, rankedIDs(t, page1))
	require.Equal(t, uint64(5), page1.Pagination.Total)
	require.NotEmpty(t, page1.Pagination.NextKey)
	page2, err := f.qs.Ranked(f.ctx, &types.QueryRankedRequest{Pagination: &query.PageRequest{Key: page1.Pagination.NextKey, Limit: 2}})
	require.NoError(t, err)
	require.Equal(t, []uint64{3, 5}, rankedIDs(t, page2))
	page3, err := f.qs.Ranked(f.ctx, &types.QueryRankedRequest{Pagination: &query.PageRequest{Key: page2.Pagination.NextKey, Limit: 2}})
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, rankedIDs(t, page3))
	require.Empty(t, page3.Pagination.NextKey)

	byOffset, err := f.qs.Ranked(f.ctx, &types.QueryRankedRequest{Pagination: &query.PageRequest{Offset: 3, Limit: 10}})
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 1}, rankedIDs(t, byOffset))
	worst, err := f.qs.Ranked(f.ctx, &types.QueryRankedRequest{Pagination: &query.PageRequest{Reverse: true, Limit: 2}})
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 5}, rankedIDs(t, worst))

	// A new score moves the node in the ranking.
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 1, true))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	f.scoreAll() // node 1: 0.6 + 0.2 + 0.2*0.2 = 0.84; nodes 2 and 4 decay to 0.77
	res, err = f.qs.Ranked(f.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 4, 3, 5}, rankedIDs(t, res))
	f.requireInvariants()
}

// History pages newest first by key; reverse gives oldest first.
func TestHistoryQueryPages(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.HistoryLength = 10 })
	f.addNode(1, "alice")
	f.addNode(2, "bob")
	for range 4 {
		f.scoreAll()
	}
	epochs := func(res *types.QueryHistoryResponse) []uint64 {
		var out []uint64
		for _, h := range res.History {
			require.Equal(t, uint64(1), h.NodeId)
			out = append(out, h.Epoch)
		}
		return out
	}
	p1, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 1, Pagination: &query.PageRequest{Limit: 3}})
	require.NoError(t, err)
	require.Equal(t, []uint64{4, 3, 2}, epochs(p1))
	p2, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 1, Pagination: &query.PageRequest{Limit: 3, Key: p1.Pagination.NextKey}})
	require.NoError(t, err)
	require.Equal(t, []uint64{1}, epochs(p2))
	oldest, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 1, Pagination: &query.PageRequest{Limit: 2, Reverse: true}})
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2}, epochs(oldest))
	none, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 3})
	require.NoError(t, err)
	require.Empty(t, none.History)
	_, err = f.qs.History(f.ctx, &types.QueryHistoryRequest{})
	require.ErrorIs(t, err, types.ErrInvalidRequest)
}

// Score shows the record, eligibility, the current epoch and its counters; an unknown
// node answers initial_score, eligible, known = false; node 0 is refused.
func TestScoreQuery(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 1, false))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	f.scoreAll()
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, false))

	res, err := f.qs.Score(f.ctx, &types.QueryScoreRequest{NodeId: 1})
	require.NoError(t, err)
	require.True(t, res.Known)
	require.False(t, res.Eligible)
	require.Equal(t, uint64(2), res.CurrentEpoch)
	require.Equal(t, "0.300000000000000000", res.Score.Score.String())
	require.Equal(t, "0.000000000000000000", res.Score.Accuracy.String())
	require.Equal(t, "1.000000000000000000", res.Score.Responsiveness.String())
	require.Equal(t, "0.500000000000000000", res.Score.PrevScore.String())
	require.Equal(t, uint64(1), res.Score.LastEpoch)
	require.Equal(t, types.EpochCounters{NodeId: 1, Epoch: 2, AcksLate: 1}, res.Counters)

	res, err = f.qs.Score(f.ctx, &types.QueryScoreRequest{NodeId: 42})
	require.NoError(t, err)
	require.False(t, res.Known)
	require.True(t, res.Eligible)
	require.Equal(t, "0.500000000000000000", res.Score.Score.String())
	require.Equal(t, types.EpochCounters{NodeId: 42, Epoch: 2}, res.Counters)

	_, err = f.qs.Score(f.ctx, &types.QueryScoreRequest{})
	require.ErrorIs(t, err, types.ErrInvalidRequest)
	_, err = f.qs.Score(f.ctx, nil)
	require.ErrorIs(t, err, types.ErrInvalidRequest)
}

// Reputation and ProviderReputation: a node's score and min_score eligibility (initial
// for an unknown node); an operator's mean over its nodes (initial when none), O(1) from
// the aggregate; the Provider query agrees; a bad address is refused.
func TestReputationAndProviderReputation(t *testing.T) {
	f := newFixture(t)
	f.rankScenario() // alice: nodes 1..5 scoring 0.2, 0.8, 0.5, 0.8, 0.5
	f.addNode(6, "bob")
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 6, false))
	f.addNode(7, "bob")
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 7, false))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 7, true))
	f.scoreAll() // alice's nodes are idle in this epoch and decay towards 0.5

	cases := []struct {
		id       uint64
		score    string
		eligible bool
	}{
		{1, "0.23", false}, // 0.2 + 0.1*(0.5-0.2)
		{2, "0.77", true},  // 0.8 + 0.1*(0.5-0.8)
		{3, "0.5", true},   // idle at initial
		{5, "0.5", true},   // idle at initial
		{6, "0.2", false},  // A = 0, R = S_prev 0.5: 0.1 + 0.1
		{7, "0.3", false},  // A = 0, R = 1: 0.2 + 0.1
		{99, "0.5", true},  // unknown: initial_score
	}
	for _, tc := range cases {
		score, eligible, err := f.k.Reputation(f.ctx, tc.id)
		require.NoError(t, err)
		require.Equal(t, dec(tc.score).String(), score.String(), "node %d", tc.id)
		require.Equal(t, tc.eligible, eligible, "node %d", tc.id)
	}

	// alice: (0.23 + 0.77 + 0.5 + 0.77 + 0.5) / 5 = 2.77 / 5 = 0.554.
	// bob: (0.2 + 0.3) / 2 = 0.25. carol: none, initial 0.5.
	for _, tc := range []struct {
		op       string
		score    string
		eligible bool
		nodes    uint64
	}{
		{"alice", "0.554", true, 5},
		{"bob", "0.25", false, 2},
		{"carol", "0.5", true, 0},
	} {
		score, eligible, err := f.k.ProviderReputation(f.ctx, accAddr(tc.op))
		require.NoError(t, err)
		require.Equal(t, dec(tc.score).String(), score.String(), tc.op)
		require.Equal(t, tc.eligible, eligible, tc.op)
		res, err := f.qs.Provider(f.ctx, &types.QueryProviderRequest{Operator: operator(tc.op)})
		require.NoError(t, err)
		require.Equal(t, score.String(), res.Score.String())
		require.Equal(t, tc.eligible, res.Eligible)
		require.Equal(t, tc.nodes, res.Nodes)
	}
	_, err := f.qs.Provider(f.ctx, &types.QueryProviderRequest{Operator: "nobody"})
	require.ErrorIs(t, err, types.ErrInvalidAddress)
	_, err = f.qs.Provider(f.ctx, &types.QueryProviderRequest{})
	require.ErrorIs(t, err, types.ErrInvalidAddress)

	// A higher min_score makes the same scores ineligible (initial_score goes with it: a
	// min_score above it would leave every new node without work).
	p := testParams()
	p.MinScore, p.InitialScore = dec("0.7"), dec("0.7")
	_, err = f.ms.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.env.Authority, Params: p})
	require.NoError(t, err)
	_, eligible, err := f.k.ProviderReputation(f.ctx, accAddr("alice"))
	require.NoError(t, err)
	require.False(t, eligible)
	_, eligible, err = f.k.Reputation(f.ctx, 2)
	require.NoError(t, err)
	require.True(t, eligible)
	f.requireInvariants()
}

// TestAttackFreshNodeEscapesLowScore: an operator whose node scored 0.3 registers a new
// node hoping for a clean initial_score of 0.5. A new node starts from its operator's
// standing (the mean of its scored nodes when below initial_score), both before it is
// tracked (what the scheduler reads) and once tracked; an operator without nodes, or a
// good one, starts at 0.5.
func TestAttackFreshNodeEscapesLowScore(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 1, false))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	f.scoreAll()
	require.Equal(t, "0.300000000000000000", f.score(1).Score.String())

	f.gflOnly(2, "alice") // registered in x/gfl, no record here yet
	score, eligible, err := f.k.Reputation(f.ctx, 2)
	require.NoError(t, err)
	require.Equal(t, "0.300000000000000000", score.String(), "the new node inherits its operator's standing")
	require.False(t, eligible)
	f.addNode(2, "alice")
	require.Equal(t, "0.300000000000000000", f.score(2).Score.String())

	f.gflOnly(3, "carol") // an operator with no record
	score, _, err = f.k.Reputation(f.ctx, 3)
	require.NoError(t, err)
	require.Equal(t, "0.500000000000000000", score.String())
	f.requireInvariants()
}

// A provider whose node earned a low score deletes it (deactivated, gone for good) and
// registers a new one: the low record stays as its operator's standing, so the new node
// starts low. A node with a good record is forgotten whole (score, history, counters).
func TestAttackDeletedNodeLaundersLowScore(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	f.addNode(2, "bob")
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 1, false))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 2, true))
	f.scoreAll()
	low := f.score(1).Score
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	require.True(t, low.LT(p.InitialScore))

	for _, id := range []uint64{1, 2} {
		node, err := f.gfl.GetNode(f.ctx, id)
		require.NoError(t, err)
		require.NoError(t, f.k.GFLHooks().AfterNodeDeleted(f.ctx, node))
		delete(f.gfl.nodes, id)
	}
	require.Equal(t, low.String(), f.score(1).Score.String(), "the low score stays")
	f.gflOnly(3, "alice")
	score, eligible, err := f.k.Reputation(f.ctx, 3)
	require.NoError(t, err)
	require.Equal(t, low.String(), score.String(), "a new node starts from the deleted node's standing")
	require.False(t, eligible)

	_, err = f.k.Scores.Get(f.ctx, 2)
	require.ErrorIs(t, err, collections.ErrNotFound, "a good record is forgotten")
	for _, id := range []uint64{1, 2} {
		it, err := f.k.History.Iterate(f.ctx, collections.NewPrefixedPairRange[uint64, uint64](id))
		require.NoError(t, err)
		keys, err := it.Keys()
		require.NoError(t, err)
		require.Empty(t, keys, "node %d's history is dropped", id)
	}
	f.requireInvariants()
}
