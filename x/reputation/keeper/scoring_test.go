package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/reputation/types"
)

// An epoch end scores every known node, max_updates_per_block (2) per EndBlock, in node
// id order, resuming from the cursor; each node gets its typed event; the epoch leaves the
// queue with EventEpochScored after the last node.
func TestEpochScoredInBatches(t *testing.T) {
	f := newFixture(t)
	for id := uint64(1); id <= 5; id++ {
		f.addNode(id, "alice")
	}
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 4, true))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 4, true))
	require.Empty(t, f.endBlock(), "nothing to score before an epoch ends")

	f.endEpoch()
	require.Equal(t, []uint64{1, 2}, f.endBlock())
	require.Equal(t, types.ScoringState{CurrentEpoch: 2, Pending: []uint64{1}, Cursor: 2}, f.scoring())
	require.Equal(t, uint64(1), f.score(2).LastEpoch)
	require.Equal(t, uint64(0), f.score(3).LastEpoch, "node 3 waits for the next block")
	f.requireInvariants()

	require.Equal(t, []uint64{3, 4}, f.endBlock())
	require.Empty(t, typedEvents[*types.EventEpochScored](t, f.ctx))
	require.Equal(t, "0.900000000000000000", f.score(4).Score.String())
	has, err := f.k.Counters.Has(f.ctx, collections.Join(uint64(1), uint64(4)))
	require.NoError(t, err)
	require.False(t, has, "scored counters are removed")

	require.Equal(t, []uint64{5}, f.endBlock())
	done := typedEvents[*types.EventEpochScored](t, f.ctx)
	require.Len(t, done, 1)
	require.Equal(t, uint64(1), done[0].Epoch)
	require.Equal(t, types.ScoringState{CurrentEpoch: 2}, f.scoring())
	require.Empty(t, f.endBlock())
	f.requireInvariants()
}

// The typed event carries the update.
func TestScoreUpdatedEvent(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 1, false))
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	f.endEpoch()
	f.endBlock()
	evs := typedEvents[*types.EventScoreUpdated](t, f.ctx)
	require.Len(t, evs, 1)
	ev := evs[0]
	require.Equal(t, uint64(1), ev.NodeId)
	require.Equal(t, operator("alice"), ev.Operator)
	require.Equal(t, uint64(1), ev.Epoch)
	require.Equal(t, "0.300000000000000000", ev.Score.String())
	require.Equal(t, "0.500000000000000000", ev.PrevScore.String())
	require.Equal(t, "0.000000000000000000", ev.Accuracy.String())
	require.Equal(t, "1.000000000000000000", ev.Responsiveness.String())
	require.Equal(t, types.SCORE_OUTCOME_MEASURED, ev.Outcome)
	require.False(t, ev.Eligible)
}

// An epoch that ends while the previous one is still being scored waits in the queue;
// the budget left after finishing one epoch goes on to the next; each epoch is scored
// from the scores the previous one left, with its own counters; events of the new
// current epoch are untouched; a node that became known after an epoch ended is not
// scored for it.
func TestSecondEpochEndIsQueued(t *testing.T) {
	f := newFixture(t)
	for id := uint64(1); id <= 5; id++ {
		f.addNode(id, "alice")
	}
	m := f.k.MarketHooks()
	// Epoch 1: node 1 honest.
	require.NoError(t, m.AfterTaskVerified(f.ctx, 1, true))
	require.NoError(t, m.AfterTaskAcked(f.ctx, 1, true))
	f.endEpoch()
	require.Equal(t, []uint64{1, 2}, f.endBlock())

	// Epoch 2: node 1 fails a verification; node 6 appears.
	require.NoError(t, m.AfterTaskVerified(f.ctx, 1, false))
	require.NoError(t, m.AfterTaskAcked(f.ctx, 1, true))
	f.addNode(6, "alice")
	require.Equal(t, uint64(2), f.score(6).FirstEpoch)
	f.endEpoch()
	require.Equal(t, types.ScoringState{CurrentEpoch: 3, Pending: []uint64{1, 2}, Cursor: 2}, f.scoring())
	// Epoch 3 has started counting.
	require.NoError(t, m.AfterTaskLapsed(f.ctx, 1, "deadline"))

	require.Equal(t, []uint64{3, 4}, f.endBlock())
	// Node 5 and 6 finish epoch 1 (6 was not known in it: skipped, but it takes a slot),
	// then nothing is left of the budget.
	require.Equal(t, []uint64{5}, f.endBlock())
	require.Equal(t, types.ScoringState{CurrentEpoch: 3, Pending: []uint64{2}}, f.scoring())
	require.Equal(t, uint64(0), f.score(6).LastEpoch)
	require.Len(t, typedEvents[*types.EventEpochScored](t, f.ctx), 1)

	require.Equal(t, []uint64{1, 2}, f.endBlock())
	require.Equal(t, []uint64{3, 4}, f.endBlock())
	require.Equal(t, []uint64{5, 6}, f.endBlock())
	require.Equal(t, types.ScoringState{CurrentEpoch: 3}, f.scoring())

	// Node 1: 0.9 after epoch 1, then A = 0, R = 1 on S_prev 0.9: 0.2 + 0.18 = 0.38.
	s := f.score(1)
	require.Equal(t, "0.380000000000000000", s.Score.String())
	require.Equal(t, "0.900000000000000000", s.PrevScore.String())
	require.Equal(t, uint64(2), s.LastEpoch)
	// Node 6 was scored for epoch 2 only (idle at initial).
	require.Equal(t, uint64(2), f.score(6).LastEpoch)
	hist, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 6})
	require.NoError(t, err)
	require.Len(t, hist.History, 1)
	// Epoch 3's lapse is still counting.
	require.Equal(t, uint64(1), f.counters(1).Lapses)
	f.requireInvariants()
}

// When one epoch finishes within a block, the rest of the budget goes to the next one.
func TestBudgetCarriesOverToTheNextEpoch(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxUpdatesPerBlock = 3 })
	for id := uint64(1); id <= 2; id++ {
		f.addNode(id, "alice")
	}
	f.endEpoch()
	f.endEpoch()
	require.Equal(t, []uint64{1, 2, 1}, f.endBlock())
	require.Equal(t, types.ScoringState{CurrentEpoch: 3, Pending: []uint64{2}, Cursor: 1}, f.scoring())
	require.Equal(t, []uint64{2}, f.endBlock())
	require.Equal(t, types.ScoringState{CurrentEpoch: 3}, f.scoring())
}

// A node whose update fails is taken out of the batch without stopping it: the epoch goes
// on and finishes without it, the node is retried 1, 2, 4 and 8 blocks later with its
// counters kept, and after its fifth failure it is resolved by dropping its counters of
// the epoch (it keeps its score), with an EventItemResolved.
func TestFailedNodeIsRetriedThenResolved(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	f.addNode(2, "alice")
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	// Corrupt node 1: its operator cannot be decoded, so its aggregate cannot move.
	bad := f.score(1)
	bad.Operator = "corrupt"
	require.NoError(t, f.k.Scores.Set(f.ctx, 1, bad))
	countersKept := func() bool {
		has, err := f.k.Counters.Has(f.ctx, collections.Join(uint64(1), uint64(1)))
		require.NoError(t, err)
		return has
	}

	f.endEpoch()
	require.Equal(t, []uint64{2}, f.endBlock())
	require.Equal(t, types.ScoringState{CurrentEpoch: 2}, f.scoring(), "the epoch finished without the failed node")
	require.Len(t, typedEvents[*blockhook.EventItemFailed](t, f.ctx), 1)
	require.True(t, countersKept(), "kept for the retries")
	failures, resolved := 1, 0
	for range 20 {
		require.Empty(t, f.endBlock())
		failures += len(typedEvents[*blockhook.EventItemFailed](t, f.ctx))
		for _, ev := range typedEvents[*blockhook.EventItemResolved](t, f.ctx) {
			resolved++
			require.Equal(t, uint64(1), ev.Id)
			require.Equal(t, "score", ev.Kind)
		}
	}
	require.Equal(t, blockhook.MaxAttempts, failures)
	require.Equal(t, 1, resolved)
	require.Equal(t, uint64(0), f.score(1).LastEpoch, "the node keeps its score")
	require.False(t, countersKept(), "nothing is left for the finished epoch")
	n, err := f.k.Retries.Attempt(f.ctx, blockhook.Item{Kind: "score", ID: 1, Sub: 1})
	require.NoError(t, err)
	require.Zero(t, n)
}

// A node that fails once and is fixed is scored for its epoch by the retry.
func TestFailedNodeIsScoredByItsRetry(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
	good := f.score(1)
	bad := good
	bad.Operator = "corrupt"
	require.NoError(t, f.k.Scores.Set(f.ctx, 1, bad))
	f.endEpoch()
	require.Empty(t, f.endBlock())
	require.NoError(t, f.k.Scores.Set(f.ctx, 1, good))
	require.Equal(t, []uint64{1}, f.endBlock(), "retried one block later")
	require.Equal(t, uint64(1), f.score(1).LastEpoch)
	has, err := f.k.Counters.Has(f.ctx, collections.Join(uint64(1), uint64(1)))
	require.NoError(t, err)
	require.False(t, has)
	f.requireInvariants()
}

// Over several epochs the cheater falls below min_score at the first epoch end and stays
// there, the honest node rises, the idle one stays at initial_score.
func TestCheaterHonestAndIdleOverEpochs(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "cheater")
	f.addNode(2, "honest")
	f.addNode(3, "idle")
	m := f.k.MarketHooks()
	wantCheater := []string{"0.3", "0.26", "0.252"}
	wantHonest := []string{"0.9", "0.98", "0.996"}
	for i := range wantCheater {
		require.NoError(t, m.AfterTaskAcked(f.ctx, 1, true))
		require.NoError(t, m.AfterTaskVerified(f.ctx, 1, false))
		require.NoError(t, m.AfterTaskAcked(f.ctx, 2, true))
		require.NoError(t, m.AfterTaskVerified(f.ctx, 2, true))
		require.NoError(t, m.AfterTaskSettled(f.ctx, 2, true))
		f.scoreAll()
		for id, want := range map[uint64]string{1: wantCheater[i], 2: wantHonest[i], 3: "0.5"} {
			got, eligible, err := f.k.Reputation(f.ctx, id)
			require.NoError(t, err)
			require.Equal(t, dec(want).String(), got.String(), "node %d epoch %d", id, i+1)
			require.Equal(t, id != 1, eligible, "node %d epoch %d", id, i+1)
		}
	}
	f.requireInvariants()
}

// History keeps the last history_length (3) epochs, newest first; after governance
// shortens it, the next update trims the excess.
func TestHistoryTrimmed(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	for range 5 {
		require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 1, true))
		f.scoreAll()
	}
	epochs := func() []uint64 {
		res, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 1})
		require.NoError(t, err)
		var out []uint64
		for _, h := range res.History {
			out = append(out, h.Epoch)
		}
		return out
	}
	require.Equal(t, []uint64{5, 4, 3}, epochs())

	p := testParams()
	p.HistoryLength = 1
	_, err := f.ms.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.env.Authority, Params: p})
	require.NoError(t, err)
	f.scoreAll()
	require.Equal(t, []uint64{6}, epochs())
	f.requireInvariants()
}
