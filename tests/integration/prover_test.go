package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gflkeeper "github.com/flopsnet/flops/x/gfl/keeper"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// prover answers its operator's PoCP challenges the way flops-worker does: it commits
// commitDelay blocks after the issue (so elapsed = commitDelay block intervals) and
// reveals as soon as the sampling block is committed. A stopped prover answers nothing.
type prover struct {
	t           *testing.T
	account     string
	commitDelay int64
	stopped     bool
	answers     map[uint64]provedAnswer
}

type provedAnswer struct {
	s    []int32
	tree *pocp.Tree
}

func newProver(t *testing.T, account string, commitDelay int64) *prover {
	return &prover{t: t, account: account, commitDelay: commitDelay, answers: map[uint64]provedAnswer{}}
}

// msgs returns what the prover sends in the next block, given the committed state.
func (p *prover) msgs(a *apptest.App) []sdk.Msg {
	if p.stopped {
		return nil
	}
	op := a.Account(p.account).String()
	res, err := gflkeeper.NewQueryServerImpl(a.GFLKeeper).OpenChallenges(a.Ctx(), &gfltypes.QueryOpenChallengesRequest{Operator: op})
	require.NoError(p.t, err)
	next := a.Height() + 1
	var out []sdk.Msg
	for _, c := range res.Challenges {
		pc := pocp.Challenge{N: c.N, R: c.R}
		copy(pc.Seed[:], c.Seed)
		switch {
		case c.Status == gfltypes.CHALLENGE_STATUS_ISSUED && next-c.IssuedHeight >= p.commitDelay:
			s, err := pocp.Solve(context.Background(), pc, 2)
			require.NoError(p.t, err)
			tree := pocp.BuildTree(s, c.N, 2)
			p.answers[c.Id] = provedAnswer{s: s, tree: tree}
			root := tree.Root()
			out = append(out, &gfltypes.MsgCommitChallenge{Operator: op, ChallengeId: c.Id, Root: root[:]})
		case c.Status == gfltypes.CHALLENGE_STATUS_COMMITTED && next > c.CommitHeight+1:
			ans, ok := p.answers[c.Id]
			require.True(p.t, ok)
			positions := pocp.SamplePositions(pocp.SampleSeed(a.BeaconValue(c.CommitHeight+1), c.Id), c.N, int(c.Samples))
			var proofs []gfltypes.ChunkProof
			for _, idx := range pocp.ChunksFor(c.N, positions) {
				pr := ans.tree.Prove(ans.s, idx)
				tp := gfltypes.ChunkProof{Index: pr.Index, Chunk: pr.Chunk}
				for _, h := range pr.Path {
					tp.Path = append(tp.Path, append([]byte(nil), h[:]...))
				}
				proofs = append(proofs, tp)
			}
			out = append(out, &gfltypes.MsgRevealChallenge{Operator: op, ChallengeId: c.Id, Proofs: proofs})
			delete(p.answers, c.Id)
		}
	}
	return out
}

// step runs one block with every prover's messages (one tx per prover) and checks that
// each tx succeeded.
func step(t *testing.T, a *apptest.App, provers ...*prover) {
	t.Helper()
	var txs [][]byte
	for _, p := range provers {
		if msgs := p.msgs(a); len(msgs) > 0 {
			txs = append(txs, a.SignTx(p.account, apptest.DefaultGas, msgs...))
		}
	}
	res := a.NextBlock(txs...)
	for i, r := range res.TxResults {
		require.Zerof(t, r.Code, "tx %d at height %d: %s", i, a.Height(), r.Log)
	}
}
