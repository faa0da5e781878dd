package pocp

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// syntheticChunk is a distinct 1 KiB leaf for index x of a test tree.
func syntheticChunk(x uint64) []byte {
	out := make([]byte, ChunkBytes)
	h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, x))
	for off := 0; off < ChunkBytes; off += 32 {
		copy(out[off:], h[:])
	}
	return out
}

// rfcMTH and rfcPath are RFC 6962 section 2.1 written recursively, the reference for
// the bottom-up Tree.
func rfcMTH(leaves [][32]byte) [32]byte {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := 1
	for 2*k < len(leaves) {
		k *= 2
	}
	return NodeHash(rfcMTH(leaves[:k]), rfcMTH(leaves[k:]))
}

func rfcPath(m int, leaves [][32]byte) [][32]byte {
	if len(leaves) == 1 {
		return nil
	}
	k := 1
	for 2*k < len(leaves) {
		k *= 2
	}
	if m < k {
		return append(rfcPath(m, leaves[:k]), rfcMTH(leaves[k:]))
	}
	return append(rfcPath(m-k, leaves[k:]), rfcMTH(leaves[:k]))
}

func syntheticTree(count int) ([][]byte, *Tree) {
	chunks := make([][]byte, count)
	leaves := make([][32]byte, count)
	for x := range chunks {
		chunks[x] = syntheticChunk(uint64(x))
		leaves[x] = LeafHash(chunks[x])
	}
	return chunks, treeOverLeaves(leaves, 2)
}

func TestMerkleHashes(t *testing.T) {
	chunk := syntheticChunk(3)
	// The leaf hash is SHA-256 of 0x00 || chunk.
	if got, want := LeafHash(chunk), sha256.Sum256(append([]byte{0}, chunk...)); got != want {
		t.Errorf("LeafHash = %x, want %x", got, want)
	}
	// The node hash is SHA-256 of 0x01 || left || right.
	l, r := sha256.Sum256([]byte("l")), sha256.Sum256([]byte("r"))
	if got, want := NodeHash(l, r), sha256.Sum256(slices.Concat([]byte{1}, l[:], r[:])); got != want {
		t.Errorf("NodeHash = %x, want %x", got, want)
	}
}

func TestMerkleEveryLeafAndTampering(t *testing.T) {
	var counts []int
	for c := 1; c <= 70; c++ {
		counts = append(counts, c)
	}
	counts = append(counts, 255, 256, 257, 1000, 1023, 1024, 1025, 4097)
	for _, count := range counts {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			chunks, tree := syntheticTree(count)
			root := tree.Root()
			leaves := tree.levels[0]
			// The bottom-up tree has RFC 6962's root and audit paths.
			if want := rfcMTH(leaves); root != want {
				t.Fatalf("root %x, RFC 6962 MTH %x", root, want)
			}
			n := uint64(count)
			for x := range count {
				idx := uint64(x)
				path := tree.path(idx)
				if small := count <= 70 || x%97 == 0 || x == count-1; small {
					if want := rfcPath(x, leaves); !slices.Equal(path, want) {
						t.Fatalf("leaf %d: path differs from RFC 6962 PATH", x)
					}
				}
				proof := ChunkProof{Index: idx, Chunk: chunks[x], Path: path}
				// Every honest proof verifies.
				if err := VerifyInclusion(root, n, proof); err != nil {
					t.Fatalf("leaf %d: %v", x, err)
				}
				type badCase struct {
					name  string
					proof ChunkProof
				}
				bad := []badCase{
					// A flipped byte in the chunk changes the leaf hash.
					{"flipped chunk byte", withChunk(proof, flip(chunks[x], x*7%ChunkBytes))},
					// An index past the end is refused outright.
					{"index past end", withIndex(proof, n)},
					{"index max", withIndex(proof, ^uint64(0))},
					// A path one hash too long.
					{"long path", withPath(proof, append(slices.Clone(path), root))},
				}
				if count > 1 {
					// Another leaf's index with this chunk and path.
					other := idx ^ 1
					if other >= n {
						other = idx - 1
					}
					bad = append(bad, badCase{"other index", withIndex(proof, other)})
					// A path one hash short.
					bad = append(bad, badCase{"short path", withPath(proof, path[:len(path)-1])})
					// Each sibling flipped in turn.
					for s := range path {
						p2 := slices.Clone(path)
						p2[s][s%32] ^= 0x40
						bad = append(bad, badCase{fmt.Sprintf("flipped sibling %d", s), withPath(proof, p2)})
					}
				}
				for _, b := range bad {
					if err := VerifyInclusion(root, n, b.proof); !errors.Is(err, ErrBadProof) {
						t.Fatalf("leaf %d, %s: err = %v, want ErrBadProof", x, b.name, err)
					}
				}
			}
			// A chunk of the wrong length is malformed, not a bad proof.
			proof := ChunkProof{Index: 0, Chunk: chunks[0][:ChunkBytes-1], Path: tree.path(0)}
			if err := VerifyInclusion(root, n, proof); !errors.Is(err, ErrMalformed) {
				t.Fatalf("short chunk: err = %v, want ErrMalformed", err)
			}
			// An empty tree proves nothing.
			if err := VerifyInclusion(root, 0, ChunkProof{Chunk: chunks[0]}); !errors.Is(err, ErrBadProof) {
				t.Fatalf("empty tree: err = %v, want ErrBadProof", err)
			}
		})
	}
}

func flip(b []byte, at int) []byte {
	out := slices.Clone(b)
	out[at] ^= 0x01
	return out
}

func withChunk(p ChunkProof, c []byte) ChunkProof    { p.Chunk = c; return p }
func withIndex(p ChunkProof, i uint64) ChunkProof    { p.Index = i; return p }
func withPath(p ChunkProof, s [][32]byte) ChunkProof { p.Path = s; return p }

func TestTreeProveAndEncode(t *testing.T) {
	// Prove returns the chunk bytes of S (little-endian int32, row-major) and a path that
	// verifies, for a real answer with 2304 leaves.
	c := testChallenge(768, 1, 4)
	s := ReferenceSolve(c)
	tree := BuildTree(s, c.N, 3)
	if tree.LeafCount() != c.LeafCount() {
		t.Fatalf("LeafCount = %d, want %d", tree.LeafCount(), c.LeafCount())
	}
	// BuildTree does not depend on the number of workers.
	if other := BuildTree(s, c.N, 1).Root(); other != tree.Root() {
		t.Fatalf("root with 1 worker %x != with 3 workers %x", other, tree.Root())
	}
	for _, chunk := range []uint64{0, 1, 2, 3, 1151, 2303} {
		p := tree.Prove(s, chunk)
		if err := VerifyInclusion(tree.Root(), c.LeafCount(), p); err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		for e := range ChunkEntries {
			x := int(chunk)*ChunkEntries + e
			if got := int32(binary.LittleEndian.Uint32(p.Chunk[4*e:])); got != s[x] {
				t.Fatalf("chunk %d entry %d = %d, want S = %d", chunk, e, got, s[x])
			}
			pos := Position{I: uint32(x / 768), J: uint32(x % 768)}
			if ChunkIndex(768, pos) != chunk {
				t.Fatalf("ChunkIndex(%v) = %d, want %d", pos, ChunkIndex(768, pos), chunk)
			}
			if v, err := EntryInChunk(p.Chunk, pos); err != nil || v != s[x] {
				t.Fatalf("EntryInChunk(%v) = %d, %v, want %d", pos, v, err, s[x])
			}
		}
	}
}
