package pocp

import (
	"crypto/sha256"
	"fmt"
)

// ChunkProof is one revealed leaf: the chunk bytes and its RFC 6962 audit path.
type ChunkProof struct {
	// Index is the leaf index, < n*n/256.
	Index uint64
	// Chunk is ChunkBytes bytes: entries 256*Index .. 256*Index+255 of S in row-major
	// order, each a little-endian int32.
	Chunk []byte
	// Path holds the sibling hashes from the leaf upwards; its length is fixed by Index
	// and the leaf count (at most ceil(log2(leaf count)), so 24 for n = 65536).
	Path [][32]byte
}

// LeafHash is SHA-256(0x00 || chunk).
func LeafHash(chunk []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0x00})
	h.Write(chunk)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// NodeHash is SHA-256(0x01 || left || right).
func NodeHash(left, right [32]byte) [32]byte {
	var buf [65]byte
	buf[0] = 0x01
	copy(buf[1:33], left[:])
	copy(buf[33:65], right[:])
	return sha256.Sum256(buf[:])
}

// VerifyInclusion checks that p.Chunk is leaf p.Index of the RFC 6962 tree of leafCount
// leaves with the given root, by the algorithm of RFC 9162 section 2.1.3.2. A chunk that is
// not ChunkBytes long wraps ErrMalformed; an index outside the tree, a path of the wrong
// length or one that leads elsewhere wraps ErrBadProof. It costs at most 1 + 64 hashes
// whatever len(p.Path) is.
func VerifyInclusion(root [32]byte, leafCount uint64, p ChunkProof) error {
	if len(p.Chunk) != ChunkBytes {
		return fmt.Errorf("leaf %d: chunk of %d bytes, want %d: %w", p.Index, len(p.Chunk), ChunkBytes, ErrMalformed)
	}
	if p.Index >= leafCount {
		return fmt.Errorf("leaf %d outside a tree of %d leaves: %w", p.Index, leafCount, ErrBadProof)
	}
	fn, sn := p.Index, leafCount-1
	h := LeafHash(p.Chunk)
	for s, sib := range p.Path {
		if sn == 0 {
			return fmt.Errorf("leaf %d of %d: path of %d hashes is too long, want %d: %w", p.Index, leafCount, len(p.Path), s, ErrBadProof)
		}
		if fn&1 == 1 || fn == sn {
			h = NodeHash(sib, h)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			h = NodeHash(h, sib)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return fmt.Errorf("leaf %d of %d: path of %d hashes is too short: %w", p.Index, leafCount, len(p.Path), ErrBadProof)
	}
	if h != root {
		return fmt.Errorf("leaf %d of %d: path leads to root %x, not %x: %w", p.Index, leafCount, h[:8], root[:8], ErrBadProof)
	}
	return nil
}
