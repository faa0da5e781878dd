package collkeys

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Encoded keys sort like the times they encode, and decode back to the same instant.
func TestTimeKeyOrderAndRoundTrip(t *testing.T) {
	times := []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600)).Add(time.Second), // 00:00:01 UTC
		time.Date(2200, 6, 1, 0, 0, 0, 0, time.UTC),
	}
	var prev []byte
	for _, tm := range times {
		buf := make([]byte, TimeKey.Size(tm))
		n, err := TimeKey.Encode(buf, tm)
		require.NoError(t, err)
		_, back, err := TimeKey.Decode(buf[:n])
		require.NoError(t, err)
		require.True(t, back.Equal(tm))
		if prev != nil {
			require.Equal(t, -1, bytes.Compare(prev, buf), "keys must sort by time")
		}
		prev = buf
	}
	js, err := TimeKey.EncodeJSON(times[1])
	require.NoError(t, err)
	back, err := TimeKey.DecodeJSON(js)
	require.NoError(t, err)
	require.True(t, back.Equal(times[1]))
}
