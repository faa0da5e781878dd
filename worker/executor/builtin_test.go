package executor

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	wpocp "github.com/flopsnet/flops/worker/pocp"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// toPocp converts reveal proofs from the chain's format, as the keeper does.
func toPocp(t *testing.T, in []gfltypes.ChunkProof) []pocp.ChunkProof {
	out := make([]pocp.ChunkProof, len(in))
	for x, p := range in {
		out[x] = pocp.ChunkProof{Index: p.Index, Chunk: p.Chunk, Path: make([][32]byte, len(p.Path))}
		for y, h := range p.Path {
			require.Len(t, h, 32)
			copy(out[x].Path[y][:], h)
		}
	}
	return out
}

func gemmSpec(taskID uint64, c pocp.Challenge) Spec {
	return Spec{
		TaskID: taskID, JobID: 3, Index: 1,
		Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: c.N, GemmR: c.R},
		Gemm:    &c,
	}
}

// The gemm root is the pocp Merkle root of the exact product, and the proofs it opens
// for sampled positions pass the chain's VerifyReveal.
func TestGemmRootAndProofs(t *testing.T) {
	e := newTestExecutor(t, nil)
	for x, c := range []pocp.Challenge{
		{Seed: sha256.Sum256([]byte("task 1")), N: 256, R: 3},
		{Seed: sha256.Sum256([]byte("task 2")), N: 512, R: 1},
	} {
		res, err := e.Run(context.Background(), gemmSpec(uint64(70+x), c), Hooks{})
		require.NoError(t, err)
		require.NotNil(t, res.Gemm)
		want := pocp.BuildTree(pocp.ReferenceSolve(c), c.N, 1).Root()
		require.Equal(t, want, res.Root, "n = %d", c.N)
		// the product is the output, and its pocp root is the result root
		require.Len(t, res.Files, 1)
		require.Equal(t, ProductFile, res.Files[0].Path)
		bz, err := os.ReadFile(filepath.Join(res.OutputDir, ProductFile))
		require.NoError(t, err)
		s, err := ParseProduct(bz, c.N)
		require.NoError(t, err)
		require.Equal(t, want, pocp.BuildTree(s, c.N, 1).Root())
		_, err = ParseProduct(bz[1:], c.N)
		require.Error(t, err)

		positions := pocp.SamplePositions(sha256.Sum256([]byte("sample")), c.N, 24)
		proofs := res.Gemm.Proofs(positions)
		require.Len(t, proofs, len(pocp.ChunksFor(c.N, positions)))
		require.NoError(t, pocp.VerifyReveal(c, res.Root, positions, toPocp(t, proofs)))

		// A flipped entry is caught: the proofs carry the real product.
		bad := toPocp(t, proofs)
		bad[0].Chunk = append([]byte(nil), bad[0].Chunk...)
		bad[0].Chunk[5] ^= 1
		require.Error(t, pocp.VerifyReveal(c, res.Root, positions, bad))

		// Positions outside the product are ignored rather than panicking.
		require.Len(t, res.Gemm.Proofs([]pocp.Position{{I: c.N, J: 0}}), 0)
	}
}

// A gemm task refuses a challenge that is not the job's size, and stops when cancelled.
func TestGemmRefusals(t *testing.T) {
	e := newTestExecutor(t, nil)
	c := pocp.Challenge{Seed: sha256.Sum256([]byte("x")), N: 256, R: 1}
	spec := gemmSpec(80, c)
	spec.Builtin.GemmN = 512
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInvalidSpec)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Run(ctx, gemmSpec(81, c), Hooks{})
	require.ErrorIs(t, err, context.Canceled)
}

// refChecksum is docs/workloads.md section 4 written out naively.
func refChecksum(job uint64, shard uint32, n uint64, inputs [][]byte) string {
	h := sha256.New()
	h.Write([]byte("flops/checksum/v1"))
	h.Write(binary.BigEndian.AppendUint64(nil, job))
	h.Write(binary.BigEndian.AppendUint32(nil, shard))
	h.Write(binary.BigEndian.AppendUint64(nil, n))
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(inputs))))
	for _, in := range inputs {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(in))))
		h.Write(in)
	}
	for b, done := uint64(0), uint64(0); done < n; b++ {
		msg := []byte("flops/checksum/stream")
		msg = binary.BigEndian.AppendUint64(msg, job)
		msg = binary.BigEndian.AppendUint32(msg, shard)
		msg = binary.BigEndian.AppendUint64(msg, b)
		block := sha256.Sum256(msg)
		k := min(32, n-done)
		h.Write(block[:k])
		done += k
	}
	return hex.EncodeToString(h.Sum(nil))
}

func checksumSpec(taskID, job uint64, shard uint32, n uint64) Spec {
	return Spec{
		TaskID: taskID, JobID: job, Index: shard,
		Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinChecksum,
		Builtin: markettypes.BuiltinArgs{ChecksumBytes: n},
	}
}

// The checksum is the documented digest; replicas agree bit for bit (whatever their
// worker count) and another shard, job or size gives another root.
func TestChecksumDeterminism(t *testing.T) {
	const n = 5<<20 + 7 // several segment groups and a partial last block
	e := newTestExecutor(t, func(o *Options) { o.Workers = 2 })
	e4 := newTestExecutor(t, func(o *Options) { o.Workers = 3 })

	r1, err := e.Run(context.Background(), checksumSpec(90, 9, 4, n), Hooks{})
	require.NoError(t, err)
	r2, err := e4.Run(context.Background(), checksumSpec(91, 9, 4, n), Hooks{})
	require.NoError(t, err)
	require.Equal(t, r1.Root, r2.Root, "two replicas of a shard agree")
	require.Equal(t, r1.Files, r2.Files)

	out, err := os.ReadFile(filepath.Join(r1.OutputDir, ChecksumFile))
	require.NoError(t, err)
	require.Equal(t, refChecksum(9, 4, n, nil)+"\n", string(out))
	wantRoot, err := ManifestRoot([]OutputFile{{Path: ChecksumFile, Size: 65, SHA256: sha256Hex(out)}})
	require.NoError(t, err)
	require.Equal(t, wantRoot, r1.Root)

	for x, other := range []Spec{checksumSpec(92, 9, 5, n), checksumSpec(93, 10, 4, n), checksumSpec(94, 9, 4, n-1)} {
		r, err := e.Run(context.Background(), other, Hooks{})
		require.NoError(t, err)
		require.NotEqual(t, r1.Root, r.Root, "case %d", x)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Run(ctx, checksumSpec(95, 9, 4, MaxChecksumBytes), Hooks{})
	require.ErrorIs(t, err, context.Canceled)
}

// A job's inputs are hashed first, in job order.
func TestChecksumWithInputs(t *testing.T) {
	a, b := []byte("first input"), []byte("second")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/a" {
			_, _ = w.Write(a)
		} else {
			_, _ = w.Write(b)
		}
	}))
	defer srv.Close()
	e := newTestExecutor(t, nil)
	spec := checksumSpec(96, 1, 0, 100)
	spec.Inputs = []markettypes.Input{
		{Uri: srv.URL + "/a", Sha256: sha256Hex(a), Path: "a"},
		{Uri: srv.URL + "/b", Sha256: sha256Hex(b), Path: "b"},
	}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	out, err := os.ReadFile(filepath.Join(res.OutputDir, ChecksumFile))
	require.NoError(t, err)
	require.Equal(t, refChecksum(1, 0, 100, [][]byte{a, b})+"\n", string(out))

	spec.TaskID = 97
	spec.Inputs[0], spec.Inputs[1] = spec.Inputs[1], spec.Inputs[0]
	res2, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	require.NotEqual(t, res.Root, res2.Root, "input order matters")
}

// recordingSolver solves with x/gfl/pocp and records the devices each solve was given.
type recordingSolver struct{ devices [][]string }

func (r *recordingSolver) Name() string { return "recording" }
func (r *recordingSolver) Solve(ctx context.Context, c pocp.Challenge) ([]int32, error) {
	r.devices = append(r.devices, wpocp.DevicesOf(ctx))
	return pocp.Solve(ctx, c, 1)
}

// A gemm task runs on the worker's solver (the GPU solver where it has one), given the
// GPUs the chain assigned the task: its product and root are the same.
func TestGemmRunsOnTheSolverWithTheTasksGPUs(t *testing.T) {
	rec := &recordingSolver{}
	e := newTestExecutor(t, func(o *Options) { o.GemmSolver = rec })
	c := pocp.Challenge{Seed: sha256.Sum256([]byte("on the GPUs")), N: 256, R: 2}
	spec := gemmSpec(90, c)
	spec.GPUs = []string{"GPU-aa", "MIG-bb"}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	require.Equal(t, pocp.BuildTree(pocp.ReferenceSolve(c), c.N, 1).Root(), res.Root)
	require.Equal(t, [][]string{{"GPU-aa", "MIG-bb"}}, rec.devices)
}
