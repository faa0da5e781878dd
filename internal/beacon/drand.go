package beacon

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
)

// drand (https://drand.love) is a threshold BLS beacon: each round's signature is the
// network's unique signature over the round number, so nobody below the network's
// threshold can choose, bias or re-roll it, and anybody can check it against the group
// key. flops verifies the bls-unchained-g1-rfc9380 scheme, the League of Entropy's
// "quicknet" (3 s rounds):
//
//	message    = sha256(round as 8 bytes big-endian)
//	signature  = a compressed G1 point (48 bytes): sk * HashToG1(message, DrandDST)
//	public key = a compressed G2 point (96 bytes)
//	randomness = sha256(signature)
//
// The check is e(signature, G2 generator) == e(HashToG1(message), public key), with both
// points decoded strictly (on the curve, in the prime-order subgroup, not the identity):
// a signature plus a small-order point would pass the pairing equation alone.

// DrandDST is the hash-to-curve domain of the bls-unchained-g1-rfc9380 scheme.
const DrandDST = "BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_"

// Sizes of the scheme's encodings.
const (
	DrandPublicKeyBytes = bls.SizeOfG2AffineCompressed
	DrandSignatureBytes = bls.SizeOfG1AffineCompressed
)

// ErrBadDrandSignature is returned for a signature that does not verify.
var ErrBadDrandSignature = errors.New("drand: signature does not verify")

// DrandPublicKey decodes and checks a group public key.
func DrandPublicKey(pk []byte) (bls.G2Affine, error) {
	var p bls.G2Affine
	if len(pk) != DrandPublicKeyBytes {
		return p, fmt.Errorf("drand public key is %d bytes, must be %d (a compressed G2 point)", len(pk), DrandPublicKeyBytes)
	}
	if _, err := p.SetBytes(pk); err != nil {
		return p, fmt.Errorf("drand public key: %w", err)
	}
	if p.IsInfinity() || !p.IsInSubGroup() {
		return p, errors.New("drand public key: not a point of the prime-order subgroup")
	}
	return p, nil
}

// DrandMessage is the point a round's signature signs.
func DrandMessage(round uint64) (bls.G1Affine, error) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], round)
	m := sha256.Sum256(b[:])
	return bls.HashToG1(m[:], []byte(DrandDST))
}

// VerifyDrand checks a round's signature against the group public key and returns the
// round's randomness.
func VerifyDrand(pk bls.G2Affine, round uint64, sig []byte) ([32]byte, error) {
	if len(sig) != DrandSignatureBytes {
		return [32]byte{}, fmt.Errorf("drand signature is %d bytes, must be %d (a compressed G1 point)", len(sig), DrandSignatureBytes)
	}
	var s bls.G1Affine
	if _, err := s.SetBytes(sig); err != nil {
		return [32]byte{}, fmt.Errorf("drand signature: %w", err)
	}
	if s.IsInfinity() || !s.IsInSubGroup() {
		return [32]byte{}, errors.New("drand signature: not a point of the prime-order subgroup")
	}
	h, err := DrandMessage(round)
	if err != nil {
		return [32]byte{}, err
	}
	var negH bls.G1Affine
	negH.Neg(&h)
	_, _, _, g2 := bls.Generators()
	ok, err := bls.PairingCheck([]bls.G1Affine{s, negH}, []bls.G2Affine{g2, pk})
	if err != nil {
		return [32]byte{}, err
	}
	if !ok {
		return [32]byte{}, ErrBadDrandSignature
	}
	return sha256.Sum256(sig), nil
}

// DrandRoundAt is the latest round published at or before t: rounds start at genesis
// (round 1) and follow every period seconds; 0 before genesis.
func DrandRoundAt(genesis int64, period uint32, t time.Time) uint64 {
	if period == 0 || t.Unix() < genesis {
		return 0
	}
	return uint64(t.Unix()-genesis)/uint64(period) + 1
}

// DrandRoundTime is when a round is published.
func DrandRoundTime(genesis int64, period uint32, round uint64) time.Time {
	if round == 0 {
		return time.Unix(genesis, 0).UTC()
	}
	return time.Unix(genesis+int64(round-1)*int64(period), 0).UTC()
}
