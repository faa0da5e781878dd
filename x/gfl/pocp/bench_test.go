package pocp

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
)

// sparseTree is an RFC 6962 tree of leafCount leaves in which only the leaves in real
// (sorted chunk indices) are known; every subtree without a real leaf hashes to a fixed
// placeholder. It stands in for the commitment to an answer too large to compute
// (n = 65536 has 2^24 leaves and 16 GiB of S): proofs of the real leaves verify against
// its root exactly as they would against a true root.
type sparseTree struct {
	leafCount uint64
	real      []uint64
	chunks    map[uint64][]byte
	memo      map[[2]uint64][32]byte
}

var placeholder = sha256.Sum256([]byte("pocp/bench/placeholder subtree"))

func newSparseTree(leafCount uint64, chunks map[uint64][]byte) *sparseTree {
	st := &sparseTree{leafCount: leafCount, chunks: chunks, memo: map[[2]uint64][32]byte{}}
	for x := range chunks {
		st.real = append(st.real, x)
	}
	slices.Sort(st.real)
	return st
}

// split is RFC 6962's k: the largest power of two below size (size >= 2).
func split(size uint64) uint64 {
	k := uint64(1)
	for 2*k < size {
		k *= 2
	}
	return k
}

func (st *sparseTree) hash(lo, hi uint64) [32]byte {
	x, _ := slices.BinarySearch(st.real, lo)
	if x == len(st.real) || st.real[x] >= hi {
		return placeholder
	}
	if hi-lo == 1 {
		return LeafHash(st.chunks[lo])
	}
	if h, ok := st.memo[[2]uint64{lo, hi}]; ok {
		return h
	}
	k := split(hi - lo)
	h := NodeHash(st.hash(lo, lo+k), st.hash(lo+k, hi))
	st.memo[[2]uint64{lo, hi}] = h
	return h
}

func (st *sparseTree) root() [32]byte { return st.hash(0, st.leafCount) }

func (st *sparseTree) path(m, lo, hi uint64) [][32]byte {
	if hi-lo == 1 {
		return nil
	}
	k := split(hi - lo)
	if m < lo+k {
		return append(st.path(m, lo, lo+k), st.hash(lo+k, hi))
	}
	return append(st.path(m, lo+k, hi), st.hash(lo, lo+k))
}

func (st *sparseTree) prove(m uint64) ChunkProof {
	return ChunkProof{Index: m, Chunk: st.chunks[m], Path: st.path(m, 0, st.leafCount)}
}

// sparseReveal builds, for challenge c and k positions drawn from a fixed sample seed,
// a root and a reveal that VerifyReveal accepts: the sampled entries are the true ones
// (from Entry), every other entry of the revealed chunks is zero.
func sparseReveal(tb testing.TB, c Challenge, k int) ([32]byte, []Position, []ChunkProof) {
	positions := SamplePositions(SampleSeed([]byte("bench block"), uint64(c.N)), c.N, k)
	chunks := map[uint64][]byte{}
	for _, p := range positions {
		x := ChunkIndex(c.N, p)
		if chunks[x] == nil {
			chunks[x] = make([]byte, ChunkBytes)
		}
		binary.LittleEndian.PutUint32(chunks[x][EntryOffset(p):], uint32(c.Entry(p.I, p.J)))
	}
	st := newSparseTree(c.LeafCount(), chunks)
	var proofs []ChunkProof
	for _, x := range ChunksFor(c.N, positions) {
		proofs = append(proofs, st.prove(x))
	}
	root := st.root()
	if err := VerifyReveal(c, root, positions, proofs); err != nil {
		tb.Fatalf("sparse reveal for n = %d, r = %d: %v", c.N, c.R, err)
	}
	return root, positions, proofs
}

// maxR is the largest r with 4*n*r < 2^24.
func maxR(n uint32) uint32 { return (ExactLimit - 1) / (4 * n) }

// TestSparseRevealMatchesTree: on a size small enough to solve, the sparse tree's proofs
// of real leaves verify against its root and its root equals the true tree's when every
// leaf is real.
func TestSparseRevealMatchesTree(t *testing.T) {
	c := testChallenge(256, 1, 14)
	s := ReferenceSolve(c)
	all := map[uint64][]byte{}
	for x := range c.LeafCount() {
		all[x] = EncodeChunk(s, c.N, x)
	}
	if got, want := newSparseTree(c.LeafCount(), all).root(), BuildTree(s, c.N, 1).Root(); got != want {
		t.Fatalf("full sparse root %x != tree root %x", got, want)
	}
	sparseReveal(t, c, 32)
}

// BenchmarkVerifyReveal is the chain's cost of one reveal at k = 32: VerifyTerms
// multiply-adds (reported as terms/op) plus about 32*25 hashes.
func BenchmarkVerifyReveal(b *testing.B) {
	const k = 32
	for _, n := range []uint32{4096, 16384, 65536} {
		for _, r := range []uint32{1, maxR(n)} {
			c := testChallenge(n, r, 15)
			b.Run(fmt.Sprintf("n=%d/r=%d", n, r), func(b *testing.B) {
				root, positions, proofs := sparseReveal(b, c, k)
				for b.Loop() {
					if err := VerifyReveal(c, root, positions, proofs); err != nil {
						b.Fatal(err)
					}
				}
				terms := VerifyTerms(c, k)
				b.ReportMetric(float64(terms), "terms/op")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(terms), "ns/term")
			})
		}
	}
}

// BenchmarkEntry is the recomputation of one sampled entry: r*n multiply-adds.
func BenchmarkEntry(b *testing.B) {
	for _, n := range []uint32{4096, 65536} {
		for _, r := range []uint32{1, maxR(n)} {
			c := testChallenge(n, r, 16)
			b.Run(fmt.Sprintf("n=%d/r=%d", n, r), func(b *testing.B) {
				var sink int32
				x := uint32(0)
				for b.Loop() {
					x = (x + 977) % n
					sink += c.Entry(x, n-1-x)
				}
				_ = sink
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(uint64(r)*uint64(n)), "ns/term")
			})
		}
	}
}

func reportGFLOPS(b *testing.B, c Challenge) {
	b.ReportMetric(float64(c.FLOPs())*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkSolve measures the multi-core solver with one worker per core (workers=0)
// and with one worker, in GFLOP/s of 2*n^3*r.
func BenchmarkSolve(b *testing.B) {
	for _, n := range []uint32{512, 1024, 2048} {
		for _, workers := range []int{1, 0} {
			c := testChallenge(n, 1, 3)
			b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
				for b.Loop() {
					if _, err := Solve(context.Background(), c, workers); err != nil {
						b.Fatal(err)
					}
				}
				reportGFLOPS(b, c)
			})
		}
	}
}

// BenchmarkReferenceSolve measures the naive solver, the baseline for BenchmarkSolve.
func BenchmarkReferenceSolve(b *testing.B) {
	for _, n := range []uint32{512, 1024} {
		c := testChallenge(n, 1, 3)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				ReferenceSolve(c)
			}
			reportGFLOPS(b, c)
		})
	}
}

// BenchmarkBuildTree measures the commitment to an answer (leaf hashing dominates).
func BenchmarkBuildTree(b *testing.B) {
	const n = 2048
	s := make([]int32, n*n)
	for x := range s {
		s[x] = int32(x)
	}
	for _, workers := range []int{1, 0} {
		b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
			b.SetBytes(int64(len(s)) * 4)
			for b.Loop() {
				BuildTree(s, n, workers)
			}
		})
	}
}
