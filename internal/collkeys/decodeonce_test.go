package collkeys_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	collcodec "cosmossdk.io/collections/codec"
	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/collkeys"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// countingCodec decodes a uint64 from 8 bytes and counts its decodes.
type countingCodec struct {
	collcodec.ValueCodec[uint64]
	mu      sync.Mutex
	decodes int
}

func (c *countingCodec) Decode(b []byte) (uint64, error) {
	c.mu.Lock()
	c.decodes++
	c.mu.Unlock()
	if len(b) != 8 {
		return 0, errors.New("not 8 bytes")
	}
	return c.ValueCodec.Decode(b)
}

func TestDecodeOnce(t *testing.T) {
	inner := &countingCodec{ValueCodec: collcodec.KeyToValueCodec(collcodec.NewUint64Key[uint64]())}
	c := collkeys.DecodeOnce[uint64](inner)
	one, err := c.Encode(1)
	require.NoError(t, err)
	two, err := c.Encode(2)
	require.NoError(t, err)

	for range 3 {
		v, err := c.Decode(one)
		require.NoError(t, err)
		require.Equal(t, uint64(1), v)
	}
	require.Equal(t, 1, inner.decodes, "the same bytes decoded once")

	// the caller's buffer is not kept: bytes changed in place are new bytes
	buf := append([]byte(nil), one...)
	_, err = c.Decode(buf)
	require.NoError(t, err)
	copy(buf, two)
	v, err := c.Decode(buf)
	require.NoError(t, err)
	require.Equal(t, uint64(2), v, "other bytes: decoded again")
	require.Equal(t, 2, inner.decodes)

	// a decoding error is returned and not kept
	_, err = c.Decode([]byte{1})
	require.Error(t, err)
	v, err = c.Decode(two)
	require.NoError(t, err)
	require.Equal(t, uint64(2), v)

	// concurrent readers of changing bytes each get the value of the bytes they passed
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				n := uint64((i + j) % 3)
				bz, _ := c.Encode(n)
				got, err := c.Decode(bz)
				if err != nil || got != n {
					t.Errorf("decoded %d (%v), want %d", got, err, n)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDecodeOnceSharesNothingMutable: the params that DecodeOnce wraps (x/reputation's,
// x/staking-slash's) hold nothing a caller could change in place for every other reader
// of the same value: scalars, strings and durations, and decimals and integers (which
// nothing here changes with their *Mut methods). A field of another kind (a slice, a
// map, a pointer) added to them fails here: wrap such params only after deciding how
// their shared value is kept safe.
func TestDecodeOnceSharesNothingMutable(t *testing.T) {
	allowed := map[reflect.Type]bool{
		reflect.TypeFor[sdkmath.LegacyDec](): true, reflect.TypeFor[sdkmath.Int](): true, reflect.TypeFor[time.Duration](): true,
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[reputationtypes.Params](), reflect.TypeFor[sstypes.Params]()} {
		for i := range typ.NumField() {
			f := typ.Field(i)
			switch k := f.Type.Kind(); {
			case allowed[f.Type]:
			case k == reflect.String || k == reflect.Bool || (k >= reflect.Int && k <= reflect.Uint64):
			default:
				t.Errorf("%s.%s is a %s: DecodeOnce would share it between readers", typ, f.Name, f.Type)
			}
		}
	}
}
