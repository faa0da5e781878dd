// Package beacon is flops' one source of randomness for the state machine (DESIGN.md
// section 5):
//
//	seed = sha256(value of block h || domain || id_1 || ... || id_k)
//
// where h is a block committed after the thing being drawn for (a commitment, an
// assignment request) existed, so that nobody could know the seed when they acted. The
// value of block h is, with the drand beacon on, the randomness of the drand round
// published after h (drand.go; x/gfl binds blocks to rounds and keeps the rounds anyone
// submits), which no proposer can choose; with it off, h's header hash, which h's
// proposer can choose among the variants of its block (x/gfl/keeper/beacon.go documents
// the fallback and the bound).
package beacon

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
)

// ErrUnavailable is returned for a height whose hash is not known yet (not committed) or
// no longer kept.
var ErrUnavailable = errors.New("beacon: block hash unavailable")

// ErrRebind is returned for a draw bound to a block whose value can no longer come (the
// block left the window, or drand was turned on after it): the draw must bind to the
// current block and wait for its value.
var ErrRebind = errors.New("beacon: draw must bind to the current block")

// Beacon draws seeds from committed blocks.
type Beacon interface {
	// BlockHash returns the header hash of a committed block, or ErrUnavailable.
	BlockHash(ctx context.Context, height int64) ([]byte, error)
	// Seed returns Derive(BlockHash(height), domain, ids...), or ErrUnavailable.
	Seed(ctx context.Context, height int64, domain string, ids ...uint64) ([32]byte, error)
}

// Derive is sha256(hash || domain || big-endian ids).
func Derive(hash []byte, domain string, ids ...uint64) [32]byte {
	h := sha256.New()
	h.Write(hash)
	h.Write([]byte(domain))
	var b [8]byte
	for _, id := range ids {
		binary.BigEndian.PutUint64(b[:], id)
		h.Write(b[:])
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Uint64 reads the first 8 bytes of a seed as a big-endian integer.
func Uint64(seed [32]byte) uint64 { return binary.BigEndian.Uint64(seed[:8]) }

// Below draws a uniform integer in [0, n) from a seed (n > 0). The modulo bias is below
// n / 2^64, negligible for any n the chain uses.
func Below(seed [32]byte, n uint64) uint64 { return Uint64(seed) % n }
