package pocp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// toChain converts proofs from the chain's wire format the way x/gfl's keeper does before
// it calls VerifyReveal.
func toChain(t *testing.T, proofs []gfltypes.ChunkProof) []gflpocp.ChunkProof {
	t.Helper()
	out := make([]gflpocp.ChunkProof, len(proofs))
	for x, p := range proofs {
		out[x] = gflpocp.ChunkProof{Index: p.Index, Chunk: p.Chunk, Path: make([][32]byte, len(p.Path))}
		for h, b := range p.Path {
			if len(b) != 32 {
				t.Fatalf("proof %d: path hash %d of %d bytes", x, h, len(b))
			}
			copy(out[x].Path[h][:], b)
		}
	}
	return out
}

func TestPrepareAndProofsVerify(t *testing.T) {
	cases := []struct {
		name string
		n, r uint32
		k    int
	}{
		// 256 leaves (a power of two), many samples: chunks repeat.
		{"n256 k64", 256, 2, 64},
		// 2304 leaves, not a power of two: paths of differing lengths.
		{"n768 k32", 768, 1, 32},
		// One sample, one chunk.
		{"n512 k1", 512, 3, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testChallenge(tc.n, tc.r, 12)
			a, err := Prepare(context.Background(), NewGoSolver(0), c)
			if err != nil {
				t.Fatal(err)
			}
			if a.Challenge != c || !strings.HasPrefix(a.Solver, "go-cpu/") || a.SolveTime <= 0 || a.Elapsed() < a.SolveTime {
				t.Errorf("answer metadata %+v", a)
			}
			if want := gflpocp.BuildTree(gflpocp.ReferenceSolve(c), c.N, 1).Root(); a.Root != want {
				t.Fatalf("root %x, want the reference's %x", a.Root, want)
			}
			positions := gflpocp.SamplePositions(gflpocp.SampleSeed([]byte(tc.name), 42), c.N, tc.k)
			proofs := a.Proofs(positions)
			if len(proofs) != len(gflpocp.ChunksFor(c.N, positions)) {
				t.Fatalf("%d proofs for %d chunks", len(proofs), len(gflpocp.ChunksFor(c.N, positions)))
			}
			if err := gflpocp.VerifyReveal(c, a.Root, positions, toChain(t, proofs)); err != nil {
				t.Fatalf("reveal refused: %v", err)
			}
			// The proofs bind the root: a flipped byte of a chunk is a bad proof.
			bad := toChain(t, proofs)
			bad[0].Chunk = slices.Clone(bad[0].Chunk)
			bad[0].Chunk[5] ^= 1
			if err := gflpocp.VerifyReveal(c, a.Root, positions, bad); !errors.Is(err, gflpocp.ErrBadProof) {
				t.Fatalf("tampered chunk: err = %v, want ErrBadProof", err)
			}
		})
	}
}

func TestProofsEdgeCases(t *testing.T) {
	c := testChallenge(256, 1, 13)
	a, err := Prepare(context.Background(), NewGoSolver(0), c)
	if err != nil {
		t.Fatal(err)
	}
	// No position, no proof.
	if got := a.Proofs(nil); len(got) != 0 {
		t.Errorf("%d proofs for no position", len(got))
	}
	// Positions outside the matrix are skipped; two positions in one chunk give one proof,
	// and the order is by chunk.
	got := a.Proofs([]gflpocp.Position{{I: 9, J: 3}, {I: 256, J: 0}, {I: 2, J: 7}, {I: 2, J: 200}, {I: 0, J: 1000}})
	var chunks []uint64
	for _, p := range got {
		chunks = append(chunks, p.Index)
	}
	if !slices.Equal(chunks, []uint64{2, 9}) {
		t.Fatalf("proofs of chunks %v, want [2 9]", chunks)
	}
	for _, p := range got {
		if len(p.Chunk) != gflpocp.ChunkBytes || len(p.Path) != 8 {
			t.Errorf("chunk %d: %d bytes, path of %d", p.Index, len(p.Chunk), len(p.Path))
		}
	}
}

func TestPrepareErrors(t *testing.T) {
	ctx := context.Background()
	// An invalid challenge is refused before any solver runs.
	never := &stubSolver{name: "never", solve: func(context.Context, gflpocp.Challenge) ([]int32, error) { return nil, nil }}
	if _, err := Prepare(ctx, never, gflpocp.Challenge{N: 256, R: 1 << 14}); !errors.Is(err, gflpocp.ErrBadSize) || never.calls() != 0 {
		t.Errorf("4nr >= 2^24: err = %v, %d calls", err, never.calls())
	}
	// A solver answering the wrong number of entries commits nothing (BuildTree would
	// panic on it).
	short := &stubSolver{name: "short", solve: func(context.Context, gflpocp.Challenge) ([]int32, error) { return make([]int32, 10), nil }}
	if _, err := Prepare(ctx, short, testChallenge(256, 1, 14)); !errors.Is(err, ErrMalformedAnswer) {
		t.Errorf("short answer: err = %v", err)
	}
	// A solver error is returned wrapped.
	errBoom := errors.New("boom")
	failing := &stubSolver{name: "failing", solve: func(context.Context, gflpocp.Challenge) ([]int32, error) { return nil, errBoom }}
	if _, err := Prepare(ctx, failing, testChallenge(256, 1, 14)); !errors.Is(err, errBoom) {
		t.Errorf("solver error: err = %v", err)
	}
	// A context that ends during the solve stops the commitment even if the solver
	// answered.
	cctx, cancel := context.WithCancel(ctx)
	late := &stubSolver{name: "late", solve: func(_ context.Context, c gflpocp.Challenge) ([]int32, error) {
		cancel()
		return make([]int32, int(c.N)*int(c.N)), nil
	}}
	if _, err := Prepare(cctx, late, testChallenge(256, 1, 14)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}
