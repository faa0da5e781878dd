package pocp

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// Position is a sampled entry S[I][J], I and J < n.
type Position struct {
	I, J uint32
}

// SampleSeed is sha256("flops/pocp/sample" || blockHash || challengeID (8 bytes BE)),
// blockHash being the hash of the first block after the commit (docs/pocp.md section 5).
func SampleSeed(blockHash []byte, challengeID uint64) [32]byte {
	h := sha256.New()
	h.Write([]byte(domainSample))
	h.Write(blockHash)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], challengeID)
	h.Write(b[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// SamplePositions draws k positions (with repetition) for an n x n answer: for s < k,
// h = sha256(sampleSeed || uint32_be(s)), I = BE64(h[0:8]) mod n, J = BE64(h[8:16]) mod n.
// The modulo bias is below n/2^64 <= 2^-48 per coordinate. It costs k SHA-256; k <= 0 or
// n == 0 gives nil.
func SamplePositions(sampleSeed [32]byte, n uint32, k int) []Position {
	if k <= 0 || n == 0 {
		return nil
	}
	out := make([]Position, k)
	var buf [36]byte
	copy(buf[:32], sampleSeed[:])
	for s := range out {
		binary.BigEndian.PutUint32(buf[32:], uint32(s))
		h := sha256.Sum256(buf[:])
		out[s] = Position{
			I: uint32(binary.BigEndian.Uint64(h[0:8]) % uint64(n)),
			J: uint32(binary.BigEndian.Uint64(h[8:16]) % uint64(n)),
		}
	}
	return out
}

// ChunkIndex is the leaf holding S[p.I][p.J]: (I*n + J) / 256. Since n is a multiple of
// 256, a chunk lies within one row: chunks I*n/256 .. (I+1)*n/256-1.
func ChunkIndex(n uint32, p Position) uint64 {
	return (uint64(p.I)*uint64(n) + uint64(p.J)) / ChunkEntries
}

// EntryOffset is the byte offset of S[p.I][p.J] in its chunk: 4*(J mod 256).
func EntryOffset(p Position) int {
	return 4 * int(p.J%ChunkEntries)
}

// EntryInChunk decodes S[p.I][p.J] (little-endian int32) from the bytes of the chunk
// ChunkIndex(n, p). It wraps ErrMalformed if the chunk is not ChunkBytes long.
func EntryInChunk(chunk []byte, p Position) (int32, error) {
	if len(chunk) != ChunkBytes {
		return 0, fmt.Errorf("chunk of %d bytes, want %d: %w", len(chunk), ChunkBytes, ErrMalformed)
	}
	off := EntryOffset(p)
	return int32(binary.LittleEndian.Uint32(chunk[off : off+4])), nil
}

// ChunksFor is the sorted, distinct chunk indices holding the positions: exactly the
// chunks a reveal must contain. Positions are assumed inside the n x n matrix.
func ChunksFor(n uint32, positions []Position) []uint64 {
	out := make([]uint64, len(positions))
	for s, p := range positions {
		out[s] = ChunkIndex(n, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
