package pocp

import (
	"fmt"
	"slices"
)

// VerifyReveal is the chain's check of a reveal (docs/pocp.md section 5): root is the
// committed MTH of S, positions are the k sampled entries, proofs the revealed chunks in
// any order. It accepts exactly when
//
//   - c is a valid challenge (else ErrBadSize);
//   - there is at least one position and every position lies inside the n x n matrix
//     (else ErrMalformed);
//   - the proofs are exactly the chunks ChunksFor(n, positions), each once, each
//     ChunkBytes long (an extra, duplicated or mis-sized chunk wraps ErrMalformed, an
//     absent one ErrMissingChunk);
//   - every audit path leads to root (else ErrBadProof);
//   - every sampled entry equals c.Entry (else ErrWrongEntry).
//
// The checks run in that order, cheapest first, so the costly part (at most
// len(positions) Entry calls, VerifyTerms(c, len(positions)) multiply-adds, plus
// len(positions) * 25 hashes) is reached only by a well-formed reveal. The first failure
// is returned; the result depends only on the arguments.
func VerifyReveal(c Challenge, root [32]byte, positions []Position, proofs []ChunkProof) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if len(positions) == 0 {
		return fmt.Errorf("no sampled position: %w", ErrMalformed)
	}
	for s, p := range positions {
		if p.I >= c.N || p.J >= c.N {
			return fmt.Errorf("position %d = (%d, %d) outside %d x %d: %w", s, p.I, p.J, c.N, c.N, ErrMalformed)
		}
	}
	needed := ChunksFor(c.N, positions)
	if len(proofs) > len(needed) {
		return fmt.Errorf("%d chunks revealed, %d needed: %w", len(proofs), len(needed), ErrMalformed)
	}
	// byNeeded[x] is the proof of chunk needed[x], or -1.
	byNeeded := make([]int, len(needed))
	for x := range byNeeded {
		byNeeded[x] = -1
	}
	for q, p := range proofs {
		x, found := slices.BinarySearch(needed, p.Index)
		if !found {
			return fmt.Errorf("proof %d: chunk %d holds no sampled entry: %w", q, p.Index, ErrMalformed)
		}
		if byNeeded[x] >= 0 {
			return fmt.Errorf("proof %d: chunk %d already revealed by proof %d: %w", q, p.Index, byNeeded[x], ErrMalformed)
		}
		if len(p.Chunk) != ChunkBytes {
			return fmt.Errorf("proof %d: chunk %d of %d bytes, want %d: %w", q, p.Index, len(p.Chunk), ChunkBytes, ErrMalformed)
		}
		byNeeded[x] = q
	}
	for x, q := range byNeeded {
		if q < 0 {
			return fmt.Errorf("chunk %d not revealed: %w", needed[x], ErrMissingChunk)
		}
	}
	leafCount := c.LeafCount()
	for _, q := range byNeeded {
		if err := VerifyInclusion(root, leafCount, proofs[q]); err != nil {
			return err
		}
	}
	for s, p := range positions {
		x, _ := slices.BinarySearch(needed, ChunkIndex(c.N, p))
		got, err := EntryInChunk(proofs[byNeeded[x]].Chunk, p)
		if err != nil {
			return err // unreachable: lengths were checked above
		}
		if want := c.Entry(p.I, p.J); got != want {
			return fmt.Errorf("position %d = (%d, %d): revealed %d, want %d: %w", s, p.I, p.J, got, want, ErrWrongEntry)
		}
	}
	return nil
}
