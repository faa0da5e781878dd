package pocp

import (
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"testing"
)

func isSentinel(err error) bool {
	for _, s := range []error{ErrBadSize, ErrMalformed, ErrMissingChunk, ErrBadProof, ErrWrongEntry} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// FuzzVerifyInclusion: arbitrary indices, tree sizes, chunk lengths and paths against a
// real 70-leaf root never panic, fail only with the package's sentinels, and never accept
// a chunk of the wrong length or an index outside the tree.
func FuzzVerifyInclusion(f *testing.F) {
	chunks, tree := syntheticTree(70)
	root := tree.Root()
	for _, x := range []uint64{0, 1, 63, 64, 69} {
		var path []byte
		for _, h := range tree.path(x) {
			path = append(path, h[:]...)
		}
		f.Add(x, uint64(70), uint16(ChunkBytes), path)
	}
	f.Add(uint64(5), uint64(0), uint16(0), []byte{})
	f.Add(^uint64(0), ^uint64(0), uint16(ChunkBytes+1), make([]byte, 64*32+5))
	f.Fuzz(func(t *testing.T, index, leafCount uint64, chunkLen uint16, pathBytes []byte) {
		chunk := make([]byte, int(chunkLen)%(2*ChunkBytes))
		copy(chunk, chunks[index%70])
		var path [][32]byte
		for off := 0; off+32 <= len(pathBytes); off += 32 {
			path = append(path, [32]byte(pathBytes[off:off+32]))
		}
		err := VerifyInclusion(root, leafCount, ChunkProof{Index: index, Chunk: chunk, Path: path})
		if err != nil && !isSentinel(err) {
			t.Fatalf("error without a sentinel: %v", err)
		}
		if err == nil && (len(chunk) != ChunkBytes || index >= leafCount) {
			t.Fatalf("accepted index %d of %d with a %d-byte chunk", index, leafCount, len(chunk))
		}
	})
}

var fuzzRevealFixture = sync.OnceValues(func() (Challenge, []int32) {
	c := testChallenge(256, 1, 13)
	return c, ReferenceSolve(c)
})

// FuzzVerifyReveal: an honest reveal of fuzzed positions, then mutated by fuzzed edits
// (drop, duplicate, truncate, flip, re-index, cut or extend a path, add a chunk), never
// panics, fails only with the package's sentinels, passes when unedited, and when it
// passes every sampled entry it reveals is the true one.
func FuzzVerifyReveal(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, []byte{})
	f.Add([]byte{1, 2, 3, 4, 255, 255, 0, 9}, []byte{0, 0, 0})
	f.Add([]byte{9, 9, 9, 9, 9, 9, 9, 9}, []byte{1, 0, 2, 1, 3, 0, 5, 1, 4, 3, 6, 0, 7, 0, 8, 7})
	f.Add([]byte{0, 1, 0, 2}, []byte{8, 200, 2, 0, 4, 9})
	f.Fuzz(func(t *testing.T, posBytes, edits []byte) {
		c, s := fuzzRevealFixture()
		tree := BuildTree(s, c.N, 1)
		var positions []Position
		for off := 0; off+4 <= len(posBytes) && len(positions) < 64; off += 4 {
			// Coordinates up to 511: half of them fall outside the 256 x 256 matrix.
			positions = append(positions, Position{
				I: uint32(binary.BigEndian.Uint16(posBytes[off:]) % 512),
				J: uint32(binary.BigEndian.Uint16(posBytes[off+2:]) % 512),
			})
		}
		inside := true
		for _, p := range positions {
			inside = inside && p.I < c.N && p.J < c.N
		}
		var proofs []ChunkProof
		if inside {
			proofs = honestReveal(tree, s, c.N, positions)
		}
		for e := 0; e+1 < len(edits); e += 2 {
			op, arg := edits[e]%9, int(edits[e+1])
			if len(proofs) == 0 && op != 8 {
				continue
			}
			x := 0
			if len(proofs) > 0 {
				x = arg % len(proofs)
			}
			switch op {
			case 0: // drop a proof
				proofs = slices.Delete(slices.Clone(proofs), x, x+1)
			case 1: // duplicate a proof
				proofs = append(slices.Clone(proofs), proofs[x])
			case 2: // truncate a chunk
				proofs = replace(proofs, x, withChunk(proofs[x], proofs[x].Chunk[:min(arg%ChunkBytes, len(proofs[x].Chunk))]))
			case 3: // flip a chunk byte
				if len(proofs[x].Chunk) > 0 {
					proofs = replace(proofs, x, withChunk(proofs[x], flip(proofs[x].Chunk, arg*7%len(proofs[x].Chunk))))
				}
			case 4: // change an index
				proofs = replace(proofs, x, withIndex(proofs[x], proofs[x].Index+uint64(arg)+1))
			case 5: // cut a path
				if len(proofs[x].Path) > 0 {
					proofs = replace(proofs, x, withPath(proofs[x], proofs[x].Path[:arg%len(proofs[x].Path)]))
				}
			case 6: // extend a path
				proofs = replace(proofs, x, withPath(proofs[x], append(slices.Clone(proofs[x].Path), [32]byte{byte(arg)})))
			case 7: // flip a path byte
				if len(proofs[x].Path) > 0 {
					p := slices.Clone(proofs[x].Path)
					p[arg%len(p)][arg%32] ^= 0x80
					proofs = replace(proofs, x, withPath(proofs[x], p))
				}
			case 8: // add some chunk, honestly proven
				proofs = append(slices.Clone(proofs), tree.Prove(s, uint64(arg)*7%c.LeafCount()))
			}
		}
		err := VerifyReveal(c, tree.Root(), positions, proofs)
		if err != nil && !isSentinel(err) {
			t.Fatalf("error without a sentinel: %v", err)
		}
		if len(edits) < 2 && inside && len(positions) > 0 && err != nil {
			t.Fatalf("unedited honest reveal failed: %v", err)
		}
		if err != nil {
			return
		}
		for _, p := range positions {
			for _, q := range proofs {
				if q.Index == ChunkIndex(c.N, p) {
					if v, _ := EntryInChunk(q.Chunk, p); v != s[int(p.I)*int(c.N)+int(p.J)] {
						t.Fatalf("accepted a wrong entry %d at %v", v, p)
					}
				}
			}
		}
	})
}
