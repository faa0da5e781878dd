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

// richBank answers that the provider can fund any bid deposit.
type richBank struct{ banktypes.QueryClient }

func (richBank) SpendableBalanceByDenom(_ context.Context, req *banktypes.QuerySpendableBalanceByDenomRequest, _ ...grpc.CallOption) (*banktypes.QuerySpendableBalanceByDenomResponse, error) {
	c := sdk.NewCoin("udps", sdkmath.NewInt(1<<62))
	return &banktypes.QuerySpendableBalanceByDenomResponse{Balance: &c}, nil
}

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
		market: m, bank: richBank{}, node: node, bid: map[uint64]int64{}, pinned: map[string]uint64{},
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
