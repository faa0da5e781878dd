package validate

import (
	"strconv"

	errorsmod "cosmossdk.io/errors"
)

// Codespace is the codespace of the bounds errors that every flops module shares.
const Codespace = "flops"

// The bounds errors: a list with more entries than its bound, a field with more bytes than
// its bound. Every repeated or free-form field of a flops Msg is checked against a bound
// before any other work, and the error names the field, its size and the bound.
var (
	ErrTooMany  = errorsmod.Register(Codespace, 2, "too many entries")
	ErrTooLarge = errorsmod.Register(Codespace, 3, "too large")
)

// MaxHashLen bounds a Merkle path entry (a SHA-256 hash) and MaxMerklePath a Merkle path
// (a tree of at most 2^64 leaves).
const (
	MaxHashLen    = 32
	MaxMerklePath = 64
)

// Count checks that a list of n entries has at most limit.
func Count(field string, n, limit int) error {
	if n > limit {
		return errorsmod.Wrapf(ErrTooMany, "%s: %d entries, at most %d", field, n, limit)
	}
	return nil
}

// Size checks that a field of n bytes has at most limit.
func Size(field string, n, limit int) error {
	if n > limit {
		return errorsmod.Wrapf(ErrTooLarge, "%s: %d bytes, at most %d", field, n, limit)
	}
	return nil
}

// Quote is a value for an error message: itself quoted, or, past 64 bytes, its first 64
// bytes and its length, so that an oversized input is never echoed whole into a log.
func Quote(s string) string {
	const show = 64
	if len(s) <= show {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:show]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
