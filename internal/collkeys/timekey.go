// Package collkeys holds collections key codecs the collections package lacks.
package collkeys

import (
	"encoding/json"
	"time"

	"cosmossdk.io/collections"
	collcodec "cosmossdk.io/collections/codec"
)

// TimeKey encodes a time.Time as its UTC Unix nanoseconds through collections.Int64Key:
// fixed width, ordered by time. It replaces sdk.TimeKey, which the SDK keeps only for old
// state. Times outside 1678..2262 (int64 nanoseconds) are not representable and never
// occur in block times.
var TimeKey collcodec.KeyCodec[time.Time] = timeKey{}

type timeKey struct{}

var int64Key = collections.Int64Key

func (timeKey) Encode(buf []byte, t time.Time) (int, error) {
	return int64Key.Encode(buf, t.UTC().UnixNano())
}

func (timeKey) Decode(buf []byte) (int, time.Time, error) {
	n, v, err := int64Key.Decode(buf)
	return n, time.Unix(0, v).UTC(), err
}

func (timeKey) Size(t time.Time) int { return int64Key.Size(t.UnixNano()) }

func (timeKey) EncodeJSON(t time.Time) ([]byte, error) { return json.Marshal(t.UTC()) }

func (timeKey) DecodeJSON(b []byte) (time.Time, error) {
	var t time.Time
	err := json.Unmarshal(b, &t)
	return t.UTC(), err
}

func (timeKey) Stringify(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (timeKey) KeyType() string { return "flops/time_unix_nano" }

func (k timeKey) EncodeNonTerminal(buf []byte, t time.Time) (int, error) { return k.Encode(buf, t) }

func (k timeKey) DecodeNonTerminal(buf []byte) (int, time.Time, error) { return k.Decode(buf) }

func (k timeKey) SizeNonTerminal(t time.Time) int { return k.Size(t) }
