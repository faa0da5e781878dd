package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/dps/types"
)

// Five epochs of distributions with alice's node and work: the history, the latest and
// per-epoch emissions, their pagination, the pool, the era and the distribution in
// progress, as a client reads them.
func TestQueries(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.node(1, alice, 100)
	f.node(2, bob, 100)

	// Before any distribution.
	latest, err := f.qs.LatestEmission(f.ctx, &types.QueryLatestEmissionRequest{})
	require.NoError(t, err)
	require.False(t, latest.Found)
	_, err = f.qs.Emission(f.ctx, &types.QueryEmissionRequest{Epoch: 1})
	require.Equal(t, codes.NotFound, status.Code(err))
	pool, err := f.qs.Pool(f.ctx, &types.QueryPoolRequest{})
	require.NoError(t, err)
	require.Equal(t, poolAddr.String(), pool.Address)
	require.Equal(t, ints(1_000*dpsUnit), pool.Balance.Amount)
	require.True(t, pool.Owed.IsZero())
	era, err := f.qs.Era(f.ctx, &types.QueryEraRequest{})
	require.NoError(t, err)
	require.Zero(t, era.Era)
	require.Equal(t, "0.010000000000000000", era.Rate.String())
	require.Equal(t, f.ctx.BlockTime(), era.LastHalvingTime, "era 0 starts at genesis")
	require.Equal(t, ints(1_000*dpsUnit), era.PoolBaseline, "genesis funding is not replenishment")
	require.Equal(t, testParams().HalvingThreshold, era.RemainingGfl)

	for e := int64(1); e <= 5; e++ {
		f.addWork(uint64(e), alice, training, 1_000, e*dpsUnit)
		f.endEpoch(e)
		f.endBlock()
		if e == 5 {
			break
		}
		f.runUntilIdle(20)
	}
	f.endBlock() // the asks pass took the first block

	// Epoch 5 is in progress: it has paid alice's node and owes the rest.
	dist, err := f.qs.Distribution(f.ctx, &types.QueryDistributionRequest{})
	require.NoError(t, err)
	require.True(t, dist.InProgress)
	require.Equal(t, uint64(5), dist.Distribution.Epoch)
	require.Equal(t, types.DISTRIBUTION_PHASE_WORK_SUM, dist.Distribution.Phase)
	pool, err = f.qs.Pool(f.ctx, &types.QueryPoolRequest{})
	require.NoError(t, err)
	require.Equal(t, dist.Distribution.Owed(), pool.Owed)
	require.Equal(t, ints(400_000-200_000), pool.Owed, "E 0.4 DPS minus both nodes' 0.1 DPS")
	f.runUntilIdle(20)

	latest, err = f.qs.LatestEmission(f.ctx, &types.QueryLatestEmissionRequest{})
	require.NoError(t, err)
	require.True(t, latest.Found)
	require.Equal(t, uint64(5), latest.Distribution.Epoch)
	require.Equal(t, f.emission(3).Epoch, uint64(3))

	// Emissions: pages of 2, forward and reverse.
	var epochs []uint64
	var next []byte
	for {
		res, err := f.qs.Emissions(f.ctx, &types.QueryEmissionsRequest{Pagination: &query.PageRequest{Key: next, Limit: 2}})
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Distributions), 2)
		for _, d := range res.Distributions {
			epochs = append(epochs, d.Epoch)
		}
		if next = res.Pagination.NextKey; next == nil {
			break
		}
	}
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, epochs)
	rev, err := f.qs.Emissions(f.ctx, &types.QueryEmissionsRequest{Pagination: &query.PageRequest{Limit: 1, Reverse: true}})
	require.NoError(t, err)
	require.Equal(t, uint64(5), rev.Distributions[0].Epoch)

	// ProviderRewards: alice earned availability and work in each epoch; work is capped
	// at 4% of e DPS of fees: 40,000 * e udps.
	var rewards []types.ProviderReward
	next = nil
	for {
		res, err := f.qs.ProviderRewards(f.ctx, &types.QueryProviderRewardsRequest{
			Provider: alice.String(), Pagination: &query.PageRequest{Key: next, Limit: 2, CountTotal: next == nil},
		})
		require.NoError(t, err)
		if next == nil {
			require.Equal(t, uint64(5), res.Pagination.Total)
		}
		rewards = append(rewards, res.Rewards...)
		if next = res.Pagination.NextKey; next == nil {
			break
		}
	}
	require.Len(t, rewards, 5)
	for i, r := range rewards {
		e := int64(i + 1)
		require.Equal(t, uint64(e), r.Epoch)
		require.Equal(t, ints(100_000), r.Availability)
		require.Equal(t, ints(40_000*e), r.Work)
	}
	// bob has only availability rewards; carol none.
	res, err := f.qs.ProviderRewards(f.ctx, &types.QueryProviderRewardsRequest{Provider: bob.String()})
	require.NoError(t, err)
	require.Len(t, res.Rewards, 5)
	require.True(t, res.Rewards[0].Work.IsZero())
	res, err = f.qs.ProviderRewards(f.ctx, &types.QueryProviderRewardsRequest{Provider: carol.String()})
	require.NoError(t, err)
	require.Empty(t, res.Rewards)

	// Bad requests.
	_, err = f.qs.ProviderRewards(f.ctx, &types.QueryProviderRewardsRequest{Provider: "nope"})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = f.qs.ProviderRewards(f.ctx, nil)
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	_, err = f.qs.Emission(f.ctx, nil)
	require.Equal(t, codes.InvalidArgument, status.Code(err))

	// The era counted five epochs of 200 GFL.
	era, err = f.qs.Era(f.ctx, &types.QueryEraRequest{})
	require.NoError(t, err)
	require.Equal(t, ints(1_000*1_000_000), era.CumulativeGfl)
	require.Equal(t, testParams().HalvingThreshold.Sub(sdkmath.NewInt(1_000*1_000_000)), era.RemainingGfl)
}
