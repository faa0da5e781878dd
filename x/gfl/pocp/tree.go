package pocp

import (
	"encoding/binary"
	"fmt"
)

// Tree is the RFC 6962 Merkle tree over the chunks of an answer S, kept whole so that any
// leaf can be proven. levels[0] holds the leaf hashes; levels[h+1][x] is the node over
// levels[h][2x] and levels[h][2x+1], or levels[h][2x] itself when that is the last node of
// an odd level. This bottom-up form gives the same root and audit paths as RFC 6962's
// split at the largest power of two. Memory: about 64 bytes per leaf.
type Tree struct {
	n      uint32
	levels [][][32]byte
}

// EncodeChunk is chunk c of S (n x n, row-major): its entries 256c .. 256c+255 as
// little-endian int32, ChunkBytes bytes. It panics if the chunk is outside S.
func EncodeChunk(s []int32, n uint32, chunk uint64) []byte {
	if count := uint64(n) * uint64(n) / ChunkEntries; chunk >= count || uint64(len(s)) < count*ChunkEntries {
		panic(fmt.Sprintf("pocp: EncodeChunk %d of %d over %d entries", chunk, count, len(s)))
	}
	out := make([]byte, ChunkBytes)
	encodeChunkInto(out, s, chunk)
	return out
}

func encodeChunkInto(dst []byte, s []int32, chunk uint64) {
	src := s[chunk*ChunkEntries : (chunk+1)*ChunkEntries]
	for x, v := range src {
		binary.LittleEndian.PutUint32(dst[4*x:], uint32(v))
	}
}

// BuildTree commits to S (n x n, row-major, len(s) == n*n): the leaves are its n*n/256
// chunks. Leaf hashing is split across workers goroutines (workers < 1 means
// GOMAXPROCS); the result does not depend on workers. It panics if len(s) != n*n or n is
// not a multiple of 256 (a broken caller invariant).
func BuildTree(s []int32, n uint32, workers int) *Tree {
	if uint64(len(s)) != uint64(n)*uint64(n) || n == 0 || n%ChunkEntries != 0 {
		panic(fmt.Sprintf("pocp: BuildTree over %d entries for n = %d", len(s), n))
	}
	count := uint64(len(s)) / ChunkEntries
	leaves := make([][32]byte, count)
	parallelRanges(workers, int(count), func(lo, hi int) {
		buf := make([]byte, ChunkBytes)
		for c := lo; c < hi; c++ {
			encodeChunkInto(buf, s, uint64(c))
			leaves[c] = LeafHash(buf)
		}
	})
	t := treeOverLeaves(leaves, workers)
	t.n = n
	return t
}

// treeOverLeaves builds the levels above leaf hashes (at least one).
func treeOverLeaves(leaves [][32]byte, workers int) *Tree {
	levels := [][][32]byte{leaves}
	for cur := leaves; len(cur) > 1; {
		next := make([][32]byte, (len(cur)+1)/2)
		parallelRanges(workers, len(cur)/2, func(lo, hi int) {
			for x := lo; x < hi; x++ {
				next[x] = NodeHash(cur[2*x], cur[2*x+1])
			}
		})
		if len(cur)%2 == 1 {
			next[len(next)-1] = cur[len(cur)-1]
		}
		levels = append(levels, next)
		cur = next
	}
	return &Tree{levels: levels}
}

// Root is MTH of all the chunks.
func (t *Tree) Root() [32]byte {
	return t.levels[len(t.levels)-1][0]
}

// LeafCount is the number of leaves.
func (t *Tree) LeafCount() uint64 {
	return uint64(len(t.levels[0]))
}

// Prove is the reveal of one chunk: its bytes from s (the answer the tree was built over)
// and its audit path. It panics if chunk >= LeafCount().
func (t *Tree) Prove(s []int32, chunk uint64) ChunkProof {
	if chunk >= t.LeafCount() {
		panic(fmt.Sprintf("pocp: Prove leaf %d of %d", chunk, t.LeafCount()))
	}
	return ChunkProof{Index: chunk, Chunk: EncodeChunk(s, t.n, chunk), Path: t.path(chunk)}
}

// path is the RFC 6962 audit path of a leaf: at each level the sibling, if the node has
// one (the last node of an odd level is promoted without one).
func (t *Tree) path(leaf uint64) [][32]byte {
	var path [][32]byte
	x := leaf
	for _, level := range t.levels[:len(t.levels)-1] {
		if sib := x ^ 1; sib < uint64(len(level)) {
			path = append(path, level[sib])
		}
		x >>= 1
	}
	return path
}
