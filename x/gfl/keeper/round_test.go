package keeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/gfl/pocp"
	"github.com/flopsnet/flops/x/gfl/types"
)

// reveal opens a committed answer and returns its power sample.
func (f *fixture) reveal(op string, a answer) uint64 {
	f.t.Helper()
	res, err := f.ms.RevealChallenge(f.ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: a.c.Id, Proofs: f.proofs(a)})
	require.NoError(f.t, err)
	return res.PowerGflops
}

// roundsHold checks the registered rounds and challenge-queue invariants (a round that
// pulls a node reschedules it: its earlier queue entry must go, TestAppImportExport found
// it left behind).
func (f *fixture) roundsHold() {
	f.t.Helper()
	msg, broken := f.k.RoundsInvariant(f.ctx)
	require.False(f.t, broken, msg)
	msg, broken = f.k.ChallengeQueueInvariant(f.ctx)
	require.False(f.t, broken, msg)
}

// The attack: one GPU registered as four nodes of one operator answers their challenges
// one after the other, 5 ms each (test-sized challenges). Measured per node (issue to own
// commitment), the four samples add up to about 1.8 times the GPU's speed (and 4 times
// with the challenges staggered). Measured as a round, each member's work counts over the
// 21 ms from the round's block to the last commitment: the samples add up to less than
// the one GPU's speed.
func TestAttackOneGPUAnswersForManyNodes(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("mallory", 4)
	var nodes []uint64
	for i := range 4 {
		nodes = append(nodes, f.register(op, spec(fmt.Sprintf("n%d", i), 1)))
	}
	f.next(time.Millisecond) // issued at the end of the registration block
	var answers []answer
	var round uint64
	for _, id := range nodes {
		n := f.node(id)
		require.NotZero(t, n.OpenChallenge, "node %d: every node of the operator is challenged in the same block", id)
		a := f.solve(n.OpenChallenge, nil)
		if round == 0 {
			round = a.c.RoundId
		}
		require.Equal(t, round, a.c.RoundId, "one round")
		answers = append(answers, a)
	}
	// the one GPU: each answer takes it 5 s, the next starts when the last is done
	for _, a := range answers {
		f.next(5 * time.Millisecond)
		f.commit(op, a)
	}
	f.blocks(2)
	f.roundsHold()
	var sum uint64
	for _, a := range answers {
		p := f.reveal(op, a)
		require.Equal(t, pocp.PowerGFLOPS(a.c.N, a.c.R, 21), p, "every member is measured to the round's last commitment")
		sum += p
	}
	oneGPU := pocp.PowerGFLOPS(answers[0].c.N, answers[0].c.R, 5)
	require.Greater(t, oneGPU, uint64(20))
	require.LessOrEqual(t, sum, oneGPU, "four nodes on one GPU are measured at one GPU's speed")
	require.GreaterOrEqual(t, sum, 4*pocp.PowerGFLOPS(answers[0].c.N, answers[0].c.R, 21), "and the work over the round's time")

	// the operator's nodes stay aligned: the next round takes all four in one block again
	_, err := f.qs.ChallengeRound(f.ctx, &types.QueryChallengeRoundRequest{RoundId: round})
	require.ErrorIs(t, err, types.ErrRoundNotFound, "a round whose members all concluded leaves state")
	f.roundsHold()
	due := f.node(nodes[0]).NextChallengeHeight
	for _, id := range nodes {
		require.Equal(t, due, f.node(id).NextChallengeHeight)
	}
}

// A node registered later does not get a round of its own: it opens one that pulls in
// the operator's idle nodes, so staggering registrations staggers nothing.
func TestAttackStaggeredNodesAnswerAlone(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("mallory", 4)
	first := f.register(op, spec("a", 1))
	f.blocks(1)
	a := f.solve(f.node(first).OpenChallenge, nil)
	f.next(5 * time.Second)
	f.commit(op, a)
	f.blocks(2)
	f.reveal(op, a)

	f.blocks(10)
	second := f.register(op, spec("b", 1))
	f.blocks(1)
	c1, c2 := f.node(first).OpenChallenge, f.node(second).OpenChallenge
	require.NotZero(t, c1, "the idle node is pulled into the new node's round")
	require.NotZero(t, c2)
	a1, a2 := f.solve(c1, nil), f.solve(c2, nil)
	require.Equal(t, a1.c.RoundId, a2.c.RoundId)
	require.Equal(t, f.node(first).NextChallengeHeight, f.node(second).NextChallengeHeight, "aligned from now on")
}

// A member that committed early waits for its round: its reveal is refused while a
// member is still to commit, its reveal deadline follows the round, and once the other
// member missed its commit deadline the round closes at the last commitment and the
// early member is measured to it.
func TestRoundRevealWaitsForClose(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 2)
	n1 := f.register(op, spec("a", 1))
	n2 := f.register(op, spec("b", 1))
	f.next(time.Millisecond)
	a1 := f.solve(f.node(n1).OpenChallenge, nil)
	f.next(3 * time.Millisecond)
	f.commit(op, a1)
	f.blocks(2)
	_, err := f.ms.RevealChallenge(f.ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: a1.c.Id, Proofs: f.proofs(a1)})
	require.ErrorIs(t, err, types.ErrRevealTooEarly)
	require.ErrorContains(t, err, "1 of the operator's challenges are not committed yet")

	// well past the early member's own reveal deadline, the round is still open
	deadline := a1.c.IssuedHeight + 2 + 1 + int64(f.params().ChallengeRevealBlocks)
	for f.ctx.BlockHeight() <= deadline+3 {
		f.next(time.Second)
	}
	c, err := f.k.GetChallenge(f.ctx, a1.c.Id)
	require.NoError(t, err, "not failed while its round is open")
	require.Greater(t, c.RevealDeadlineHeight, deadline)
	f.roundsHold()

	// the other member misses: the round closes
	for f.stats(n2).Missed == 0 {
		f.next(10 * time.Second)
	}
	res, err := f.qs.ChallengeRound(f.ctx, &types.QueryChallengeRoundRequest{RoundId: a1.c.RoundId})
	require.NoError(t, err)
	require.Zero(t, res.Round.Issued)
	require.NotZero(t, res.Round.ClosedHeight)
	require.Equal(t, uint32(1), res.Round.Committed)
	require.Equal(t, 4*time.Millisecond, res.Round.LastCommitTime.Sub(res.Round.StartTime), "a missed member does not stretch the round")
	p := f.reveal(op, a1)
	require.Equal(t, pocp.PowerGFLOPS(a1.c.N, a1.c.R, 4), p)
	require.Greater(t, p, uint64(0))
	require.Empty(t, f.coll.slashes)
}

// A round whose pull does not fit in one block's budget resumes from its cursor in the
// next blocks; every member measures from the round's first block.
func TestRoundPullResumesAcrossBlocks(t *testing.T) {
	const nodes = 400
	f := newFixture(t, func(p *types.Params) { smallChallenges(p); p.EndBlockGas = 10_000_000 })
	op := f.operator("alice", nodes)
	for i := range nodes {
		f.register(op, spec(fmt.Sprintf("n%d", i), 1))
	}
	issued := func() (n int, rounds map[uint64]bool) {
		rounds = map[uint64]bool{}
		for id := uint64(1); id <= nodes; id++ {
			if c := f.node(id).OpenChallenge; c != 0 {
				n++
				ch, err := f.k.GetChallenge(f.ctx, c)
				require.NoError(t, err)
				rounds[ch.RoundId] = true
			}
		}
		return n, rounds
	}
	f.blocks(1)
	first, _ := issued()
	require.Greater(t, first, 0)
	require.Less(t, first, nodes, "the budget cuts the pull short")
	for range 20 {
		if n, _ := issued(); n == nodes {
			break
		}
		f.blocks(1)
	}
	n, rounds := issued()
	require.Equal(t, nodes, n, "the pull resumed from its cursor")
	t.Logf("%d of %d nodes issued in the round's first block", first, nodes)
	require.Len(t, rounds, 1, "all in one round")
	f.roundsHold()

	// the invariant sees a round that miscounts its members
	for id := range rounds {
		r, err := f.k.Rounds.Get(f.ctx, id)
		require.NoError(t, err)
		r.Issued--
		require.NoError(t, f.k.Rounds.Set(f.ctx, id, r))
	}
	msg, broken := f.k.RoundsInvariant(f.ctx)
	require.True(t, broken)
	require.Contains(t, msg, "its challenges are")
}

// Rounds survive an export and import: the round and its members' challenges; a round
// whose counts disagree with its challenges is refused.
func TestRoundGenesisRoundTrip(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 2)
	n1 := f.register(op, spec("a", 1))
	f.register(op, spec("b", 1))
	f.blocks(1)
	a1 := f.solve(f.node(n1).OpenChallenge, nil)
	f.next(2 * time.Second)
	f.commit(op, a1)
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Len(t, exported.Rounds, 1)
	require.NoError(t, exported.Validate())

	bad := *exported
	bad.Rounds = []types.ChallengeRound{exported.Rounds[0]}
	bad.Rounds[0].Issued++
	require.ErrorContains(t, bad.Validate(), "its challenges say")

	g := newFixture(t, smallChallenges)
	g.ctx = g.ctx.WithBlockHeight(f.ctx.BlockHeight()).WithBlockTime(f.ctx.BlockTime())
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported.Rounds, again.Rounds)
	require.Equal(t, exported.Challenges, again.Challenges)
	require.Equal(t, exported.NextRoundId, again.NextRoundId)
}
