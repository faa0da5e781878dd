package keeper_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/pocp"
	"github.com/flopsnet/flops/x/gfl/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// smallChallenges sizes challenges for tests: n = 256, a few rounds.
func smallChallenges(p *types.Params) {
	p.ChallengeTargetSeconds = 1
	p.ChallengeMaxN = 256
	p.ChallengeMaxRn = 1024
	p.ChallengeCommitTimeout = 60 * time.Second
	p.ChallengeRevealBlocks = 5
	p.ChallengeSamples = 16
}

// answer is a solved challenge: the answer matrix and its tree.
type answer struct {
	c    types.Challenge
	pc   pocp.Challenge
	s    []int32
	tree *pocp.Tree
}

func (f *fixture) solve(cid uint64, tamper func(s []int32)) answer {
	f.t.Helper()
	c, err := f.k.GetChallenge(f.ctx, cid)
	require.NoError(f.t, err)
	pc := pocp.Challenge{N: c.N, R: c.R}
	copy(pc.Seed[:], c.Seed)
	s, err := pocp.Solve(context.Background(), pc, 2)
	require.NoError(f.t, err)
	if tamper != nil {
		tamper(s)
	}
	return answer{c: c, pc: pc, s: s, tree: pocp.BuildTree(s, pc.N, 2)}
}

func (a answer) root() []byte { r := a.tree.Root(); return r[:] }

// proofs opens the chunks the chain samples from the hash of the block after the commit.
func (f *fixture) proofs(a answer) []types.ChunkProof {
	f.t.Helper()
	c, err := f.k.GetChallenge(f.ctx, a.c.Id)
	require.NoError(f.t, err)
	bv, err := f.qs.Beacon(f.ctx, &types.QueryBeaconRequest{Height: c.CommitHeight + 1})
	require.NoError(f.t, err)
	positions := pocp.SamplePositions(pocp.SampleSeed(bv.Value, c.Id), c.N, int(c.Samples))
	var out []types.ChunkProof
	for _, idx := range pocp.ChunksFor(c.N, positions) {
		p := a.tree.Prove(a.s, idx)
		tp := types.ChunkProof{Index: p.Index, Chunk: p.Chunk}
		for _, h := range p.Path {
			tp.Path = append(tp.Path, append([]byte(nil), h[:]...))
		}
		out = append(out, tp)
	}
	return out
}

func (f *fixture) commit(op string, a answer) {
	f.t.Helper()
	_, err := f.ms.CommitChallenge(f.ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: a.c.Id, Root: a.root()})
	require.NoError(f.t, err)
}

func (f *fixture) stats(node uint64) types.NodeEpochStats {
	res, err := f.qs.NodeStats(f.ctx, &types.QueryNodeStatsRequest{NodeId: node})
	require.NoError(f.t, err)
	return res.Stats
}

// An honest answer: issued at the registration block's end, committed 5 s later, revealed
// after the sampling block: PASSED with power 2 n^3 r / 5 s, and the next challenge waits
// for the interval.
func TestChallengeHonestAnswer(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	node := f.node(id)
	require.NotZero(t, node.OpenChallenge)
	a := f.solve(node.OpenChallenge, nil)
	require.Equal(t, uint32(256), a.c.N)
	wantN, wantR := pocp.ChooseSize(1, 1, 256, 256, 1024)
	require.Equal(t, wantN, a.c.N)
	require.Equal(t, wantR, a.c.R)

	f.next(5 * time.Second)
	res, err := f.ms.CommitChallenge(f.ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: a.c.Id, Root: a.root()})
	require.NoError(t, err)
	require.Equal(t, f.ctx.BlockHeight()+1, res.SampleHeight)
	require.Equal(t, f.ctx.BlockHeight()+6, res.RevealDeadlineHeight)

	f.blocks(2)
	rev, err := f.ms.RevealChallenge(f.ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: a.c.Id, Proofs: f.proofs(a)})
	require.NoError(t, err)
	want := pocp.PowerGFLOPS(a.c.N, a.c.R, 5000)
	require.Equal(t, want, rev.PowerGflops)
	require.True(t, f.hasEvent("flops.gfl.v1.EventChallengeFinished"))

	n := f.node(id)
	require.Zero(t, n.OpenChallenge)
	require.Equal(t, want, n.LastSampleGflops)
	st := f.stats(id)
	require.Equal(t, uint32(1), st.Issued)
	require.Equal(t, uint32(1), st.Passed)
	require.Equal(t, []uint64{want}, st.Samples)
	require.Equal(t, []types.ChallengeStatus{types.CHALLENGE_STATUS_PASSED}, f.hooks.finished)
	_, err = f.k.GetChallenge(f.ctx, a.c.Id)
	require.ErrorIs(t, err, types.ErrChallengeNotFound, "finished challenges leave state")
	require.Empty(t, f.coll.slashes)

	// the next challenge is due challenge_interval_blocks after the first
	require.Equal(t, int64(1)+int64(f.params().ChallengeIntervalBlocks), n.NextChallengeHeight)
}

// Every bad commitment is refused with its error and changes nothing.
func TestCommitRejections(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 4)
	bob := f.operator("bob", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	cid := f.node(id).OpenChallenge
	f.next(time.Second)
	cases := []struct {
		name string
		op   string
		cid  uint64
		root []byte
		err  error
	}{
		{"not the operator", bob, cid, make([]byte, 32), types.ErrNotOperator},
		{"bad signer address", "nope", cid, make([]byte, 32), types.ErrInvalidAddress},
		{"unknown challenge", op, 999, make([]byte, 32), types.ErrChallengeNotFound},
		{"root of 31 bytes", op, cid, make([]byte, 31), types.ErrInvalidRoot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.snapshot()
			err := f.tx(func(ctx sdk.Context) error {
				_, err := f.ms.CommitChallenge(ctx, &types.MsgCommitChallenge{Operator: tc.op, ChallengeId: tc.cid, Root: tc.root})
				return err
			})
			require.ErrorIs(t, err, tc.err)
			f.requireUnchanged(before)
		})
	}
	// committing twice
	_, err := f.ms.CommitChallenge(f.ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: cid, Root: make([]byte, 32)})
	require.NoError(t, err)
	_, err = f.ms.CommitChallenge(f.ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: cid, Root: make([]byte, 32)})
	require.ErrorIs(t, err, types.ErrChallengeClosed)
}

// A commitment after the commit deadline is refused; at that block's end the challenge is
// MISSED: a zero sample, no slash.
func TestCommitTooLateAndMissed(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	cid := f.node(id).OpenChallenge
	f.next(61 * time.Second)
	before := f.snapshot()
	err := f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.CommitChallenge(ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: cid, Root: make([]byte, 32)})
		return err
	})
	require.ErrorIs(t, err, types.ErrCommitTooLate)
	f.requireUnchanged(before)

	f.blocks(1)
	require.Zero(t, f.node(id).OpenChallenge)
	st := f.stats(id)
	require.Equal(t, uint32(1), st.Missed)
	require.Equal(t, uint32(0), st.Passed)
	require.Empty(t, f.coll.slashes, "a missed challenge is not slashed")
	require.Equal(t, []types.ChallengeStatus{types.CHALLENGE_STATUS_MISSED}, f.hooks.finished)
}

// Every bad reveal is refused with its error and changes nothing; the node may retry in
// the window, and a correct reveal then passes.
func TestRevealRejections(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 4)
	bob := f.operator("bob", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	a := f.solve(f.node(id).OpenChallenge, nil)
	f.next(2 * time.Second)
	f.commit(op, a)

	reveal := func(op string, proofs []types.ChunkProof) error {
		return f.tx(func(ctx sdk.Context) error {
			_, err := f.ms.RevealChallenge(ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: a.c.Id, Proofs: proofs})
			return err
		})
	}

	// in the commit block and in the sampling block the samples are not drawn yet
	before := f.snapshot()
	require.ErrorIs(t, reveal(op, nil), types.ErrRevealTooEarly)
	f.requireUnchanged(before)
	f.blocks(1)
	require.ErrorIs(t, reveal(op, nil), types.ErrRevealTooEarly)
	f.blocks(1)

	good := f.proofs(a)
	require.Greater(t, len(good), 1)
	clone := func() []types.ChunkProof {
		out := make([]types.ChunkProof, len(good))
		for i, p := range good {
			out[i] = types.ChunkProof{Index: p.Index, Chunk: append([]byte(nil), p.Chunk...)}
			for _, h := range p.Path {
				out[i].Path = append(out[i].Path, append([]byte(nil), h...))
			}
		}
		return out
	}
	cases := []struct {
		name   string
		op     string
		proofs func() []types.ChunkProof
		err    error
	}{
		{"not the operator", bob, clone, types.ErrNotOperator},
		// one sampled chunk left out
		{"missing chunk", op, func() []types.ChunkProof { return clone()[1:] }, types.ErrMalformedReveal},
		// a chunk sent twice
		{"duplicate chunk", op, func() []types.ChunkProof { p := clone(); return append(p, p[0]) }, types.ErrMalformedReveal},
		{"short chunk", op, func() []types.ChunkProof { p := clone(); p[0].Chunk = p[0].Chunk[:1000]; return p }, types.ErrMalformedReveal},
		{"31-byte path hash", op, func() []types.ChunkProof { p := clone(); p[0].Path[0] = p[0].Path[0][:31]; return p }, types.ErrMalformedReveal},
		// a flipped bit in a sibling hash: the path no longer leads to the root
		{"bad merkle proof", op, func() []types.ChunkProof { p := clone(); p[0].Path[0][0] ^= 1; return p }, types.ErrBadProof},
		// a changed entry in a chunk breaks its path as well
		{"tampered chunk", op, func() []types.ChunkProof { p := clone(); p[0].Chunk[0] ^= 1; return p }, types.ErrBadProof},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.snapshot()
			require.ErrorIs(t, reveal(tc.op, tc.proofs()), tc.err)
			f.requireUnchanged(before)
		})
	}
	require.NoError(t, reveal(op, good), "a correct reveal after failed attempts still passes")
	require.Equal(t, uint32(1), f.stats(id).Passed)
}

// A wrong answer committed honestly (its tree is built over the wrong matrix) is refused
// with ErrWrongEntry when a sample lands on it; the node cannot open its commitment
// otherwise, and at the reveal deadline the challenge FAILS: slash, jail, zero sample.
func TestWrongEntryFailsAtDeadline(t *testing.T) {
	f := newFixture(t, smallChallenges)
	op := f.operator("alice", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	cid := f.node(id).OpenChallenge
	f.next(2 * time.Second)

	// the cheater fills the whole answer with zeros (every sample is wrong)
	a := f.solve(cid, func(s []int32) { clear(s) })
	f.commit(op, a)
	f.blocks(2)
	before := f.snapshot()
	err := f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.RevealChallenge(ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: cid, Proofs: f.proofs(a)})
		return err
	})
	require.ErrorIs(t, err, types.ErrWrongEntry)
	f.requireUnchanged(before)

	f.blocks(5) // past the reveal deadline
	_, err = f.k.GetChallenge(f.ctx, cid)
	require.ErrorIs(t, err, types.ErrChallengeNotFound)
	st := f.stats(id)
	require.Equal(t, uint32(1), st.Failed)
	require.Empty(t, st.Samples)
	p := f.params()
	require.Equal(t, []slashCall{{op, p.WrongAnswerSlashPpm, sstypes.SLASH_REASON_WRONG_POCP, sstypes.SlashEvidence{NodeId: id, ChallengeId: cid}}}, f.coll.slashes)
	require.Len(t, f.coll.jails, 1)
	require.Equal(t, f.ctx.BlockTime().Add(-time.Second).Add(p.WrongAnswerJail), f.coll.jails[0].until)
	require.Equal(t, []types.ChallengeStatus{types.CHALLENGE_STATUS_FAILED}, f.hooks.finished)
}

// Expiry is bounded per block: with max_challenges_per_block = 1 and two reveals due at
// the same height, one fails at its deadline and the other one block later; a reveal in
// between is refused as too late.
func TestRevealTooLateAndBoundedExpiry(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { smallChallenges(p); p.MaxChallengesPerBlock = 1 })
	op := f.operator("alice", 8)
	n1 := f.register(op, spec("a", 1))
	n2 := f.register(op, spec("b", 1))
	f.blocks(2) // one challenge issued per block
	a1 := f.solve(f.node(n1).OpenChallenge, nil)
	a2 := f.solve(f.node(n2).OpenChallenge, nil)
	f.next(time.Second)
	f.commit(op, a1)
	f.commit(op, a2)
	deadline := f.ctx.BlockHeight() + 1 + int64(f.params().ChallengeRevealBlocks)
	for f.ctx.BlockHeight() <= deadline {
		f.next(time.Second)
	}
	// one of the two was concluded at the deadline, the other is still open
	open := 0
	for _, a := range []answer{a1, a2} {
		if _, err := f.k.GetChallenge(f.ctx, a.c.Id); err == nil {
			open++
			_, err := f.ms.RevealChallenge(f.ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: a.c.Id, Proofs: f.proofs(a)})
			require.ErrorIs(t, err, types.ErrRevealTooLate)
		}
	}
	require.Equal(t, 1, open)
	f.blocks(1)
	require.Len(t, f.coll.slashes, 2)
}

// Challenges follow the schedule: none is issued while one is open, and at most
// max_challenges_per_block nodes come due per block, the rest in the next blocks. The
// nodes of one operator are one round: the first due pulls in the others.
func TestChallengeScheduleBounded(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { smallChallenges(p); p.MaxChallengesPerBlock = 2; p.ChallengeIntervalBlocks = 3 })
	for _, tag := range []string{"a", "b", "c", "d", "e"} {
		f.register(f.operator(tag, 1), spec(tag, 1))
	}
	count := func(ids ...uint64) int {
		n := 0
		for _, id := range ids {
			if f.node(id).OpenChallenge != 0 {
				n++
			}
		}
		return n
	}
	all := []uint64{1, 2, 3, 4, 5}
	f.blocks(1)
	require.Equal(t, 2, count(all...))
	f.blocks(1)
	require.Equal(t, 4, count(all...))
	f.blocks(1)
	require.Equal(t, 5, count(all...))
	// node 1 is due again now but its challenge is still open: none is added
	first := f.node(1).OpenChallenge
	f.blocks(1)
	require.Equal(t, first, f.node(1).OpenChallenge)

	// one operator's five nodes: one due, all five challenged in the same block
	op := f.operator("alice", 5)
	var mine []uint64
	for _, tag := range []string{"f", "g", "h", "i", "j"} {
		mine = append(mine, f.register(op, spec(tag, 1)))
	}
	for i := 0; count(mine...) == 0; i++ {
		require.Less(t, i, 10)
		f.blocks(1)
	}
	require.Equal(t, 5, count(mine...), "the first due pulled in the others")
}
