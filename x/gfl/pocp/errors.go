package pocp

import "errors"

// Sentinel errors. Every error this package returns wraps exactly one of them (or, from
// Solve, a context error), so callers classify failures with errors.Is.
var (
	// ErrBadSize: a challenge whose (n, r) violates section 1 of docs/pocp.md.
	ErrBadSize = errors.New("pocp: bad challenge size")
	// ErrMalformed: a reveal that is structurally wrong: a position outside the matrix, a
	// chunk that is not 1024 bytes, an extra or duplicated chunk, a chunk index outside
	// the tree, no sampled position.
	ErrMalformed = errors.New("pocp: malformed reveal")
	// ErrMissingChunk: a reveal without the chunk holding a sampled entry.
	ErrMissingChunk = errors.New("pocp: missing chunk")
	// ErrBadProof: an audit path that does not lead from the chunk to the committed root.
	ErrBadProof = errors.New("pocp: bad inclusion proof")
	// ErrWrongEntry: a proven chunk whose sampled entry differs from the recomputed S_ij.
	ErrWrongEntry = errors.New("pocp: wrong entry")
)
