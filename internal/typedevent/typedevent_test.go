package typedevent

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// What SafeString accepts, Go's JSON encoder (which proto JSON's output goes through in
// sdk.TypedEventToEvent) writes as itself between quotes; it accepts all printable ASCII
// but the quote, the backslash and <, >, & (a bech32 address, a decimal, an enum name).
// Other strings (DEL, non-ASCII) it refuses, though JSON might keep some: a builder then
// takes the SDK's path.
func TestSafeStringIsWhatJSONLeavesAlone(t *testing.T) {
	for c := 0; c < 256; c++ {
		s := "a" + string(rune(c)) + "b"
		bz, err := json.Marshal(s)
		require.NoError(t, err)
		if SafeString(s) {
			require.Equal(t, string(bz), String(s), "character %#x", c)
		}
		printable := c >= 0x20 && c <= 0x7e
		require.Equal(t, printable && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&', SafeString(s), "character %#x", c)
	}
	require.True(t, SafeString(""))
	require.True(t, SafeString("flops1qyqszqgpqyqszqgpqyqszqgpqyqszqgpjnp7du"))
	require.False(t, SafeString("\u2028"))
}
