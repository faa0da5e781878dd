package agent

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/worker/config"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// poolMarket answers the pool queries a worker's pool loop asks from its open pools,
// each with open units and no member, all in one page.
type poolMarket struct {
	markettypes.QueryClient
	pools []markettypes.Pool
}

func (m *poolMarket) Pools(context.Context, *markettypes.QueryPoolsRequest, ...grpc.CallOption) (*markettypes.QueryPoolsResponse, error) {
	return &markettypes.QueryPoolsResponse{Pools: m.pools, Pagination: &query.PageResponse{}}, nil
}

func (m *poolMarket) PoolMembers(context.Context, *markettypes.QueryPoolMembersRequest, ...grpc.CallOption) (*markettypes.QueryPoolMembersResponse, error) {
	return &markettypes.QueryPoolMembersResponse{Pagination: &query.PageResponse{}}, nil
}

// The joins still on their way count towards pools.max_joined as the pools joined do:
// with max_joined 2 and one join on its way, the worker joins one more of four pools
// with work; with two on their way, none.
func TestJoinsInFlightCountTowardsMaxJoined(t *testing.T) {
	node := gfltypes.Node{
		Id: 1, Operator: sdk.AccAddress(make([]byte, 20)).String(), GpuClass: "A100-40GB", Region: "eu-west", Status: gfltypes.NODE_STATUS_ACTIVE,
		Workloads: []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_INFERENCE}, Runtimes: []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN},
		Gpus: []gfltypes.GpuInfo{{Model: "NVIDIA A100", MemoryMib: 40960, ComputeCapability: "8.0", TensorCores: true}},
	}
	m := &poolMarket{}
	for id := uint64(1); id <= 4; id++ {
		m.pools = append(m.pools, markettypes.Pool{Id: id, Owner: "client", Status: markettypes.POOL_STATUS_OPEN, OpenUnits: 1,
			Spec: markettypes.PoolSpec{Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: gfltypes.RUNTIME_BUILTIN, Requirements: markettypes.Requirements{GpuCount: 1}}})
	}
	joins := func(inflight ...string) []string {
		a := &Agent{
			o: Options{Chain: stubChain{addr: sdk.AccAddress(make([]byte, 20))}}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			market: m, node: node, joined: map[uint64]bool{}, waiting: map[uint64]bool{}, idleSince: map[uint64]int64{},
			poolSpecs: map[uint64]markettypes.PoolSpec{}, claims: map[string]*claim{}, inflight: map[string]bool{},
		}
		a.cfg.Pools = config.Pools{Auto: true, MaxJoined: 2, MaxClaims: 1}
		for _, what := range inflight {
			a.inflight[what] = true
		}
		var whats []string
		for _, act := range a.poolActions(context.Background(), 10) {
			whats = append(whats, act.what)
		}
		return whats
	}
	require.Equal(t, []string{"join pool 1", "join pool 2"}, joins())
	require.Equal(t, []string{"join pool 1"}, joins("join pool 90", "bid on job 4"))
	require.Empty(t, joins("join pool 90", "join pool 91"))
}
