package types_test

import (
	"encoding/binary"
	"errors"
	"math/big"
	"math/rand"
	"slices"
	"testing"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/market/types"
)

func dec(s string) sdkmath.LegacyDec { return sdkmath.LegacyMustNewDecFromStr(s) }

func bid(node uint64, price int64, qty uint32, factor string) types.AuctionBid {
	return types.AuctionBid{NodeID: node, Price: sdkmath.NewInt(price), Quantity: qty, Factor: dec(factor)}
}

func fill(node uint64, tasks uint32, pay int64) types.AuctionFill {
	return types.AuctionFill{NodeID: node, Tasks: tasks, Pay: sdkmath.NewInt(pay)}
}

// Hand-computed clearings. maxPrice is 100 udps unless a case says otherwise; every case is
// also checked against the general properties and on every permutation of its bids.
func TestClearAuction(t *testing.T) {
	cases := []struct {
		name     string
		bids     []types.AuctionBid
		tasks    uint32
		maxPrice int64 // 0 means 100
		fills    []types.AuctionFill
		filled   uint32
		eff      string
		noneLost bool
	}{
		{
			// An auction nobody bid on is not an error: nothing is filled and nothing lost.
			name: "no bids", tasks: 3,
			fills: []types.AuctionFill{}, filled: 0, eff: "100", noneLost: true,
		},
		{
			// Fewer units offered than tasks: every bid wins all it offered, none lost, so
			// every winner is paid the max price whatever it bid.
			name:  "fewer bids than tasks",
			bids:  []types.AuctionBid{bid(1, 30, 1, "1"), bid(2, 20, 1, "1")},
			tasks: 3,
			fills: []types.AuctionFill{fill(2, 1, 100), fill(1, 1, 100)}, filled: 2, eff: "100", noneLost: true,
		},
		{
			// Offered units exactly equal tasks: every unit is filled, which counts as none
			// lost (no losing unit exists to set a price), so all are paid the max price.
			name:  "exact fill",
			bids:  []types.AuctionBid{bid(1, 10, 1, "1"), bid(2, 20, 1, "1"), bid(3, 30, 1, "1")},
			tasks: 3,
			fills: []types.AuctionFill{fill(1, 1, 100), fill(2, 1, 100), fill(3, 1, 100)}, filled: 3, eff: "100", noneLost: true,
		},
		{
			// The cheapest bid that got nothing (30) sets the uniform price; the dearer loser
			// (40) plays no part, and winners are paid above their own bids.
			name:  "losing bid sets the price",
			bids:  []types.AuctionBid{bid(1, 10, 1, "1"), bid(2, 20, 1, "1"), bid(3, 30, 1, "1"), bid(4, 40, 1, "1")},
			tasks: 2,
			fills: []types.AuctionFill{fill(1, 1, 30), fill(2, 1, 30)}, filled: 2, eff: "30",
		},
		{
			// Bid 2 gets 1 of its 3 tasks; its unfilled rest is the first losing unit, so its
			// own price (25) is the clearing price, for itself and for bid 1, not bid 3's 40.
			name:  "partially filled marginal bid sets the price",
			bids:  []types.AuctionBid{bid(1, 10, 1, "1"), bid(2, 25, 3, "1"), bid(3, 40, 1, "1")},
			tasks: 2,
			fills: []types.AuctionFill{fill(1, 1, 25), fill(2, 1, 25)}, filled: 2, eff: "25",
		},
		{
			// Multi-task bids are filled whole while tasks remain; bid 3 (20) is the first
			// bid to get nothing and sets the price; bid 4 is never reached.
			name:  "quantities above one",
			bids:  []types.AuctionBid{bid(1, 10, 2, "1"), bid(2, 15, 3, "1"), bid(3, 20, 2, "1"), bid(4, 30, 1, "1")},
			tasks: 5,
			fills: []types.AuctionFill{fill(1, 2, 20), fill(2, 3, 20)}, filled: 5, eff: "20",
		},
		{
			// The same bids in a scrambled order clear identically: the input order is irrelevant.
			name:  "input order irrelevant (shuffled quantities case)",
			bids:  []types.AuctionBid{bid(3, 20, 2, "1"), bid(4, 30, 1, "1"), bid(2, 15, 3, "1"), bid(1, 10, 2, "1")},
			tasks: 5,
			fills: []types.AuctionFill{fill(1, 2, 20), fill(2, 3, 20)}, filled: 5, eff: "20",
		},
		{
			// Quantities summing exactly to tasks: all units filled, none lost, max price.
			name:  "quantities exactly fill the tasks",
			bids:  []types.AuctionBid{bid(1, 10, 2, "1"), bid(2, 20, 3, "1")},
			tasks: 5,
			fills: []types.AuctionFill{fill(1, 2, 100), fill(2, 3, 100)}, filled: 5, eff: "100", noneLost: true,
		},
		{
			// eff = price/factor: node 1 (20/0.5 = 40) is cheapest by price but second by eff;
			// node 4 (35/0.5 = 70) is cheaper than node 3 (36/0.75 = 48) by price but ranks
			// after it. Node 3 is the first loser at eff 48; each winner is paid 48 in its own
			// units: node 2 48*1 = 48, node 1 48*0.5 = 24 (above its bid of 20).
			name:  "reputation factors change the order and the pay",
			bids:  []types.AuctionBid{bid(1, 20, 1, "0.5"), bid(2, 30, 1, "1"), bid(3, 36, 1, "0.75"), bid(4, 35, 1, "0.5")},
			tasks: 2,
			fills: []types.AuctionFill{fill(2, 1, 48), fill(1, 1, 24)}, filled: 2, eff: "48",
		},
		{
			// The first loser's eff (60/0.5 = 120) exceeds the max price: the neutral winner's
			// pay 120*1 is capped at 100. ClearingEff itself may exceed maxPrice.
			name:  "pay capped at the max price",
			bids:  []types.AuctionBid{bid(1, 30, 1, "1"), bid(2, 60, 1, "0.5")},
			tasks: 1,
			fills: []types.AuctionFill{fill(1, 1, 100)}, filled: 1, eff: "120",
		},
		{
			// eff: node 2 3/0.3 = 10, node 1 12, node 3 10/0.75 = 13.333...; node 3 loses.
			// Pay is floor(13.333... * f): node 2 floor(10*0.3/0.75) = 4 exactly (no double
			// rounding), node 1 floor(13.333...) = 13; both at least their bids (3, 12).
			name:  "pay truncated to whole udps in the winner's units",
			bids:  []types.AuctionBid{bid(1, 12, 1, "1"), bid(2, 3, 1, "0.3"), bid(3, 10, 1, "0.75")},
			tasks: 2,
			fills: []types.AuctionFill{fill(2, 1, 4), fill(1, 1, 13)}, filled: 2, eff: "13.333333333333333333",
		},
		{
			// The marginal bid with a factor: node 2 (15/0.5 = 30) gets 1 of 3 tasks and is
			// paid its own price 30*0.5 = 15; node 1 is paid the clearing eff 30*1 = 30.
			name:  "partially filled marginal bid with a reputation factor",
			bids:  []types.AuctionBid{bid(1, 10, 1, "1"), bid(2, 15, 3, "0.5")},
			tasks: 2,
			fills: []types.AuctionFill{fill(1, 1, 30), fill(2, 1, 15)}, filled: 2, eff: "30",
		},
		{
			// All three have eff 40. Factor first: node 3 (0.5) ranks last despite the lowest
			// id; then node id: 4 before 5. Node 3 is the first loser, pay 40*1 = 40.
			name:  "ties broken by factor then node id",
			bids:  []types.AuctionBid{bid(5, 40, 1, "1"), bid(3, 20, 1, "0.5"), bid(4, 40, 1, "1")},
			tasks: 2,
			fills: []types.AuctionFill{fill(4, 1, 40), fill(5, 1, 40)}, filled: 2, eff: "40",
		},
		{
			// Equal price and factor: the lower node id wins; the tied loser sets the price.
			name:  "full tie broken by node id",
			bids:  []types.AuctionBid{bid(9, 40, 1, "0.8"), bid(8, 40, 1, "0.8")},
			tasks: 1,
			fills: []types.AuctionFill{fill(8, 1, 40)}, filled: 1, eff: "50",
		},
		{
			// A bid at exactly the max price is valid and, with none lost, paid the max price.
			name:  "bid at the max price",
			bids:  []types.AuctionBid{bid(1, 100, 2, "0.25")},
			tasks: 3,
			fills: []types.AuctionFill{fill(1, 2, 100)}, filled: 2, eff: "100", noneLost: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			maxPrice := sdkmath.NewInt(100)
			if tc.maxPrice != 0 {
				maxPrice = sdkmath.NewInt(tc.maxPrice)
			}
			want := types.ClearingResult{Fills: tc.fills, Filled: tc.filled, ClearingEff: dec(tc.eff), NoneLost: tc.noneLost}
			forEachPermutation(tc.bids, func(bids []types.AuctionBid) {
				got, err := types.ClearAuction(bids, tc.tasks, maxPrice)
				require.NoError(t, err)
				requireSameResult(t, want, got)
				checkClearing(t, bids, tc.tasks, maxPrice, got)
			})
		})
	}
}

// Every invalid input is rejected with a zero result and an error that wraps the registered
// error (ErrInvalidBid for a bid, ErrInvalidJobSpec for tasks or the max price), keeps its
// ABCI code, and names the offending bid by input position and node id.
func TestClearAuctionRejects(t *testing.T) {
	ok := bid(1, 10, 1, "1")
	withPrice := func(p sdkmath.Int) types.AuctionBid {
		return types.AuctionBid{NodeID: 7, Price: p, Quantity: 1, Factor: dec("1")}
	}
	withFactor := func(f sdkmath.LegacyDec) types.AuctionBid {
		return types.AuctionBid{NodeID: 7, Price: sdkmath.NewInt(10), Quantity: 1, Factor: f}
	}
	huge := sdkmath.NewIntFromBigInt(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)))

	cases := []struct {
		name     string
		bids     []types.AuctionBid
		tasks    uint32
		maxPrice sdkmath.Int
		wantErr  *errorsmod.Error
		wantMsg  string
	}{
		// tasks must be at least 1.
		{"zero tasks", []types.AuctionBid{ok}, 0, sdkmath.NewInt(100), types.ErrInvalidJobSpec, "tasks must be at least 1"},
		// the max price must be positive: zero, negative and unset are all rejected.
		{"zero max price", []types.AuctionBid{ok}, 1, sdkmath.ZeroInt(), types.ErrInvalidJobSpec, "max price 0 must be positive"},
		{"negative max price", []types.AuctionBid{ok}, 1, sdkmath.NewInt(-5), types.ErrInvalidJobSpec, "max price -5 must be positive"},
		{"nil max price", []types.AuctionBid{ok}, 1, sdkmath.Int{}, types.ErrInvalidJobSpec, "max price <nil> must be positive"},
		// price must be in (0, maxPrice].
		{"zero price", []types.AuctionBid{ok, withPrice(sdkmath.ZeroInt())}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): price 0 must be positive"},
		{"negative price", []types.AuctionBid{ok, withPrice(sdkmath.NewInt(-1))}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): price -1 must be positive"},
		{"nil price", []types.AuctionBid{ok, withPrice(sdkmath.Int{})}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): price <nil> must be positive"},
		{"price above max price", []types.AuctionBid{ok, withPrice(sdkmath.NewInt(101))}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): price 101 is above the max price 100"},
		// quantity must be at least 1.
		{"zero quantity", []types.AuctionBid{ok, bid(7, 10, 0, "1")}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): quantity must be at least 1"},
		// factor must be in (0, 1].
		{"zero factor", []types.AuctionBid{ok, withFactor(sdkmath.LegacyZeroDec())}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): factor 0.000000000000000000 must be positive"},
		{"negative factor", []types.AuctionBid{ok, withFactor(dec("-0.5"))}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): factor -0.500000000000000000 must be positive"},
		{"nil factor", []types.AuctionBid{ok, withFactor(sdkmath.LegacyDec{})}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): factor <nil> must be positive"},
		{"factor above one", []types.AuctionBid{ok, withFactor(dec("1.000000000000000001"))}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 1 (node 7): factor 1.000000000000000001 is above 1"},
		// node ids must be distinct.
		{"duplicate node", []types.AuctionBid{bid(7, 10, 1, "1"), ok, bid(7, 20, 1, "0.5")}, 1, sdkmath.NewInt(100), types.ErrInvalidBid, "bid 2 (node 7): node already bid in bid 0"},
		// price/factor must fit LegacyDec (below 2^256) instead of panicking in Quo.
		{"effective price out of range", []types.AuctionBid{ok, {NodeID: 7, Price: huge, Quantity: 1, Factor: dec("0.5")}}, 1, huge, types.ErrInvalidBid, "bid 1 (node 7): effective price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := types.ClearAuction(tc.bids, tc.tasks, tc.maxPrice)
			require.ErrorIs(t, err, tc.wantErr)
			require.ErrorContains(t, err, tc.wantMsg)
			codespace, code, _ := errorsmod.ABCIInfo(err, false)
			require.Equal(t, tc.wantErr.Codespace(), codespace)
			require.Equal(t, tc.wantErr.ABCICode(), code)
			require.Equal(t, types.ClearingResult{}, got)
		})
	}
}

// Prices at the top of Int's range clear without overflow: eff 2^256-1 is accepted and the
// pay arithmetic (p_L * f_i, beyond 256 bits) does not panic.
func TestClearAuctionHugePrices(t *testing.T) {
	top := sdkmath.NewIntFromBigInt(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)))
	half := sdkmath.NewIntFromBigInt(new(big.Int).Lsh(big.NewInt(1), 255))
	bids := []types.AuctionBid{
		{NodeID: 1, Price: top, Quantity: 1, Factor: dec("1")},
		{NodeID: 2, Price: half, Quantity: 1, Factor: dec("1")},
	}
	got, err := types.ClearAuction(bids, 1, top)
	require.NoError(t, err)
	require.Len(t, got.Fills, 1)
	require.Equal(t, uint64(2), got.Fills[0].NodeID)
	require.True(t, got.Fills[0].Pay.Equal(top))
	require.True(t, got.ClearingEff.Equal(sdkmath.LegacyNewDecFromInt(top)))
	checkClearing(t, bids, 1, top, got)
}

// The greedy fill is the exact optimum of the cost LP
//
//	min sum_i eff_i*x_i  s.t.  sum_i x_i = min(tasks, sum_i q_i), 0 <= x_i <= q_i, x_i integer
//
// checked against brute-force enumeration of every feasible allocation on 5,000 random
// small instances (costs compared as exact LegacyDec values).
func TestClearAuctionGreedyIsLPOptimum(t *testing.T) {
	rng := rand.New(rand.NewSource(20260611))
	factors := []sdkmath.LegacyDec{dec("0.25"), dec("0.5"), dec("0.75"), dec("1")}
	maxPrice := sdkmath.NewInt(50)
	const instances = 5000
	var withLoser, multipleOptima int
	for range instances {
		n := 1 + rng.Intn(6)
		ids := rng.Perm(20)
		bids := make([]types.AuctionBid, n)
		for i := range bids {
			bids[i] = types.AuctionBid{
				NodeID:   uint64(ids[i]),
				Price:    sdkmath.NewInt(1 + rng.Int63n(50)),
				Quantity: uint32(1 + rng.Intn(3)),
				Factor:   factors[rng.Intn(len(factors))],
			}
		}
		tasks := uint32(1 + rng.Intn(8))

		res, err := types.ClearAuction(bids, tasks, maxPrice)
		require.NoError(t, err)
		if !res.NoneLost {
			withLoser++
		}

		eff := make(map[uint64]sdkmath.LegacyDec, n)
		var total uint32
		for _, b := range bids {
			eff[b.NodeID] = b.Price.ToLegacyDec().Quo(b.Factor)
			total += b.Quantity
		}
		greedy := sdkmath.LegacyZeroDec()
		for _, f := range res.Fills {
			greedy = greedy.Add(eff[f.NodeID].MulInt64(int64(f.Tasks)))
		}

		target := min(tasks, total)
		best, count := bruteForceMin(bids, eff, target)
		require.Equal(t, target, res.Filled)
		require.True(t, greedy.Equal(best), "greedy cost %s, optimum %s, bids %+v, tasks %d", greedy, best, bids, tasks)
		if count > 1 {
			multipleOptima++
		}
	}
	// The generator must exercise auctions with losers and with tied optima.
	require.Greater(t, withLoser, instances/4)
	require.Greater(t, multipleOptima, instances/100)
}

// bruteForceMin returns the least cost over every integer allocation filling exactly target
// tasks within the bids' quantities, and how many allocations reach it.
func bruteForceMin(bids []types.AuctionBid, eff map[uint64]sdkmath.LegacyDec, target uint32) (sdkmath.LegacyDec, int) {
	var best sdkmath.LegacyDec
	count := 0
	var walk func(i int, left uint32, cost sdkmath.LegacyDec)
	walk = func(i int, left uint32, cost sdkmath.LegacyDec) {
		if i == len(bids) {
			if left != 0 {
				return
			}
			switch {
			case best.IsNil() || cost.LT(best):
				best, count = cost, 1
			case cost.Equal(best):
				count++
			}
			return
		}
		for x := uint32(0); x <= min(bids[i].Quantity, left); x++ {
			walk(i+1, left-x, cost.Add(eff[bids[i].NodeID].MulInt64(int64(x))))
		}
	}
	walk(0, target, sdkmath.LegacyZeroDec())
	return best, count
}

// The clearing properties hold on random instances of every shape (neutral factors,
// a small factor set with many ties, arbitrary 18-decimal factors with large prices), and
// any shuffle of the bids clears identically.
func TestClearAuctionProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for range 3000 {
		bids, tasks, maxPrice := randomAuction(rng)
		res, err := types.ClearAuction(bids, tasks, maxPrice)
		require.NoError(t, err)
		checkClearing(t, bids, tasks, maxPrice, res)

		shuffled := slices.Clone(bids)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, err := types.ClearAuction(shuffled, tasks, maxPrice)
		require.NoError(t, err)
		requireSameResult(t, res, again)
	}
}

func randomAuction(rng *rand.Rand) ([]types.AuctionBid, uint32, sdkmath.Int) {
	mode := rng.Intn(3)
	maxPrice := int64(1 + rng.Intn(60))
	if mode == 2 {
		maxPrice = 1 + rng.Int63n(1_000_000_000_000_000)
	}
	small := []string{"0.1", "0.25", "0.3", "0.5", "0.75", "1"}
	n := rng.Intn(11)
	ids := rng.Perm(1000)
	bids := make([]types.AuctionBid, n)
	for i := range bids {
		var factor sdkmath.LegacyDec
		switch mode {
		case 0:
			factor = sdkmath.LegacyOneDec()
		case 1:
			factor = dec(small[rng.Intn(len(small))])
		default:
			factor = sdkmath.LegacyNewDecWithPrec(1+rng.Int63n(1_000_000_000_000_000_000), 18)
		}
		bids[i] = types.AuctionBid{
			NodeID:   uint64(ids[i]),
			Price:    sdkmath.NewInt(1 + rng.Int63n(maxPrice)),
			Quantity: uint32(1 + rng.Intn(5)),
			Factor:   factor,
		}
	}
	return bids, uint32(1 + rng.Intn(20)), sdkmath.NewInt(maxPrice)
}

// FuzzClearAuction decodes bytes into up to 8 bids (node ids from a small range so
// duplicates occur, prices up to one past the max, zero quantities and out-of-range factors
// possible) and a task count. ClearAuction must never panic; an error is one of the two
// registered errors with a zero result; a success satisfies every clearing property and
// does not depend on the bids' order.
func FuzzClearAuction(f *testing.F) {
	f.Add([]byte{3, 0, 100, 2, 1, 0, 10, 1, 0, 2, 0, 20, 1, 0})
	f.Add([]byte{5, 0, 50, 4, 1, 0, 10, 2, 1, 0, 1, 0, 0, 2, 0, 15, 3, 2, 0, 7, 161, 32, 3, 0, 20, 2, 0, 4, 0, 30, 1, 3, 0, 0, 0, 1})
	f.Add([]byte{1, 255, 255, 8, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := byteReader(data)
		tasks := uint32(r.next8() % 24)
		maxPrice := int64(r.next16()) - 1
		n := int(r.next8() % 9)
		bids := make([]types.AuctionBid, n)
		for i := range bids {
			node := uint64(r.next8() % 16)
			price := int64(r.next16()) % (max(maxPrice, 1) + 2)
			qty := uint32(r.next8() % 9)
			var factor sdkmath.LegacyDec
			if mode := r.next8(); mode%4 == 0 {
				factor = sdkmath.LegacyOneDec()
			} else {
				factor = sdkmath.LegacyNewDecWithPrec(int64(r.next32()%1_000_002), 6)
			}
			bids[i] = types.AuctionBid{NodeID: node, Price: sdkmath.NewInt(price), Quantity: qty, Factor: factor}
		}

		res, err := types.ClearAuction(bids, tasks, sdkmath.NewInt(maxPrice))
		if err != nil {
			require.True(t, errors.Is(err, types.ErrInvalidBid) || errors.Is(err, types.ErrInvalidJobSpec), "unexpected error %v", err)
			require.Equal(t, types.ClearingResult{}, res)
			return
		}
		checkClearing(t, bids, tasks, sdkmath.NewInt(maxPrice), res)

		reversed := slices.Clone(bids)
		slices.Reverse(reversed)
		again, err := types.ClearAuction(reversed, tasks, sdkmath.NewInt(maxPrice))
		require.NoError(t, err)
		requireSameResult(t, res, again)
	})
}

type byteReader []byte

func (r *byteReader) next8() byte {
	if len(*r) == 0 {
		return 0
	}
	b := (*r)[0]
	*r = (*r)[1:]
	return b
}

func (r *byteReader) next16() uint16 { return binary.BigEndian.Uint16([]byte{r.next8(), r.next8()}) }

func (r *byteReader) next32() uint32 {
	return binary.BigEndian.Uint32([]byte{r.next8(), r.next8(), r.next8(), r.next8()})
}

// checkClearing asserts every property a valid clearing has, computing the first losing
// unit independently of ClearAuction:
//   - sum of fills = Filled = min(tasks, total quantity); each fill in [1, its quantity];
//   - NoneLost iff total quantity <= tasks; then ClearingEff = maxPrice and all pay maxPrice;
//   - otherwise ClearingEff = eff of the cheapest bid with an unfilled unit, every winner's
//     eff <= ClearingEff, and pay = min(maxPrice, max(price, floor(ClearingEff*factor)))
//     with the LegacyDec product as the rule states it (ClearAuction computes it exactly);
//   - price <= pay <= maxPrice; fills in order of eff, then factor desc, then node id;
//   - all factors 1 and a unit lost: every winner is paid the first losing bid's price.
func checkClearing(t *testing.T, bids []types.AuctionBid, tasks uint32, maxPrice sdkmath.Int, res types.ClearingResult) {
	t.Helper()
	byNode := make(map[uint64]types.AuctionBid, len(bids))
	var total uint64
	neutral := true
	for _, b := range bids {
		byNode[b.NodeID] = b
		total += uint64(b.Quantity)
		neutral = neutral && b.Factor.Equal(sdkmath.LegacyOneDec())
	}
	eff := func(b types.AuctionBid) sdkmath.LegacyDec { return b.Price.ToLegacyDec().Quo(b.Factor) }

	filled := make(map[uint64]uint32, len(res.Fills))
	var sum uint64
	for k, f := range res.Fills {
		b, ok := byNode[f.NodeID]
		require.True(t, ok, "fill for unknown node %d", f.NodeID)
		_, dup := filled[f.NodeID]
		require.False(t, dup, "node %d filled twice", f.NodeID)
		require.GreaterOrEqual(t, f.Tasks, uint32(1))
		require.LessOrEqual(t, f.Tasks, b.Quantity)
		require.True(t, b.Price.LTE(f.Pay), "node %d paid %s below its bid %s", f.NodeID, f.Pay, b.Price)
		require.True(t, f.Pay.LTE(maxPrice), "node %d paid %s above the max price %s", f.NodeID, f.Pay, maxPrice)
		filled[f.NodeID] = f.Tasks
		sum += uint64(f.Tasks)
		if k > 0 {
			prev := byNode[res.Fills[k-1].NodeID]
			require.True(t, rankedBefore(prev, b, eff), "fill %d (node %d) out of order", k, f.NodeID)
		}
	}
	require.Equal(t, min(uint64(tasks), total), sum)
	require.Equal(t, sum, uint64(res.Filled))
	require.Equal(t, total <= uint64(tasks), res.NoneLost)

	if res.NoneLost {
		require.True(t, res.ClearingEff.Equal(maxPrice.ToLegacyDec()))
		for _, f := range res.Fills {
			require.True(t, f.Pay.Equal(maxPrice))
		}
		for _, b := range bids {
			require.Equal(t, b.Quantity, filled[b.NodeID], "node %d not fully filled though none lost", b.NodeID)
		}
		return
	}

	// The first losing unit: the first, in fill order, of the bids with an unfilled unit.
	var loser *types.AuctionBid
	partial := 0
	for _, b := range bids {
		if filled[b.NodeID] == b.Quantity {
			continue
		}
		if filled[b.NodeID] > 0 {
			partial++
		}
		if loser == nil || rankedBefore(b, *loser, eff) {
			loser = &b
		}
	}
	require.NotNil(t, loser)
	require.LessOrEqual(t, partial, 1, "more than one bid partially filled")
	require.True(t, res.ClearingEff.Equal(eff(*loser)), "clearing eff %s, first loser's eff %s", res.ClearingEff, eff(*loser))

	for _, f := range res.Fills {
		b := byNode[f.NodeID]
		require.True(t, eff(b).LTE(res.ClearingEff), "winner node %d eff %s above clearing eff %s", f.NodeID, eff(b), res.ClearingEff)
		literal := sdkmath.MinInt(maxPrice, sdkmath.MaxInt(b.Price, res.ClearingEff.Mul(b.Factor).TruncateInt()))
		require.True(t, f.Pay.Equal(literal), "node %d paid %s, rule gives %s", f.NodeID, f.Pay, literal)
		if neutral {
			require.True(t, f.Pay.Equal(loser.Price), "node %d paid %s, first losing bid's price %s", f.NodeID, f.Pay, loser.Price)
		}
	}
	for _, b := range bids {
		if filled[b.NodeID] < b.Quantity {
			require.True(t, res.ClearingEff.LTE(eff(b)), "losing node %d eff %s below clearing eff %s", b.NodeID, eff(b), res.ClearingEff)
		}
	}
}

// rankedBefore is the fill order on LegacyDec effective prices: eff ascending, factor
// descending, node id ascending.
func rankedBefore(a, b types.AuctionBid, eff func(types.AuctionBid) sdkmath.LegacyDec) bool {
	ea, eb := eff(a), eff(b)
	if !ea.Equal(eb) {
		return ea.LT(eb)
	}
	if !a.Factor.Equal(b.Factor) {
		return a.Factor.GT(b.Factor)
	}
	return a.NodeID < b.NodeID
}

func requireSameResult(t *testing.T, want, got types.ClearingResult) {
	t.Helper()
	require.Equal(t, want.Filled, got.Filled, "filled")
	require.Equal(t, want.NoneLost, got.NoneLost, "none lost")
	require.True(t, want.ClearingEff.Equal(got.ClearingEff), "clearing eff: want %s, got %s", want.ClearingEff, got.ClearingEff)
	require.Len(t, got.Fills, len(want.Fills), "fills: want %v, got %v", want.Fills, got.Fills)
	for i := range want.Fills {
		require.Equal(t, want.Fills[i].NodeID, got.Fills[i].NodeID, "fill %d node", i)
		require.Equal(t, want.Fills[i].Tasks, got.Fills[i].Tasks, "fill %d tasks", i)
		require.True(t, want.Fills[i].Pay.Equal(got.Fills[i].Pay), "fill %d pay: want %s, got %s", i, want.Fills[i].Pay, got.Fills[i].Pay)
	}
}

// forEachPermutation calls fn with every ordering of bids (Heap's algorithm on a copy).
func forEachPermutation(bids []types.AuctionBid, fn func([]types.AuctionBid)) {
	p := slices.Clone(bids)
	var gen func(k int)
	gen = func(k int) {
		if k <= 1 {
			fn(slices.Clone(p))
			return
		}
		gen(k - 1)
		for i := 0; i < k-1; i++ {
			if k%2 == 0 {
				p[i], p[k-1] = p[k-1], p[i]
			} else {
				p[0], p[k-1] = p[k-1], p[0]
			}
			gen(k - 1)
		}
	}
	gen(len(p))
}
