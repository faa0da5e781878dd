package pocp

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// This file is the worker side: solvers that may use goroutines. The state machine never
// calls anything here.

// ReferenceSolve is S computed the obvious way: for each round, every entry of A_t and
// B_t drawn by the formula of docs/pocp.md section 2, then the i-l-j triple loop in
// int32. It costs 2*n^2*r PRNG words and n^3*r multiply-adds on one core; it is for tests
// and benchmarks. It panics on an invalid challenge.
func ReferenceSolve(c Challenge) []int32 {
	if err := c.Validate(); err != nil {
		panic(err)
	}
	n := int(c.N)
	key := c.Key()
	s := make([]int32, n*n)
	a := make([]int8, n*n) // a[i*n+l] = A_t[i][l]
	b := make([]int8, n*n) // b[l*n+j] = B_t[l][j]
	for t := uint32(0); t < c.R; t++ {
		for i := 0; i < n; i++ {
			for l := 0; l < n; l++ {
				z := word(key, counter(c.N, t, 0, uint32(i), uint32(l/16)))
				a[i*n+l] = table[(z>>(4*(l%16)))&15]
			}
		}
		for l := 0; l < n; l++ {
			for j := 0; j < n; j++ {
				z := word(key, counter(c.N, t, 1, uint32(j), uint32(l/16)))
				b[l*n+j] = table[(z>>(4*(l%16)))&15]
			}
		}
		for i := 0; i < n; i++ {
			row := s[i*n : i*n+n]
			for l := 0; l < n; l++ {
				x := int32(a[i*n+l])
				bl := b[l*n : l*n+n]
				for j := range row {
					row[j] += x * int32(bl[j])
				}
			}
		}
	}
	return s
}

// The fast solver. D_t = A_t * B_t is computed with table lookups instead of
// multiplications, 8 columns per uint64 (one byte lane per column):
//
//   - B'_t = B_t + 2 (in [0,4]) is stored by rows, bRows[l*words + w] holding columns
//     8w..8w+7 of row l.
//   - The l axis is cut into pairs (l = 2p, 2p+1) and the pairs into blocks of 15. For a
//     block of 32 columns and a pair, a table row m = 5*m0 + m1 (m0, m1 in [0,4]) holds,
//     per column, (m0-2)*B[2p][j] + (m1-2)*B[2p+1][j] + 8, in [0,16].
//   - Row i of A_t is stored as one uint16 per pair, the index (p mod 15)*25 + m with
//     m = 5*(A[i][2p]+2) + (A[i][2p+1]+2) into its block's table, so adding the table row
//     it selects to a byte-lane accumulator is 2 l's x 8 columns of multiply-adds, plus 8.
//   - After a block of 15 pairs a lane holds <= 15*16 = 240 < 256; it is then spread into
//     16-bit lanes ("wide"), which hold <= 273 blocks (273*240 = 65520 < 65536) before
//     they are added to S.
//
// Each round adds sum_l A*B + 8*stride to S, stride being the pair count padded to a
// multiple of 15 (a padding pair reads a table built from zero B rows, so adds exactly 8).
// The 8*stride*r is taken off at the end; before that |S| <= 8*n*r < 2^25.
const (
	blockPairs     = 15
	slotEntries    = 25
	blockWords     = 4              // words (of 8 columns) per column block
	blockColumns   = 8 * blockWords // 32
	maxEpochBlocks = 273
	ones8          = 0x0101010101010101
)

// pairTable is one block of 15 pairs' lookup table for one column block: 12000 bytes.
type pairTable = [blockPairs * slotEntries][blockWords]uint64

// tableBlocks is the number of pair blocks whose tables are built at once: 3 * 12000
// bytes stays in a 48 KiB L1 data cache beside the A indices.
var tableBlocks = 3

// pairKernel sums, for two rows, the table rows selected by their 15 pair indices
// (each < 375); every byte lane of the results is <= 240.
func pairKernel(tb *pairTable, x0, x1 *[blockPairs]uint16) (c0, c1, c2, c3, d0, d1, d2, d3 uint64) {
	for q := 0; q < blockPairs; q++ {
		p := &tb[x0[q]]
		r := &tb[x1[q]]
		c0 += p[0]
		c1 += p[1]
		c2 += p[2]
		c3 += p[3]
		d0 += r[0]
		d1 += r[1]
		d2 += r[2]
		d3 += r[3]
	}
	return
}

// widen adds the byte lanes of c0..c3 to w as 16-bit lanes: w[2k] gets the even lanes
// of ck, w[2k+1] the odd ones.
func widen(w *[2 * blockWords]uint64, c0, c1, c2, c3 uint64) {
	w[0] += c0 & lanesFF
	w[1] += (c0 >> 8) & lanesFF
	w[2] += c1 & lanesFF
	w[3] += (c1 >> 8) & lanesFF
	w[4] += c2 & lanesFF
	w[5] += (c2 >> 8) & lanesFF
	w[6] += c3 & lanesFF
	w[7] += (c3 >> 8) & lanesFF
}

// unwiden adds the 16-bit lanes of w to the 32 entries of out, in column order.
func unwiden(out []int32, w *[2 * blockWords]uint64) {
	out = out[:blockColumns]
	for k := 0; k < blockWords; k++ {
		even, odd := w[2*k], w[2*k+1]
		o := out[8*k : 8*k+8]
		o[0] += int32(even & 0xFFFF)
		o[1] += int32(odd & 0xFFFF)
		o[2] += int32((even >> 16) & 0xFFFF)
		o[3] += int32((odd >> 16) & 0xFFFF)
		o[4] += int32((even >> 32) & 0xFFFF)
		o[5] += int32((odd >> 32) & 0xFFFF)
		o[6] += int32(even >> 48)
		o[7] += int32(odd >> 48)
	}
}

// solver holds one challenge's buffers; a round overwrites aIdx and bRows.
type solver struct {
	c       Challenge
	key     uint64
	n       int
	words   int      // n/8: uint64 words per row of B'
	blocks  int      // ceil((n/2) / 15): pair blocks per row
	stride  int      // 15*blocks: pairs per row of aIdx, padded
	aIdx    []uint16 // n rows of stride pair indices
	bRows   []uint64 // n rows of B', words per row
	s       []int32
	scratch []solverScratch
}

// solverScratch is one goroutine's tables and wide accumulators.
type solverScratch struct {
	tables []pairTable
	wide   [][2 * blockWords]uint64 // one per row
}

// Solve computes S for a valid challenge with workers goroutines (workers < 1 means
// GOMAXPROCS): per round the rows of A, the columns of B and the 32-column blocks of the
// product are shared out among them. The result equals ReferenceSolve's and does not
// depend on workers. Memory: 6*n^2 bytes plus 64*n + 36 KiB per worker. It checks ctx
// between rounds and between column blocks, and then returns ctx's error.
func Solve(ctx context.Context, c Challenge, workers int) ([]int32, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	n := int(c.N)
	blocks := (n/2 + blockPairs - 1) / blockPairs
	sv := &solver{
		c:      c,
		key:    c.Key(),
		n:      n,
		words:  n / 8,
		blocks: blocks,
		stride: blockPairs * blocks,
		bRows:  make([]uint64, n*(n/8)),
		s:      make([]int32, n*n),
	}
	sv.aIdx = make([]uint16, n*sv.stride)
	sv.scratch = make([]solverScratch, workers)
	for w := range sv.scratch {
		sv.scratch[w] = solverScratch{
			tables: make([]pairTable, tableBlocks),
			wide:   make([][2 * blockWords]uint64, n),
		}
	}
	for t := uint32(0); t < c.R; t++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("pocp: solve of n = %d, r = %d stopped before round %d: %w", c.N, c.R, t, err)
		}
		parallelRanges(workers, n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sv.drawRowA(t, i)
			}
		})
		parallelRanges(workers, n/8, func(lo, hi int) {
			for g := lo; g < hi; g++ {
				sv.drawColumnsB(t, g)
			}
		})
		var stopped atomic.Bool
		parallel(workers, n/blockColumns, func(w, block int) {
			if stopped.Load() || ctx.Err() != nil {
				stopped.Store(true)
				return
			}
			sv.multiplyBlock(&sv.scratch[w], block)
		})
		if stopped.Load() {
			return nil, fmt.Errorf("pocp: solve of n = %d, r = %d stopped in round %d: %w", c.N, c.R, t, context.Cause(ctx))
		}
	}
	pad := int32(8 * sv.stride * int(c.R))
	parallelRanges(workers, n, func(lo, hi int) {
		for x := lo * n; x < hi*n; x++ {
			sv.s[x] -= pad
		}
	})
	return sv.s, nil
}

// drawRowA writes row i of A_t as pair indices. Word blk holds l = 16blk..16blk+15,
// that is pairs p = 8blk..8blk+7: pair 8blk+q is (entry 2q, entry 2q+1), byte q of the
// even and of the odd decoded lanes.
func (sv *solver) drawRowA(t uint32, i int) {
	row := sv.aIdx[i*sv.stride : (i+1)*sv.stride]
	ctr := counter(sv.c.N, t, 0, uint32(i), 0)
	for blk := 0; blk < sv.n/16; blk++ {
		z := word(sv.key, ctr+uint64(blk))
		m := decode(z&lanes0F)*5 + decode((z>>4)&lanes0F) // bytes <= 24
		out := row[8*blk : 8*blk+8]
		for q := range out {
			p := 8*blk + q
			out[q] = uint16((p%blockPairs)*slotEntries) + uint16((m>>(8*q))&0xFF)
		}
	}
	for p := sv.n / 2; p < sv.stride; p++ {
		row[p] = uint16((p % blockPairs) * slotEntries) // padding: any row of the slot reads 8
	}
}

// drawColumnsB writes columns 8g..8g+7 of B'_t into byte lanes 0..7 of word g of every
// row of bRows.
func (sv *solver) drawColumnsB(t uint32, g int) {
	for blk := 0; blk < sv.n/16; blk++ {
		var out [16]uint64 // rows l = 16blk+e
		for k := 0; k < 8; k++ {
			z := word(sv.key, counter(sv.c.N, t, 1, uint32(8*g+k), uint32(blk)))
			even := decode(z & lanes0F)
			odd := decode((z >> 4) & lanes0F)
			for q := 0; q < 8; q++ {
				out[2*q] |= ((even >> (8 * q)) & 0xFF) << (8 * k)
				out[2*q+1] |= ((odd >> (8 * q)) & 0xFF) << (8 * k)
			}
		}
		for e, v := range out {
			sv.bRows[(16*blk+e)*sv.words+g] = v
		}
	}
}

// multiplyBlock adds D_t + 8*stride restricted to columns 32*block .. 32*block+31 into S.
func (sv *solver) multiplyBlock(sc *solverScratch, block int) {
	n, stride := sv.n, sv.stride
	w0 := block * blockWords
	kb := len(sc.tables)
	epoch := maxEpochBlocks / kb * kb
	for e0 := 0; e0 < sv.blocks; e0 += epoch {
		e1 := min(e0+epoch, sv.blocks)
		clear(sc.wide)
		for s0 := e0; s0 < e1; s0 += kb {
			s1 := min(s0+kb, e1)
			for s := s0; s < s1; s++ {
				sv.buildTable(&sc.tables[s-s0], s, w0)
			}
			lo, hi := blockPairs*s0, blockPairs*s1
			for i := 0; i < n; i += 2 {
				x0 := sv.aIdx[i*stride+lo : i*stride+hi]
				x1 := sv.aIdx[(i+1)*stride+lo : (i+1)*stride+hi]
				wide0, wide1 := &sc.wide[i], &sc.wide[i+1]
				for s := range s1 - s0 {
					c0, c1, c2, c3, d0, d1, d2, d3 := pairKernel(&sc.tables[s],
						(*[blockPairs]uint16)(x0[blockPairs*s:]), (*[blockPairs]uint16)(x1[blockPairs*s:]))
					widen(wide0, c0, c1, c2, c3)
					widen(wide1, d0, d1, d2, d3)
				}
			}
		}
		for i := 0; i < n; i++ {
			unwiden(sv.s[i*n+8*w0:], &sc.wide[i])
		}
	}
}

// buildTable fills tb for pair block s and the column block starting at word w0: row
// 5*m0 + m1 of slot q is (m0-2)*B[2p] + (m1-2)*B[2p+1] + 8 per lane for p = 15s+q, with
// zero B rows past the last pair. With b' = B+2 the row is
// 8 + (m0-2)*(b0'-2) + (m1-2)*(b1'-2), reached from (m0, m1) = (0, 0), which is
// 16 - 2*b0' - 2*b1', by adding b0'-2 per step of m0 and b1'-2 per step of m1. Each
// lane of every row is in [0,16], so the uint64 sums (mod 2^64) are exactly those lanes.
func (sv *solver) buildTable(tb *pairTable, s, w0 int) {
	for q := 0; q < blockPairs; q++ {
		p := blockPairs*s + q
		var r0, r1 []uint64
		if p < sv.n/2 {
			r0 = sv.bRows[2*p*sv.words+w0 : 2*p*sv.words+w0+blockWords]
			r1 = sv.bRows[(2*p+1)*sv.words+w0 : (2*p+1)*sv.words+w0+blockWords]
		}
		slot := (*[slotEntries][blockWords]uint64)(tb[q*slotEntries:])
		for k := 0; k < blockWords; k++ {
			v0, v1 := uint64(2*ones8), uint64(2*ones8) // B = 0
			if r0 != nil {
				v0, v1 = r0[k], r1[k]
			}
			d0, d1 := v0-2*ones8, v1-2*ones8
			row := 16*ones8 - 2*(v0+v1)
			for m0 := 0; m0 < 5; m0++ {
				e := row
				for m1 := 0; m1 < 5; m1++ {
					slot[5*m0+m1][k] = e
					e += d1
				}
				row += d0
			}
		}
	}
}

// parallel runs body(worker, item) for every item in [0, count), handing items out in
// increasing order to min(workers, count) goroutines (workers < 1 means GOMAXPROCS);
// worker is in [0, workers). It returns when every call has returned.
func parallel(workers, count int, body func(worker, item int)) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, count)
	if workers <= 1 {
		for item := 0; item < count; item++ {
			body(0, item)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func(w int) { // nolint:determinism: worker-side solver, never called by the state machine
			defer wg.Done()
			for {
				item := int(next.Add(1) - 1)
				if item >= count {
					return
				}
				body(w, item)
			}
		}(w)
	}
	wg.Wait()
}

// parallelRanges runs body over [0, count) cut into contiguous ranges, on up to workers
// goroutines (workers < 1 means GOMAXPROCS).
func parallelRanges(workers, count int, body func(lo, hi int)) {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	if count <= 0 {
		return
	}
	pieces := min(count, 8*workers)
	parallel(workers, pieces, func(_, piece int) {
		body(piece*count/pieces, (piece+1)*count/pieces)
	})
}
