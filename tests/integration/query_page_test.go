package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// TestListQueriesWithoutALimitAreNotCounted: every module's list queries, as the node
// serves them (the SDK's gRPC server, which the REST gateway calls), answer a request
// that names no page limit with a page of 100 and no count (internal/querypage), and
// count only when the request asks (count_total). The SDK's own default counted the
// whole list for such a request, which a big chain's node refuses at its query gas limit
// (TestWholeTableScanStopsAtQueryGasLimit); here each list holds a few entries, and the
// total shows whether they were counted. One query of each module's service, since the
// page is given where the module registers its service, for every method of it.
func TestListQueriesWithoutALimitAreNotCounted(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "p1", "p2"))
	bondAndRegister(t, a, "p1", 2)
	bondAndRegister(t, a, "p2", 2)
	a.MustDeliver("p1", &sstypes.MsgBond{Provider: a.Account("p1").String(), Amount: sdk.NewInt64Coin(udps, 3_000_000)})
	a.MustDeliver("p1", &sstypes.MsgUnbond{Provider: a.Account("p1").String(), Amount: sdk.NewInt64Coin(udps, 1_000_000)})
	a.MustDeliver("p1", &sstypes.MsgUnbond{Provider: a.Account("p1").String(), Amount: sdk.NewInt64Coin(udps, 2_000_000)})
	submit(t, a, gasJobSpec(a, 1))
	submit(t, a, gasJobSpec(a, 1))
	submit(t, a, gasJobSpec(a, 1))
	a.NextBlocks(3)
	// rewards as a distribution records them (the epochs' distributions take longer to
	// come than this test needs)
	a.Prepare(func(ctx sdk.Context) {
		for epoch := uint64(1); epoch <= 2; epoch++ {
			r := dpstypes.ProviderReward{Provider: a.Account("p1").String(), Epoch: epoch, Availability: sdkmath.NewInt(5), Work: sdkmath.NewInt(7)}
			require.NoError(t, a.DPSKeeper.Rewards.Set(ctx, collections.Join(a.Account("p1").Address, epoch), r))
		}
	})
	a.NextBlock()

	conn := a.GRPCConn(t)
	bg := context.Background()
	market, gfl := markettypes.NewQueryClient(conn), gfltypes.NewQueryClient(conn)
	ss, rep, dps := sstypes.NewQueryClient(conn), reputationtypes.NewQueryClient(conn), dpstypes.NewQueryClient(conn)
	p1 := a.Account("p1").String()

	// each list: its entries and the page's response, for a page request
	for name, list := range map[string]func(*query.PageRequest) (int, *query.PageResponse, error){
		"market jobs": func(pg *query.PageRequest) (int, *query.PageResponse, error) {
			r, err := market.Jobs(bg, &markettypes.QueryJobsRequest{Pagination: pg})
			if err != nil {
				return 0, nil, err
			}
			return len(r.Jobs), r.Pagination, nil
		},
		"gfl nodes": func(pg *query.PageRequest) (int, *query.PageResponse, error) {
			r, err := gfl.Nodes(bg, &gfltypes.QueryNodesRequest{Pagination: pg})
			if err != nil {
				return 0, nil, err
			}
			return len(r.Nodes), r.Pagination, nil
		},
		"staking-slash unbondings": func(pg *query.PageRequest) (int, *query.PageResponse, error) {
			r, err := ss.Unbondings(bg, &sstypes.QueryUnbondingsRequest{Provider: p1, Pagination: pg})
			if err != nil {
				return 0, nil, err
			}
			return len(r.Unbondings), r.Pagination, nil
		},
		"reputation ranked": func(pg *query.PageRequest) (int, *query.PageResponse, error) {
			r, err := rep.Ranked(bg, &reputationtypes.QueryRankedRequest{Pagination: pg})
			if err != nil {
				return 0, nil, err
			}
			return len(r.Scores), r.Pagination, nil
		},
		"dps provider rewards": func(pg *query.PageRequest) (int, *query.PageResponse, error) {
			r, err := dps.ProviderRewards(bg, &dpstypes.QueryProviderRewardsRequest{Provider: p1, Pagination: pg})
			if err != nil {
				return 0, nil, err
			}
			return len(r.Rewards), r.Pagination, nil
		},
	} {
		counted, page, err := list(&query.PageRequest{CountTotal: true})
		require.NoError(t, err, name)
		require.Positive(t, counted, "%s: the list has entries", name)
		require.Equal(t, uint64(counted), page.Total, "%s: counted when asked", name)
		for _, pg := range []*query.PageRequest{nil, {}, {Reverse: true}} {
			n, page, err := list(pg)
			require.NoError(t, err, name)
			require.Equal(t, counted, n, "%s: the page holds the list", name)
			require.Zero(t, page.Total, "%s, %v: no count unless asked", name, pg)
		}
		// a limit is the client's: the count too
		n, page, err := list(&query.PageRequest{Limit: 1, CountTotal: true})
		require.NoError(t, err, name)
		require.Equal(t, 1, n, name)
		require.Equal(t, uint64(counted), page.Total, name)
	}
}
