package executor

import (
	"context"

	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// GemmResult is the answer of a BUILTIN gemm task, kept until the reveal: the product S
// (N x N int32, row-major: N*N*4 bytes, 256 MiB for N = 8192) and its Merkle tree (about
// 64 bytes per 1 KiB chunk).
type GemmResult struct {
	Challenge pocp.Challenge
	Product   []int32
	Tree      *pocp.Tree
}

// Root is the pocp Merkle root of the product: the task's result root.
func (g *GemmResult) Root() [32]byte { return g.Tree.Root() }

// Proofs opens the chunks holding the sampled positions, in the chain's format for
// MsgRevealResult (and MsgRevealUnit): one proof per distinct chunk, in increasing chunk
// order, each with its RFC 6962 audit path. Positions outside the N x N product (which
// the chain never samples) are ignored.
func (g *GemmResult) Proofs(positions []pocp.Position) []gfltypes.ChunkProof {
	n := g.Challenge.N
	inside := make([]pocp.Position, 0, len(positions))
	for _, p := range positions {
		if p.I < n && p.J < n {
			inside = append(inside, p)
		}
	}
	chunks := pocp.ChunksFor(n, inside)
	out := make([]gfltypes.ChunkProof, len(chunks))
	for x, c := range chunks {
		p := g.Tree.Prove(g.Product, c)
		path := make([][]byte, len(p.Path))
		for y := range p.Path {
			path[y] = append([]byte(nil), p.Path[y][:]...)
		}
		out[x] = gfltypes.ChunkProof{Index: p.Index, Chunk: p.Chunk, Path: path}
	}
	return out
}

// runGemm solves the challenge on Workers goroutines and commits to the product exactly
// as the chain checks it at reveal (docs/pocp.md sections 4 and 8). It writes no output
// file: the product is revealed by sampled chunks, not published.
func (e *Executor) runGemm(ctx context.Context, spec Spec, d taskDirs) (Result, error) {
	c := *spec.Gemm
	s, err := pocp.Solve(ctx, c, e.opts.Workers)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, context.Cause(ctx)
	}
	g := &GemmResult{Challenge: c, Product: s, Tree: pocp.BuildTree(s, c.N, e.opts.Workers)}
	return Result{Root: g.Root(), OutputDir: d.output, Gemm: g}, nil
}
