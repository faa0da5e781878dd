package executor

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	wpocp "github.com/flopsnet/flops/worker/pocp"
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
// MsgRevealResult and MsgRevealUnit (x/gfl/types.ChunkProofs).
func (g *GemmResult) Proofs(positions []pocp.Position) []gfltypes.ChunkProof {
	return gfltypes.ChunkProofs(g.Tree, g.Product, g.Challenge.N, positions)
}

// ProductFile is the BUILTIN gemm output: the product S, N x N int32 little-endian,
// row-major. Its pocp Merkle root (the 1 KiB chunks of exactly these bytes) is the task's
// result root, so the owner checks the file against the chain with pocp.BuildTree.
const ProductFile = "product.i32le"

// runGemm solves the challenge (with GemmSolver on the task's GPUs, or on Workers
// goroutines), commits to the product exactly as the chain checks it at reveal
// (docs/pocp.md sections 4 and 8), and writes the product for its owner.
func (e *Executor) runGemm(ctx context.Context, spec Spec, d taskDirs) (Result, error) {
	c := *spec.Gemm
	var s []int32
	var err error
	if e.opts.GemmSolver != nil {
		s, err = e.opts.GemmSolver.Solve(wpocp.OnDevices(ctx, spec.GPUs), c)
	} else {
		s, err = pocp.Solve(ctx, c, e.opts.Workers)
	}
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, context.Cause(ctx)
	}
	g := &GemmResult{Challenge: c, Product: s, Tree: pocp.BuildTree(s, c.N, e.opts.Workers)}
	res := Result{Root: g.Root(), OutputDir: d.output, Gemm: g}
	if err := os.WriteFile(filepath.Join(d.output, ProductFile), ProductBytes(s), 0o644); err != nil {
		return res, fmt.Errorf("gemm output: %w", err)
	}
	if res.Files, res.Logs, err = HashOutputs(ctx, d.output, e.opts.Log); err != nil {
		return res, err
	}
	return res, nil
}

// ProductBytes is the product in ProductFile's encoding.
func ProductBytes(s []int32) []byte {
	out := make([]byte, 4*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
	}
	return out
}

// ParseProduct reads ProductFile's encoding back (n x n entries).
func ParseProduct(b []byte, n uint32) ([]int32, error) {
	if uint64(len(b)) != 4*uint64(n)*uint64(n) {
		return nil, fmt.Errorf("gemm product: %d bytes, want 4 x %d x %d", len(b), n, n)
	}
	s := make([]int32, len(b)/4)
	for i := range s {
		s[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return s, nil
}
