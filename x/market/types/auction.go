package types

import (
	"errors"
	"fmt"
	"math/big"
	"slices"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"
)

// AuctionBid is one node's offer: up to Quantity tasks at Price udps per task, weighed by
// the node's reputation factor in (0, 1] (1 = neutral).
type AuctionBid struct {
	NodeID   uint64
	Price    sdkmath.Int
	Quantity uint32
	Factor   sdkmath.LegacyDec
}

// AuctionFill is a winning bid: Tasks tasks paid Pay udps each.
type AuctionFill struct {
	NodeID uint64
	Tasks  uint32
	Pay    sdkmath.Int
}

// ClearingResult is the outcome of ClearAuction.
type ClearingResult struct {
	// Fills are the winning bids in fill order (cheapest effective price first); every
	// fill has Tasks >= 1.
	Fills []AuctionFill
	// Filled is the sum of Fills[i].Tasks = min(tasks, sum of bid quantities).
	Filled uint32
	// ClearingEff is the effective price (udps per task divided by reputation factor) of the
	// first losing unit, or maxPrice when none lost.
	ClearingEff sdkmath.LegacyDec
	// NoneLost is true when every offered unit was filled (total quantity <= tasks).
	NoneLost bool
}

// ClearAuction clears a job's AUCTION: it fills up to tasks tasks with the cheapest bids by
// reputation-weighted price and pays every winner the uniform clearing price (DESIGN.md
// section 4, x/market, allocation modes).
//
// Formula, for bids i with price p_i (udps per task), quantity q_i and factor f_i:
//
//	eff_i = p_i / f_i                              effective price, LegacyDec
//	order: eff ascending; ties: f descending, then NodeID ascending
//	x_i   = min(q_i, tasks - sum of x_j over the bids j before i)     greedy fill
//	L     = the first unit not filled in that order: the unfilled rest of the partially
//	        filled bid, else the first bid with x = 0
//	ClearingEff = eff_L, or maxPrice (NoneLost) when sum_i q_i <= tasks
//	pay_i = maxPrice                                               if NoneLost
//	pay_i = min(maxPrice, max(p_i, floor(eff_L * f_i)))            otherwise
//
// Rules:
//  1. Every bid has 0 < Price <= maxPrice, Quantity >= 1, 0 < Factor <= 1 and a NodeID no
//     other bid has; tasks >= 1; maxPrice > 0; eff_i < 2^256 (LegacyDec's range, only
//     reachable with an absurd maxPrice). Otherwise a zero result and an error wrapping
//     ErrInvalidBid (a bad bid, named by input position and NodeID) or ErrInvalidJobSpec
//     (bad tasks or maxPrice). Errors are errorsmod wraps, so the registered ABCI code
//     survives (a fmt.Errorf %w wrap would report code 1, internal, to a client).
//  2. The order is total and uses only the bids' values, so the input order never matters.
//     Effective prices are compared exactly, as fractions (p_i*f_j <=> p_j*f_i), so two
//     different prices-per-reputation whose 18-decimal quotients happen to round to the
//     same LegacyDec are still ordered by their true value. Rounding is monotone, so the
//     exact order is also sorted by the rounded eff.
//  3. The greedy fill is the exact optimum of the cost LP
//     min sum_i eff_i*x_i s.t. sum_i x_i = min(tasks, sum_i q_i), 0 <= x_i <= q_i, x_i integer:
//     in any allocation that fills a unit of some bid while a unit of an earlier bid is
//     idle, moving that task to the earlier bid never raises the cost, and repeating the
//     move ends at the greedy fill, so the greedy cost is the minimum (ties in eff can
//     make other allocations equally cheap; auction_test.go checks it by brute force).
//  4. floor(eff_L * f_i) is computed exactly as floor(p_L * f_i / f_L) on the integers
//     underlying the LegacyDecs, so no double rounding (Quo, then Mul) can shave a udps
//     off it. With neutral factors it is exactly p_L. Because a winner comes before L in
//     the order, p_i/f_i <= p_L/f_L, so p_i <= floor(p_L*f_i/f_L) and the max(p_i, ...)
//     never binds: it is kept as the individual-rationality guard the rule promises
//     (a winner is never paid less than its bid). The min(maxPrice, ...) binds when a
//     winner's factor is higher than the first loser's; no winner is ever paid more than
//     the job's max price, so escrow (tasks * maxPrice) always covers the fills.
//  5. Integer and decimal maths only; the result is a pure function of the arguments.
//
// Why bidding one's true cost pays, with neutral factors (f = 1): a winner's pay is the
// price of the first losing unit (or maxPrice when none lost), which its own bid does not
// set; its bid only decides whether it wins. Bidding below its cost c can only add wins
// paid less than c; bidding above c can only lose wins that paid at least c. So a bid at c
// is weakly dominant, and a winner is never paid below its bid. With reputation factors
// the same holds in effective-price terms: floor(p_L*f_i/f_L) is the highest whole-udps
// price at which bid i would still have won (up to exact ties), i.e. its critical price.
// The honest exception is the partially filled marginal bid: its own unfilled rest is the
// first losing unit, so its own price sets the pay of its filled tasks, and a provider
// bidding for several tasks gains by bidding above cost, or by cutting its Quantity so that
// a dearer bid becomes the first loser (the supply reduction of any uniform-price
// multi-unit auction). Truthfulness is exact only for bids that are never marginal, e.g.
// single-task bids.
func ClearAuction(bids []AuctionBid, tasks uint32, maxPrice sdkmath.Int) (ClearingResult, error) {
	if tasks == 0 {
		return ClearingResult{}, errorsmod.Wrap(ErrInvalidJobSpec, "auction tasks must be at least 1")
	}
	if maxPrice.IsNil() || !maxPrice.IsPositive() {
		return ClearingResult{}, errorsmod.Wrapf(ErrInvalidJobSpec, "auction max price %s must be positive", auctionIntString(maxPrice))
	}

	ranked := make([]rankedAuctionBid, len(bids))
	seen := make(map[uint64]int, len(bids)) // membership only; never iterated
	for i, b := range bids {
		if err := validateAuctionBid(b, maxPrice); err != nil {
			return ClearingResult{}, errorsmod.Wrapf(ErrInvalidBid, "bid %d (node %d): %s", i, b.NodeID, err)
		}
		if j, dup := seen[b.NodeID]; dup {
			return ClearingResult{}, errorsmod.Wrapf(ErrInvalidBid, "bid %d (node %d): node already bid in bid %d", i, b.NodeID, j)
		}
		seen[b.NodeID] = i
		ranked[i] = rankAuctionBid(b)
	}
	slices.SortFunc(ranked, compareAuctionBids)

	res := ClearingResult{Fills: make([]AuctionFill, 0, len(ranked))}
	remaining := tasks
	loser := -1 // index in ranked of the bid holding the first losing unit
	for k := range ranked {
		if remaining == 0 {
			loser = k
			break
		}
		take := min(ranked[k].bid.Quantity, remaining)
		res.Fills = append(res.Fills, AuctionFill{NodeID: ranked[k].bid.NodeID, Tasks: take})
		remaining -= take
		if take < ranked[k].bid.Quantity {
			loser = k
			break
		}
	}
	res.Filled = tasks - remaining

	if loser < 0 {
		res.NoneLost = true
		res.ClearingEff = sdkmath.LegacyNewDecFromInt(maxPrice)
		for i := range res.Fills {
			res.Fills[i].Pay = sdkmath.NewIntFromBigInt(maxPrice.BigInt())
		}
		return res, nil
	}

	l := ranked[loser]
	res.ClearingEff = sdkmath.LegacyNewDecFromInt(l.bid.Price).Quo(l.bid.Factor)
	for i := range res.Fills {
		w := ranked[i] // fills are a prefix of ranked
		// floor(eff_L * f_i) = floor(p_L * f_i / f_L), exact.
		pay := new(big.Int).Mul(l.price, w.factor)
		pay.Quo(pay, l.factor)
		if pay.Cmp(w.price) < 0 {
			pay.Set(w.price)
		}
		if pay.Cmp(maxPrice.BigIntMut()) > 0 {
			pay.Set(maxPrice.BigIntMut())
		}
		res.Fills[i].Pay = sdkmath.NewIntFromBigInt(pay)
	}
	return res, nil
}

// rankedAuctionBid is a bid with its price and factor as the integers under the Int and the
// LegacyDec (factor scaled by 10^18), for exact comparisons.
type rankedAuctionBid struct {
	bid    AuctionBid
	price  *big.Int
	factor *big.Int
}

// CompareAuctionBids is ClearAuction's fill order of two valid bids (positive price and
// factor): negative when a fills before b, positive after, 0 for the same node.
func CompareAuctionBids(a, b AuctionBid) int {
	return compareAuctionBids(rankAuctionBid(a), rankAuctionBid(b))
}

// CheaperAuctionBid: a's effective price (price over factor) is below b's, exactly.
func CheaperAuctionBid(a, b AuctionBid) bool {
	return compareEffective(rankAuctionBid(a), rankAuctionBid(b)) < 0
}

// compareEffective compares a.price/a.factor with b.price/b.factor (factors positive),
// exactly, by cross-multiplying.
func compareEffective(a, b rankedAuctionBid) int {
	return new(big.Int).Mul(a.price, b.factor).Cmp(new(big.Int).Mul(b.price, a.factor))
}

func rankAuctionBid(b AuctionBid) rankedAuctionBid {
	return rankedAuctionBid{bid: b, price: b.Price.BigInt(), factor: b.Factor.BigInt()}
}

// compareAuctionBids is the fill order: effective price ascending, then factor descending, then
// NodeID ascending. NodeIDs are distinct, so the order is total.
func compareAuctionBids(a, b rankedAuctionBid) int {
	if c := compareEffective(a, b); c != 0 {
		return c
	}
	if c := b.factor.Cmp(a.factor); c != 0 {
		return c
	}
	switch {
	case a.bid.NodeID < b.bid.NodeID:
		return -1
	case a.bid.NodeID > b.bid.NodeID:
		return 1
	}
	return 0
}

// maxAuctionEff is the largest effective price ClearAuction accepts: 2^256 - 1, so that the
// LegacyDec quotient stays inside LegacyDec's range and Quo cannot panic.
var maxAuctionEff = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))

// auctionDecScale is 10^18, the LegacyDec scale.
var auctionDecScale = sdkmath.LegacyOneDec().BigInt()

func validateAuctionBid(b AuctionBid, maxPrice sdkmath.Int) error {
	switch {
	case b.Price.IsNil() || !b.Price.IsPositive():
		return fmt.Errorf("price %s must be positive", auctionIntString(b.Price))
	case b.Price.GT(maxPrice):
		return fmt.Errorf("price %s is above the max price %s", b.Price, maxPrice)
	case b.Quantity == 0:
		return errors.New("quantity must be at least 1")
	case b.Factor.IsNil() || !b.Factor.IsPositive():
		return fmt.Errorf("factor %s must be positive", auctionDecString(b.Factor))
	case b.Factor.GT(sdkmath.LegacyOneDec()):
		return fmt.Errorf("factor %s is above 1", b.Factor)
	}
	// eff = price / (factor/10^18) <= maxAuctionEff  <=>  price * 10^18 <= maxAuctionEff * factor
	lhs := new(big.Int).Mul(b.Price.BigIntMut(), auctionDecScale)
	rhs := new(big.Int).Mul(maxAuctionEff, b.Factor.BigIntMut())
	if lhs.Cmp(rhs) > 0 {
		return fmt.Errorf("effective price %s / %s is out of range", b.Price, b.Factor)
	}
	return nil
}

func auctionIntString(i sdkmath.Int) string {
	if i.IsNil() {
		return "<nil>"
	}
	return i.String()
}

func auctionDecString(d sdkmath.LegacyDec) string {
	if d.IsNil() {
		return "<nil>"
	}
	return d.String()
}
