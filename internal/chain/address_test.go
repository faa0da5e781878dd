package chain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	authcodec "github.com/cosmos/cosmos-sdk/x/auth/codec"
)

// AddressCodec agrees with the SDK's bech32 codec on valid and invalid input.
func TestAddressCodecMatchesSDK(t *testing.T) {
	for _, fast := range []AddressCodec{{Prefix: Bech32Prefix}, NewAddressCodec(Bech32Prefix)} {
		checkAgainstSDK(t, fast)
	}
}

func checkAgainstSDK(t *testing.T, fast AddressCodec) {
	sdkc := authcodec.NewBech32Codec(Bech32Prefix)
	for _, bz := range [][]byte{make([]byte, 20), make([]byte, 32), {1}, make([]byte, 255)} {
		want, err := sdkc.BytesToString(bz)
		require.NoError(t, err)
		got, err := fast.BytesToString(bz)
		require.NoError(t, err)
		require.Equal(t, want, got)
		back, err := fast.StringToBytes(got)
		require.NoError(t, err)
		require.Equal(t, bz, back)
	}
	other, err := authcodec.NewBech32Codec("cosmos").BytesToString(make([]byte, 20))
	require.NoError(t, err)
	long, err := AddressCodec{Prefix: Bech32Prefix}.BytesToString(make([]byte, 256))
	require.NoError(t, err)
	for range 2 { // the second round is answered by the memo
		for _, s := range []string{"", "  ", "flops1", other, "flops1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", long} {
			_, errSDK := sdkc.StringToBytes(s)
			_, errFast := fast.StringToBytes(s)
			require.Equal(t, errSDK != nil, errFast != nil, "%q: sdk %v, fast %v", s, errSDK, errFast)
		}
	}
	// a caller that changes the bytes it got does not change the memo
	s, err := fast.BytesToString(make([]byte, 20))
	require.NoError(t, err)
	bz, err := fast.StringToBytes(s)
	require.NoError(t, err)
	bz[0] = 9
	again, err := fast.StringToBytes(s)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 20), again)
}

// The upper-case spelling bech32 allows is refused (the SDK's codec accepts it): one
// account, one string, so comparing stored strings compares accounts.
func TestAddressCodecRefusesUpperCase(t *testing.T) {
	for _, c := range []AddressCodec{{Prefix: Bech32Prefix}, NewAddressCodec(Bech32Prefix)} {
		s, err := c.BytesToString(make([]byte, 20))
		require.NoError(t, err)
		upper := strings.ToUpper(s)
		_, err = authcodec.NewBech32Codec(Bech32Prefix).StringToBytes(upper)
		require.NoError(t, err, "the SDK accepts the upper-case spelling")
		_, err = c.StringToBytes(upper)
		require.ErrorContains(t, err, "canonical")
		_, err = c.StringToBytes(s[:6] + strings.ToUpper(s[6:]))
		require.Error(t, err, "mixed case")
	}
}
