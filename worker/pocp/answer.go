package pocp

import (
	"context"
	"fmt"
	"time"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// Answer is a solved challenge with its commitment, kept until the reveal.
// Memory: 4*n^2 bytes for S plus about 64 bytes per leaf (n^2/4 bytes) for the tree.
type Answer struct {
	// Challenge is what was solved.
	Challenge gflpocp.Challenge
	// Root is the RFC 6962 root of S's chunks (docs/pocp.md section 4): what
	// MsgCommitChallenge commits.
	Root [32]byte
	// S is the answer, n*n int32, row-major.
	S []int32
	// Tree is the Merkle tree over S's chunks.
	Tree *gflpocp.Tree
	// Solver is the Name of the solver that produced S.
	Solver string
	// SolveTime and TreeTime are the wall-clock times of the solve and of the tree.
	SolveTime, TreeTime time.Duration
}

// Elapsed is the time from the start of the solve to a ready commitment.
func (a *Answer) Elapsed() time.Duration {
	return a.SolveTime + a.TreeTime
}

// Prepare solves c with solver and commits to the answer. It fails, with nothing to
// commit, if c is invalid (x/gfl/pocp.ErrBadSize), if the solver fails, if the solver's
// answer is not n*n entries (ErrMalformedAnswer) or if ctx ends. Building the tree costs
// n^2/256 leaf hashes on all cores and is not interruptible (about 0.1 s per 4 GiB of S
// per core).
func Prepare(ctx context.Context, solver Solver, c gflpocp.Challenge) (*Answer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	s, err := solver.Solve(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("solve n = %d, r = %d with %s: %w", c.N, c.R, solver.Name(), err)
	}
	solved := time.Now()
	if n := int(c.N); len(s) != n*n {
		return nil, fmt.Errorf("%s answered %d entries for n = %d, want %d: %w", solver.Name(), len(s), c.N, n*n, ErrMalformedAnswer)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("solve n = %d, r = %d with %s: %w", c.N, c.R, solver.Name(), context.Cause(ctx))
	}
	tree := gflpocp.BuildTree(s, c.N, 0)
	return &Answer{
		Challenge: c,
		Root:      tree.Root(),
		S:         s,
		Tree:      tree,
		Solver:    solver.Name(),
		SolveTime: solved.Sub(start),
		TreeTime:  time.Since(solved),
	}, nil
}

// Proofs is the reveal of the sampled positions in the chain's format
// (x/gfl/types.ChunkProofs).
func (a *Answer) Proofs(positions []gflpocp.Position) []gfltypes.ChunkProof {
	return gfltypes.ChunkProofs(a.Tree, a.S, a.Challenge.N, positions)
}
