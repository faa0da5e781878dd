package keeper

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"cosmossdk.io/collections"
	collcodec "cosmossdk.io/collections/codec"
	"google.golang.org/protobuf/encoding/protowire"
)

// zeroTimestamp is the payload gogoproto writes for a non-nullable stdtime Timestamp that
// is zero (time.Time{}: seconds -62135596800, a ten-byte varint).
var zeroTimestamp = protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(-62135596800&(1<<64-1)))

// omit says when compactValue leaves a top-level field out: always (the field is never
// kept in the store) or when its payload is one given encoding.
type omit struct {
	always  bool
	payload []byte
}

// compactValue is a store value codec that writes a message without the top-level fields
// gogoproto writes even when they are zero: its non-nullable timestamps and embedded
// messages. A task not started yet carries four zero timestamps and two empty messages,
// 59 of its 93 bytes; every write of it paid 1,770 gas for them. A field left out decodes
// as the zero value the struct starts from, which is what the field held (a zero
// timestamp's payload decodes to time.Time{}, an empty message to the zero struct), so a
// value reads back as it was written. Only non-repeated fields may be named: an empty
// element of a repeated field is an element. Values written before (with the zero fields)
// decode as they always did.
type compactValue[T any] struct {
	collcodec.ValueCodec[T]
	omit map[protowire.Number]omit
}

func newCompactValue[T any](inner collcodec.ValueCodec[T], omit map[protowire.Number]omit) compactValue[T] {
	return compactValue[T]{ValueCodec: inner, omit: omit}
}

func (c compactValue[T]) Encode(v T) ([]byte, error) {
	bz, err := c.ValueCodec.Encode(v)
	if err != nil {
		return nil, err
	}
	return c.compact(bz)
}

// compact drops the omitted fields from an encoding, copying it only when one is there.
func (c compactValue[T]) compact(bz []byte) ([]byte, error) {
	var out []byte
	kept := 0 // bz[:kept] is copied to out (or needs no copy while out is nil)
	for i := 0; i < len(bz); {
		num, typ, n := protowire.ConsumeTag(bz[i:])
		if n < 0 {
			return nil, fmt.Errorf("market: compact %s: %w", c.ValueType(), protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, bz[i+n:])
		if m < 0 {
			return nil, fmt.Errorf("market: compact %s: %w", c.ValueType(), protowire.ParseError(m))
		}
		end := i + n + m
		drop := false
		if o, ok := c.omit[num]; ok && typ == protowire.BytesType {
			if o.always {
				drop = true
			} else {
				payload, _ := protowire.ConsumeBytes(bz[i+n:])
				drop = bytes.Equal(payload, o.payload)
			}
		}
		if drop {
			if out == nil {
				out = make([]byte, 0, len(bz))
			}
			out = append(out, bz[kept:i]...)
			kept = end
		}
		i = end
	}
	if out == nil {
		return bz, nil
	}
	return append(out, bz[kept:]...), nil
}

// taskOmit: a task's timestamps (started_time, run_deadline, commit_time, deadline) when
// zero, its checkpoint and usage when empty.
var taskOmit = map[protowire.Number]omit{
	10: {payload: zeroTimestamp}, 11: {payload: zeroTimestamp}, 17: {payload: zeroTimestamp}, 33: {payload: zeroTimestamp},
	12: {payload: []byte{}}, 20: {payload: []byte{}},
}

// jobOmit: a job's spec, which its record never holds (JobSpecs does; the keeper blanks
// it before every write, and the blank spec was 41 bytes), and its submitted_time when
// zero.
var jobOmit = map[protowire.Number]omit{3: {always: true}, 7: {payload: zeroTimestamp}}

// groupValue is a scheduler group's record (size, first, parked, tries) as four varints:
// a typical record is 5 to 8 bytes, where the fixed-width tuple it replaced was 28, and it
// is written at every submission and at every assignment from a group of several.
type groupValue = collections.Quad[uint64, uint64, int64, uint32]

type groupValueCodec struct {
	collcodec.ValueCodec[groupValue] // JSON, Stringify, ValueType: the tuple's
}

func newGroupValueCodec() groupValueCodec {
	return groupValueCodec{collcodec.KeyToValueCodec(collections.QuadKeyCodec(collections.Uint64Key, collections.Uint64Key, collections.Int64Key, collections.Uint32Key))}
}

func (groupValueCodec) Encode(v groupValue) ([]byte, error) {
	bz := make([]byte, 0, 4*binary.MaxVarintLen64)
	bz = binary.AppendUvarint(bz, v.K1())
	bz = binary.AppendUvarint(bz, v.K2())
	bz = binary.AppendVarint(bz, v.K3())
	return binary.AppendUvarint(bz, uint64(v.K4())), nil
}

func (groupValueCodec) Decode(bz []byte) (groupValue, error) {
	size, n := binary.Uvarint(bz)
	if n <= 0 {
		return groupValue{}, fmt.Errorf("market: group record %x: bad size", bz)
	}
	bz = bz[n:]
	first, n := binary.Uvarint(bz)
	if n <= 0 {
		return groupValue{}, fmt.Errorf("market: group record: bad first task")
	}
	bz = bz[n:]
	parked, n := binary.Varint(bz)
	if n <= 0 {
		return groupValue{}, fmt.Errorf("market: group record: bad parked height")
	}
	bz = bz[n:]
	tries, n := binary.Uvarint(bz)
	if n <= 0 || n != len(bz) || tries > math.MaxUint32 {
		return groupValue{}, fmt.Errorf("market: group record: bad tries")
	}
	return collections.Join4(size, first, parked, uint32(tries)), nil
}
