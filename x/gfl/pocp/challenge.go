package pocp

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// Sizes of docs/pocp.md sections 1 and 4.
const (
	// ChunkEntries is the number of int32 entries of S in one Merkle leaf.
	ChunkEntries = 256
	// ChunkBytes is the size of one leaf: ChunkEntries little-endian int32.
	ChunkBytes = 4 * ChunkEntries
	// MinN and MaxN bound the matrix size n; n is also a multiple of ChunkEntries, so a
	// row of S is a whole number of chunks.
	MinN = 256
	MaxN = 65536
	// ExactLimit is the exclusive bound on 4*n*r: every partial sum of S then has
	// magnitude below 2^24 and is exact in fp32 (fp16 inputs, fp32 accumulation).
	ExactLimit = 1 << 24
)

// Domain separators of the hashes of docs/pocp.md sections 1, 2 and 5.
const (
	domainChallenge = "flops/pocp/challenge"
	domainKey       = "flops/pocp/key"
	domainSample    = "flops/pocp/sample"
)

// SplitMix64 constants (docs/pocp.md section 2).
const (
	golden = 0x9E3779B97F4A7C15
	mix1   = 0xBF58476D1CE4E5B9
	mix2   = 0x94D049BB133111EB
)

// table maps a nibble to a matrix entry; table[v] == ((5v+2)>>4) - 2 for every v < 16,
// the closed form the SWAR decoders below use.
var table = [16]int8{-2, -2, -2, -1, -1, -1, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2}

// Challenge is one PoCP challenge: compute S = sum_{t<R} A_t * B_t for the N x N matrices
// drawn from Seed. Only a challenge that passes Validate has defined answers; the methods
// below assume one and do not check it.
type Challenge struct {
	Seed [32]byte
	N    uint32 // matrix size, a multiple of 256 in [MinN, MaxN]
	R    uint32 // rounds, >= 1, with 4*N*R < ExactLimit
}

// Validate reports whether (N, R) is a legal challenge size (docs/pocp.md section 1),
// wrapping ErrBadSize otherwise.
func (c Challenge) Validate() error {
	if c.N < MinN || c.N > MaxN || c.N%ChunkEntries != 0 {
		return fmt.Errorf("n = %d is not a multiple of %d in [%d, %d]: %w", c.N, ChunkEntries, MinN, MaxN, ErrBadSize)
	}
	if c.R < 1 {
		return fmt.Errorf("r = %d is below 1: %w", c.R, ErrBadSize)
	}
	if 4*uint64(c.N)*uint64(c.R) >= ExactLimit {
		return fmt.Errorf("4*n*r = 4*%d*%d is not below 2^24: %w", c.N, c.R, ErrBadSize)
	}
	return nil
}

// ChallengeSeed is sha256("flops/pocp/challenge" || blockHash || nodeID (8 bytes BE) ||
// nonce (8 bytes BE)), blockHash being the hash of the block at which the challenge is
// issued.
func ChallengeSeed(blockHash []byte, nodeID, nonce uint64) [32]byte {
	h := sha256.New()
	h.Write([]byte(domainChallenge))
	h.Write(blockHash)
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], nodeID)
	binary.BigEndian.PutUint64(b[8:16], nonce)
	h.Write(b[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Key is the PRNG key: the first 8 bytes, little-endian, of sha256("flops/pocp/key" ||
// seed). It costs one SHA-256; hot loops compute it once.
func (c Challenge) Key() uint64 {
	h := sha256.New()
	h.Write([]byte(domainKey))
	h.Write(c.Seed[:])
	var sum [32]byte
	h.Sum(sum[:0])
	return binary.LittleEndian.Uint64(sum[0:8])
}

// mix is SplitMix64's finaliser.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * mix1
	z = (z ^ z>>27) * mix2
	return z ^ z>>31
}

// word is the PRNG word for counter ctr; its nibble e (bits 4e..4e+3) is entry e.
func word(key, ctr uint64) uint64 {
	return mix(key ^ ctr*golden)
}

// counter is ((t*2 + m) * n + row) * (n/16) + blk: m is 0 for A (row = i) and 1 for B
// (row = j), blk = l/16. For a valid challenge it is below 2*r*n*n/16 < 2^43.
func counter(n, t, m, row, blk uint32) uint64 {
	nn := uint64(n)
	return ((uint64(t)*2+uint64(m))*nn+uint64(row))*(nn/16) + uint64(blk)
}

// A is A_t[i][l], in {-2..2}, for t < R and i, l < N. It costs one SHA-256 (the key)
// and one PRNG word.
func (c Challenge) A(t, i, l uint32) int8 {
	z := word(c.Key(), counter(c.N, t, 0, i, l/16))
	return table[(z>>(4*(l%16)))&15]
}

// B is B_t[l][j], in {-2..2}, for t < R and l, j < N: matrix 1, line j, so B is drawn by
// columns.
func (c Challenge) B(t, l, j uint32) int8 {
	z := word(c.Key(), counter(c.N, t, 1, j, l/16))
	return table[(z>>(4*(l%16)))&15]
}

// SWAR constants: 8 byte lanes.
const (
	lanes0F = 0x0F0F0F0F0F0F0F0F
	lanes02 = 0x0202020202020202
	lanesFF = 0x00FF00FF00FF00FF
	ones16  = 0x0001000100010001
)

// decode maps 8 byte lanes holding nibbles v in [0,15] to 8 byte lanes holding
// table[v]+2 = (5v+2)>>4 in [0,4]. 5v+2 <= 77, so no lane carries into the next.
func decode(x uint64) uint64 {
	return ((x<<2 + x + lanes02) >> 4) & lanes0F
}

// dot8 is sum_k a_k*b_k for a with lane k at byte k and b with lane k at byte 7-k, all
// lanes in [0,4]: byte 7 of the 64-bit product. Every byte coefficient of the product is
// a sum of at most 8 products <= 16, so <= 128: nothing carries between bytes.
func dot8(a, bRev uint64) uint64 {
	return (a * bRev) >> 56
}

// byteSum is the sum of the 8 byte lanes of v.
func byteSum(v uint64) uint64 {
	v = v&lanesFF + (v>>8)&lanesFF // 4 lanes of 16 bits, each <= 510
	return (v * ones16) >> 48
}

// Entry is S[i][j] = sum_{t<R} sum_{l<N} A_t[i][l] * B_t[l][j] for i, j < N: the chain's
// recomputation of one sampled entry. It draws N/16 words for row i of A_t and N/16 for
// column j of B_t per round (R*N/8 words, R*N multiply-adds, one SHA-256) and allocates
// nothing. |S_ij| <= 4*N*R < 2^24 for a valid challenge.
//
// Each word's 16 nibbles are decoded 8 at a time into byte lanes biased by +2 (values
// a', b' in [0,4]) and multiplied 8 lanes at a time (dot8); the bias is removed with
// sum a*b = sum a'b' - 2*(sum a' + sum b') + 4*count.
func (c Challenge) Entry(i, j uint32) int32 {
	key := c.Key()
	nb := c.N / 16
	var total int64
	for t := uint32(0); t < c.R; t++ {
		ga := counter(c.N, t, 0, i, 0) * golden
		gb := counter(c.N, t, 1, j, 0) * golden
		var prod, bias uint64
		for blk := uint32(0); blk < nb; {
			// Each word pair adds at most 4*4 = 16 to a lane of sums; 15 pairs stay
			// below 256.
			end := min(blk+15, nb)
			var sums uint64
			for ; blk < end; blk++ {
				za := mix(key ^ ga)
				zb := mix(key ^ gb)
				ga += golden
				gb += golden
				ae := decode(za & lanes0F)
				ao := decode((za >> 4) & lanes0F)
				be := bits.ReverseBytes64(decode(zb & lanes0F))
				bo := bits.ReverseBytes64(decode((zb >> 4) & lanes0F))
				prod += dot8(ae, be) + dot8(ao, bo)
				sums += ae + ao + be + bo
			}
			bias += byteSum(sums)
		}
		total += int64(prod) - 2*int64(bias) + 4*int64(c.N)
	}
	return int32(total)
}

// FLOPs is the work of the challenge, 2*N^3*R (one multiply and one add per term); at
// most 2*2^48*63 < 2^55 for a valid challenge, saturated at MaxUint64 otherwise.
func (c Challenge) FLOPs() uint64 {
	n := uint64(c.N)
	return mulSat(mulSat(2*n*n, n), uint64(c.R))
}

// LeafCount is the number of Merkle leaves, N*N/256 (at most 2^24).
func (c Challenge) LeafCount() uint64 {
	return uint64(c.N) * uint64(c.N) / ChunkEntries
}

// VerifyTerms is k*R*N, the multiply-adds VerifyReveal spends recomputing k sampled
// entries: what the chain charges gas for. It is 0 for k <= 0 and saturates at
// MaxUint64.
func VerifyTerms(c Challenge, k int) uint64 {
	if k <= 0 {
		return 0
	}
	return mulSat(mulSat(uint64(k), uint64(c.R)), uint64(c.N))
}

// mulSat is a*b, or MaxUint64 if that overflows.
func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}
