package keeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Every hook adds its event to the node's counters of the current epoch.
func TestHooksFeedCounters(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	node := f.gfl.nodes[1]
	m, g, s := f.k.MarketHooks(), f.k.GFLHooks(), f.k.StakingSlashHooks()

	require.NoError(t, m.AfterTaskAcked(f.ctx, 1, true))
	require.NoError(t, m.AfterTaskAcked(f.ctx, 1, true))
	require.NoError(t, m.AfterTaskAcked(f.ctx, 1, false))
	require.NoError(t, m.AfterTaskLapsed(f.ctx, 1, "heartbeat"))
	require.NoError(t, m.AfterTaskLapsed(f.ctx, 1, "reveal"))
	require.NoError(t, m.AfterTaskVerified(f.ctx, 1, true))
	require.NoError(t, m.AfterTaskVerified(f.ctx, 1, false))
	require.NoError(t, m.AfterTaskSettled(f.ctx, 1, true))
	require.NoError(t, m.AfterTaskSettled(f.ctx, 1, false))
	require.NoError(t, g.AfterChallengeFinished(f.ctx, node, 10, gfltypes.CHALLENGE_STATUS_PASSED))
	require.NoError(t, g.AfterChallengeFinished(f.ctx, node, 11, gfltypes.CHALLENGE_STATUS_FAILED))
	require.NoError(t, g.AfterChallengeFinished(f.ctx, node, 12, gfltypes.CHALLENGE_STATUS_MISSED))
	require.NoError(t, g.AfterChallengeFinished(f.ctx, node, 13, gfltypes.CHALLENGE_STATUS_COMMITTED)) // not an outcome
	require.NoError(t, s.AfterSlashed(f.ctx, sstypes.SlashRecord{Provider: node.Operator, Evidence: sstypes.SlashEvidence{NodeId: 1}}))
	require.NoError(t, s.AfterSlashed(f.ctx, sstypes.SlashRecord{Provider: node.Operator})) // names no node
	require.NoError(t, s.AfterJailed(f.ctx, accAddr("alice"), time.Time{}, sstypes.SlashEvidence{NodeId: 1, TaskId: 4}))
	require.NoError(t, s.AfterJailed(f.ctx, accAddr("alice"), time.Time{}, sstypes.SlashEvidence{}))

	require.Equal(t, types.EpochCounters{
		NodeId: 1, Epoch: 1,
		AcksOnTime: 2, AcksLate: 1, Lapses: 2, TasksVerifiedOk: 1, TasksVerifiedFailed: 1,
		SettledOnTime: 1, SettledLate: 1, ChallengesPassed: 1, ChallengesFailed: 1, ChallengesMissed: 1,
		Slashes: 1, Jails: 1,
	}, f.counters(1))
	f.requireInvariants()
}

// Slashes and jails are counted and shown but do not enter the score: a node punished
// for a wrong result scores exactly like one whose wrong result was only reported by
// AfterTaskVerified(false), and a node with only slashes decays as if idle.
func TestSlashesAndJailsDoNotEnterTheScore(t *testing.T) {
	f := newFixture(t)
	for id := uint64(1); id <= 4; id++ {
		f.addNode(id, "alice")
	}
	m, s := f.k.MarketHooks(), f.k.StakingSlashHooks()
	for _, id := range []uint64{1, 2} {
		require.NoError(t, m.AfterTaskAcked(f.ctx, id, true))
		require.NoError(t, m.AfterTaskVerified(f.ctx, id, false))
	}
	ev := func(id uint64) sstypes.SlashEvidence { return sstypes.SlashEvidence{NodeId: id} }
	require.NoError(t, s.AfterSlashed(f.ctx, sstypes.SlashRecord{Evidence: ev(2)}))
	require.NoError(t, s.AfterJailed(f.ctx, accAddr("alice"), time.Time{}, ev(2)))
	require.NoError(t, s.AfterSlashed(f.ctx, sstypes.SlashRecord{Evidence: ev(3)}))
	require.NoError(t, s.AfterJailed(f.ctx, accAddr("alice"), time.Time{}, ev(3)))

	f.scoreAll()
	require.Equal(t, "0.300000000000000000", f.score(1).Score.String())
	require.Equal(t, f.score(1).Score, f.score(2).Score, "the slash and jail of node 2 are not scored")
	require.Equal(t, f.score(4).Score, f.score(3).Score, "a node with only a slash and a jail is idle")
	require.Equal(t, types.SCORE_OUTCOME_IDLE, f.score(3).Outcome)

	// They are kept in the history, beside the scored events.
	res, err := f.qs.History(f.ctx, &types.QueryHistoryRequest{NodeId: 2})
	require.NoError(t, err)
	require.Len(t, res.History, 1)
	require.Equal(t, uint64(1), res.History[0].Counters.Slashes)
	require.Equal(t, uint64(1), res.History[0].Counters.Jails)
}

// A node first seen through x/market gets a record at initial_score with its operator
// from x/gfl; x/gfl's AfterNodeChanged creates one too, and moves the node's score to a
// new operator's aggregate.
func TestNodesBecomeKnown(t *testing.T) {
	f := newFixture(t)
	f.gflOnly(7, "bob")
	require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 7, true))
	s := f.score(7)
	require.Equal(t, operator("bob"), s.Operator)
	require.Equal(t, "0.500000000000000000", s.Score.String())
	require.Equal(t, uint64(1), s.FirstEpoch)
	require.Len(t, typedEvents[*types.EventNodeTracked](t, f.ctx), 1)

	f.addNode(8, "carol")
	require.Equal(t, operator("carol"), f.score(8).Operator)
	// Announcing it again changes nothing.
	require.NoError(t, f.k.GFLHooks().AfterNodeChanged(f.ctx, f.gfl.nodes[8]))
	require.Len(t, typedEvents[*types.EventNodeTracked](t, f.ctx), 2)

	moved := gfltypes.Node{Id: 8, Operator: operator("bob")}
	require.NoError(t, f.k.GFLHooks().AfterNodeChanged(f.ctx, moved))
	require.Equal(t, operator("bob"), f.score(8).Operator)
	require.Len(t, typedEvents[*types.EventOperatorChanged](t, f.ctx), 1)
	res, err := f.qs.Provider(f.ctx, &types.QueryProviderRequest{Operator: operator("bob")})
	require.NoError(t, err)
	require.Equal(t, uint64(2), res.Nodes)
	res, err = f.qs.Provider(f.ctx, &types.QueryProviderRequest{Operator: operator("carol")})
	require.NoError(t, err)
	require.Zero(t, res.Nodes)
	require.NoError(t, f.k.GFLHooks().BeforeNodeChange(f.ctx, moved, nil))
	f.requireInvariants()
}

// A hook that cannot record its event returns an error, never panics, and writes
// nothing: an event for a node x/gfl does not know, a broken (panicking) x/gfl, an
// operator that is not an address. Its caller decides what the failure does (x/market,
// x/gfl and x/staking-slash fail the step). Outside a block or a tx there is nothing to
// record into: no error.
func TestHooksFailAtomically(t *testing.T) {
	f := newFixture(t)
	m := f.k.MarketHooks()
	require.Error(t, m.AfterTaskVerified(f.ctx, 99, false), "a node x/gfl does not know")
	f.gfl.panics = true
	f.gflOnly(5, "dave")
	var err error
	require.NotPanics(t, func() { err = m.AfterTaskAcked(f.ctx, 5, true) })
	require.ErrorContains(t, err, "panic: gfl is broken")
	require.NotPanics(t, func() {
		require.NoError(t, m.AfterTaskAcked(context.Background(), 5, true))
		require.NoError(t, f.k.EpochHooks().AfterEpochEnd(context.Background(), epochID, 1))
		require.NoError(t, f.k.StakingSlashHooks().AfterSlashed(context.Background(), sstypes.SlashRecord{Evidence: sstypes.SlashEvidence{NodeId: 5}}))
	})
	require.NotPanics(t, func() {
		err = f.k.GFLHooks().AfterNodeChanged(f.ctx, gfltypes.Node{Id: 6, Operator: "not-an-address"})
	})
	require.Error(t, err, "an operator that is not an address")
	for _, id := range []uint64{5, 6, 99} {
		has, err := f.k.Scores.Has(f.ctx, id)
		require.NoError(t, err)
		require.False(t, has, "node %d", id)
	}
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Empty(t, gs.Scores)
	require.Empty(t, gs.Counters)
	require.Equal(t, uint64(1), gs.Scoring.CurrentEpoch)
	f.requireInvariants()
}

// Running out of gas inside a hook is the caller's tx running out of gas: the panic goes
// on to the SDK (which fails the tx), and nothing of the hook is written.
func TestHookOutOfGasFailsTheTx(t *testing.T) {
	f := newFixture(t)
	f.addNode(1, "alice")
	ctx := f.ctx.WithGasMeter(storetypes.NewGasMeter(1))
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		require.NoError(t, f.k.MarketHooks().AfterTaskVerified(ctx, 1, false))
	}()
	require.IsType(t, storetypes.ErrorOutOfGas{}, recovered)
	require.Equal(t, types.EpochCounters{NodeId: 1, Epoch: 1}, f.counters(1))
}

// Only the params' epoch queues scoring.
func TestOtherEpochsAreIgnored(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.k.EpochHooks().BeforeEpochStart(f.ctx, epochID, 1))
	require.NoError(t, f.k.EpochHooks().AfterEpochEnd(f.ctx, "day", 3))
	require.Equal(t, types.ScoringState{CurrentEpoch: 1}, f.scoring())
	f.endEpoch()
	require.Equal(t, uint64(2), f.scoring().CurrentEpoch)
	require.Equal(t, []uint64{1}, f.scoring().Pending)
	evs := typedEvents[*types.EventEpochQueued](t, f.ctx)
	require.Len(t, evs, 1)
	require.Equal(t, uint64(1), evs[0].Epoch)
}
