package agent

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/worker/bidder"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// auctionMarket answers OpenAuctions with its open jobs from the page key on (a job id,
// big-endian, as the chain's status index gives it), all in one page.
type auctionMarket struct {
	markettypes.QueryClient
	open []markettypes.Job
}

func (m *auctionMarket) OpenAuctions(_ context.Context, req *markettypes.QueryOpenAuctionsRequest, _ ...grpc.CallOption) (*markettypes.QueryOpenAuctionsResponse, error) {
	var from uint64
	if len(req.Pagination.Key) == 8 {
		from = binary.BigEndian.Uint64(req.Pagination.Key)
	}
	res := &markettypes.QueryOpenAuctionsResponse{Pagination: &query.PageResponse{}}
	for _, j := range m.open {
		if j.Id >= from {
			res.Jobs = append(res.Jobs, j)
		}
	}
	return res, nil
}

// fundedBank answers that the provider can spend funds udps (richBank: any deposit).
type fundedBank struct {
	banktypes.QueryClient
	funds int64
}

func (b fundedBank) SpendableBalanceByDenom(_ context.Context, req *banktypes.QuerySpendableBalanceByDenomRequest, _ ...grpc.CallOption) (*banktypes.QuerySpendableBalanceByDenomResponse, error) {
	c := sdk.Coin{Denom: req.Denom, Amount: sdkmath.NewInt(b.funds)}
	return &banktypes.QuerySpendableBalanceByDenomResponse{Balance: &c}, nil
}

var richBank = fundedBank{funds: 1 << 62}

// countingBidder counts its pricings, and bids nothing.
type countingBidder map[uint64]int

func (b countingBidder) Price(_ context.Context, o bidder.Offer) (bidder.Bid, error) {
	b[o.Job.Id]++
	return bidder.Bid{Reason: "counted"}, nil
}

// A worker remembers the auctions it priced, so as not to price them again when it reads
// them again (its node changed), and forgets them once they have closed: it remembered
// every auction it ever priced, memory that grew with the market for as long as it ran.
// Over 2,000 blocks of one auction a block, each open 50 blocks, each is priced once and
// at most the auctions of the last 151 blocks are remembered.
func TestWorkerForgetsClosedAuctions(t *testing.T) {
	node := gfltypes.Node{
		Id: 1, Operator: sdk.AccAddress(make([]byte, 20)).String(), GpuClass: "A100-40GB", Region: "eu-west", Status: gfltypes.NODE_STATUS_ACTIVE,
		Workloads: []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_BATCH}, Runtimes: []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN},
		Gpus: []gfltypes.GpuInfo{{Model: "NVIDIA A100", MemoryMib: 40960, ComputeCapability: "8.0", TensorCores: true}},
	}
	require.True(t, markettypes.SlotFromNode(node).Active)
	spec := markettypes.JobSpec{Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: gfltypes.RUNTIME_BUILTIN, Requirements: markettypes.Requirements{GpuCount: 1}}
	m := &auctionMarket{}
	priced := countingBidder{}
	a := &Agent{
		o: Options{Chain: stubChain{addr: sdk.AccAddress(make([]byte, 20))}, Bidder: priced}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		market: m, bank: richBank, node: node, bid: map[uint64]int64{}, pinned: map[string]uint64{},
	}
	const blocks, window = 2_000, 50
	most := 0
	for h := int64(1); h <= blocks; h++ {
		a.height = h
		m.open = slices.DeleteFunc(m.open, func(j markettypes.Job) bool { return j.AuctionCloseHeight <= h })
		m.open = append(m.open, markettypes.Job{Id: uint64(h), Owner: "client", Status: markettypes.JOB_STATUS_BIDDING, Spec: spec, AuctionCloseHeight: h + window})
		if h%500 == 0 {
			a.auctions.slot = nil // the node changed: every open auction is read again
		}
		require.Empty(t, a.bidActions(context.Background()))
		most = max(most, len(a.bid))
	}
	require.Len(t, priced, blocks, "every auction priced")
	for id, n := range priced {
		require.Equal(t, 1, n, "job %d priced once", id)
	}
	require.LessOrEqual(t, most, window+auctionForgetBlocks+1, "the auctions remembered")
	t.Logf("at most %d auctions remembered", most)
}

// bidAll bids on every offer at its job's max price.
type bidAll struct{}

func (bidAll) Price(_ context.Context, o bidder.Offer) (bidder.Bid, error) {
	return bidder.Bid{Price: o.Job.Spec.MaxPricePerTask.Amount, Quantity: 1}, nil
}

// The deposits of bids still on their way (their txs not yet in a block, so not yet
// locked) count against the provider's funds: with funds for three deposits and two
// bids in flight, the worker bids on one more auction and leaves the next for when
// deposits come back, where it bid on all of them and the chain refused those it could
// not fund (after which the worker, having marked them priced, never bid on them).
func TestBidsInFlightCountAgainstTheDeposits(t *testing.T) {
	node := gfltypes.Node{
		Id: 1, Operator: sdk.AccAddress(make([]byte, 20)).String(), GpuClass: "A100-40GB", Region: "eu-west", Status: gfltypes.NODE_STATUS_ACTIVE,
		Workloads: []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_BATCH}, Runtimes: []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN},
		Gpus: []gfltypes.GpuInfo{{Model: "NVIDIA A100", MemoryMib: 40960, ComputeCapability: "8.0", TensorCores: true}},
	}
	spec := markettypes.JobSpec{Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: gfltypes.RUNTIME_BUILTIN, Requirements: markettypes.Requirements{GpuCount: 1},
		MaxPricePerTask: sdk.NewInt64Coin("udps", 1_000)}
	m := &auctionMarket{}
	for id := uint64(1); id <= 4; id++ {
		m.open = append(m.open, markettypes.Job{Id: id, Owner: "client", Status: markettypes.JOB_STATUS_BIDDING, Spec: spec, AuctionCloseHeight: 100})
	}
	deposit := sdk.NewInt64Coin("udps", 10_000_000)
	a := &Agent{
		o: Options{Chain: stubChain{addr: sdk.AccAddress(make([]byte, 20))}, Bidder: bidAll{}}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		market: m, bank: fundedBank{funds: 3 * deposit.Amount.Int64()}, node: node, bid: map[uint64]int64{}, pinned: map[string]uint64{},
		params: markettypes.Params{BidDeposit: deposit}, inflight: map[string]bool{"bid on job 90": true, "bid on job 91": true, "join pool 3": true},
	}
	acts := a.bidActions(context.Background())
	require.Len(t, acts, 1, "one deposit left beside the two on their way")
	require.Equal(t, "bid on job 1", acts[0].what)

	a.inflight = map[string]bool{"bid on job 1": true}
	acts = a.bidActions(context.Background())
	require.Len(t, acts, 2, "the next two, from where the worker stopped")
	require.Equal(t, []string{"bid on job 2", "bid on job 3"}, []string{acts[0].what, acts[1].what})
}
