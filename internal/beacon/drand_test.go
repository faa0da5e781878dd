package beacon_test

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/testutil/drandtest"
)

// The League of Entropy's quicknet (https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971/info)
// and its round 1000: a known answer, so the scheme, the domain and the round encoding
// are drand's and not only self-consistent.
const (
	quicknetKey     = "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a"
	quicknetGenesis = 1692803367
	round1000Sig    = "b44679b9a59af2ec876b1a6b1ad52ea9b1615fc3982b19576350f93447cb1125e342b73a8dd2bacbe47e4b6b63ed5e39"
	round1000Rand   = "fe290beca10872ef2fb164d2aa4442de4566183ec51c56ff3cd603d930e54fdd"
)

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func TestDrandQuicknetKnownAnswer(t *testing.T) {
	pk, err := beacon.DrandPublicKey(unhex(t, quicknetKey))
	require.NoError(t, err)
	r, err := beacon.VerifyDrand(pk, 1000, unhex(t, round1000Sig))
	require.NoError(t, err)
	require.Equal(t, round1000Rand, hex.EncodeToString(r[:]))

	// the same signature for another round, a flipped bit, another network's key: refused
	_, err = beacon.VerifyDrand(pk, 1001, unhex(t, round1000Sig))
	require.ErrorIs(t, err, beacon.ErrBadDrandSignature)
	bad := unhex(t, round1000Sig)
	bad[47] ^= 1
	_, err = beacon.VerifyDrand(pk, 1000, bad)
	require.Error(t, err)
	other := drandtest.NewNetwork(t, quicknetGenesis, 3)
	_, err = beacon.VerifyDrand(other.PublicKeyPoint(t), 1000, unhex(t, round1000Sig))
	require.ErrorIs(t, err, beacon.ErrBadDrandSignature)
}

func TestDrandRejectsMalformedPoints(t *testing.T) {
	pk, err := beacon.DrandPublicKey(unhex(t, quicknetKey))
	require.NoError(t, err)
	// the identity (compressed infinity: flags 0xc0) as signature and as key
	inf := make([]byte, beacon.DrandSignatureBytes)
	inf[0] = 0xc0
	_, err = beacon.VerifyDrand(pk, 1000, inf)
	require.ErrorContains(t, err, "subgroup")
	infKey := make([]byte, beacon.DrandPublicKeyBytes)
	infKey[0] = 0xc0
	_, err = beacon.DrandPublicKey(infKey)
	require.Error(t, err)
	_, err = beacon.VerifyDrand(pk, 1000, unhex(t, round1000Sig)[:47])
	require.ErrorContains(t, err, "48")
	_, err = beacon.DrandPublicKey(unhex(t, quicknetKey)[:95])
	require.ErrorContains(t, err, "96")
	// a point not on the curve
	junk := make([]byte, beacon.DrandSignatureBytes)
	junk[0] = 0x80
	junk[47] = 4
	_, err = beacon.VerifyDrand(pk, 1000, junk)
	require.Error(t, err)
}

// A test network signs like drand: its rounds verify, with the randomness drand defines.
func TestDrandTestNetworkSigns(t *testing.T) {
	n := drandtest.NewNetwork(t, 1_700_000_000, 3)
	sig := n.Sign(t, 42)
	r, err := beacon.VerifyDrand(n.PublicKeyPoint(t), 42, sig)
	require.NoError(t, err)
	require.Equal(t, n.Randomness(t, 42), r)
}

func TestDrandRoundAt(t *testing.T) {
	at := func(s int64) time.Time { return time.Unix(s, 0) }
	require.Equal(t, uint64(0), beacon.DrandRoundAt(quicknetGenesis, 3, at(quicknetGenesis-1)))
	require.Equal(t, uint64(1), beacon.DrandRoundAt(quicknetGenesis, 3, at(quicknetGenesis)))
	require.Equal(t, uint64(1), beacon.DrandRoundAt(quicknetGenesis, 3, at(quicknetGenesis+2)))
	require.Equal(t, uint64(2), beacon.DrandRoundAt(quicknetGenesis, 3, at(quicknetGenesis+3)))
	for _, r := range []uint64{1, 2, 1000, 9_999_999} {
		ts := beacon.DrandRoundTime(quicknetGenesis, 3, r)
		require.Equal(t, r, beacon.DrandRoundAt(quicknetGenesis, 3, ts))
		require.Equal(t, r-1, beacon.DrandRoundAt(quicknetGenesis, 3, ts.Add(-time.Second)))
	}
}
