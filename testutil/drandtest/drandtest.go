// Package drandtest is a drand network for tests: one key that signs rounds with the
// bls-unchained-g1-rfc9380 scheme, as the League of Entropy's quicknet does with its
// threshold key (a threshold signature is an ordinary BLS signature under the group key).
package drandtest

import (
	"crypto/sha256"
	"math/big"
	"testing"
	"time"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/flopsnet/flops/internal/beacon"
)

// Network is a test drand network.
type Network struct {
	Genesis int64
	Period  uint32
	sk      *big.Int
}

// NewNetwork makes a network with a deterministic key derived from its genesis and
// period (tests stay reproducible).
func NewNetwork(t testing.TB, genesis int64, period uint32) *Network {
	t.Helper()
	return New(genesis, period)
}

// New is NewNetwork outside a test (the app's simulations sign rounds in their
// operations): the same key for the same genesis and period.
func New(genesis int64, period uint32) *Network {
	seed := sha256.Sum256([]byte{byte(genesis), byte(genesis >> 8), byte(genesis >> 16), byte(genesis >> 24), byte(period)})
	var e fr.Element
	e.SetBytes(seed[:])
	sk := new(big.Int)
	e.BigInt(sk)
	return &Network{Genesis: genesis, Period: period, sk: sk}
}

// PublicKey is the compressed group key (96 bytes).
func (n *Network) PublicKey() []byte {
	_, _, _, g2 := bls.Generators()
	var pk bls.G2Affine
	pk.ScalarMultiplication(&g2, n.sk)
	b := pk.Bytes()
	return b[:]
}

// PublicKeyPoint is the decoded group key.
func (n *Network) PublicKeyPoint(t testing.TB) bls.G2Affine {
	t.Helper()
	pk, err := beacon.DrandPublicKey(n.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	return pk
}

// Sign returns a round's signature (48 bytes).
func (n *Network) Sign(t testing.TB, round uint64) []byte {
	t.Helper()
	sig, err := n.SignRound(round)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// SignRound is Sign outside a test.
func (n *Network) SignRound(round uint64) ([]byte, error) {
	h, err := beacon.DrandMessage(round)
	if err != nil {
		return nil, err
	}
	var s bls.G1Affine
	s.ScalarMultiplication(&h, n.sk)
	b := s.Bytes()
	return b[:], nil
}

// Randomness is a round's randomness (sha256 of its signature).
func (n *Network) Randomness(t testing.TB, round uint64) [32]byte {
	return sha256.Sum256(n.Sign(t, round))
}

// RoundAt is the latest round published at t.
func (n *Network) RoundAt(t time.Time) uint64 { return beacon.DrandRoundAt(n.Genesis, n.Period, t) }
