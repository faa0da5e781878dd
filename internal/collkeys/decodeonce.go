package collkeys

import (
	"bytes"
	"sync/atomic"

	collcodec "cosmossdk.io/collections/codec"
)

// DecodeOnce wraps a value codec so that it decodes the same bytes once: it keeps the
// last bytes it decoded and their value, and hands that value out again while the stored
// bytes stay the same. It is meant for a module's params, which every call of a hot
// keeper method reads and decodes again (the reputation's six decimals are parsed from
// strings on each read: twice an assignment, for the two candidates drawn). The store
// read still happens and is charged its gas: only the decoding is saved, and the value is
// a pure function of the bytes, so the state machine sees what it would have decoded.
//
// The value handed out is shared by every caller that reads the same bytes: the struct is
// a copy, but what it points to (a LegacyDec's or an Int's big.Int, a slice's array) is
// not. Use it only for a value nothing modifies in place (no *Mut method, no write to a
// slice element); TestDecodeOnceSharesNothingMutable holds the params it wraps to that.
// It is safe for concurrent use (queries decode on their own goroutines).
func DecodeOnce[T any](c collcodec.ValueCodec[T]) collcodec.ValueCodec[T] {
	return &decodeOnce[T]{ValueCodec: c}
}

type decodeOnce[T any] struct {
	collcodec.ValueCodec[T]
	last atomic.Pointer[decoded[T]]
}

type decoded[T any] struct {
	bz []byte
	v  T
}

func (d *decodeOnce[T]) Decode(b []byte) (T, error) {
	if l := d.last.Load(); l != nil && bytes.Equal(l.bz, b) {
		return l.v, nil
	}
	v, err := d.ValueCodec.Decode(b)
	if err != nil {
		return v, err
	}
	d.last.Store(&decoded[T]{bz: bytes.Clone(b), v: v})
	return v, nil
}
