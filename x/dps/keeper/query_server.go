package keeper

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/dps/types"
)

type queryServer struct{ k Keeper }

var _ types.QueryServer = queryServer{}

// NewQueryServerImpl returns the module's Query service.
func NewQueryServerImpl(k Keeper) types.QueryServer { return queryServer{k: k} }

// Params returns the module parameters.
func (q queryServer) Params(ctx context.Context, _ *types.QueryParamsRequest) (*types.QueryParamsResponse, error) {
	p, err := q.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryParamsResponse{Params: p}, nil
}

// Era returns the halving era, its rate, and the two ways the next halving can come: by
// time (next_halving_time) and by threshold (remaining_gfl to add).
func (q queryServer) Era(ctx context.Context, _ *types.QueryEraRequest) (*types.QueryEraResponse, error) {
	p, err := q.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	era, err := q.k.EraState.Get(ctx)
	if err != nil {
		return nil, err
	}
	remaining := p.HalvingThreshold.Sub(era.CumulativeGfl)
	if remaining.IsNegative() {
		remaining = sdkmath.ZeroInt()
	}
	return &types.QueryEraResponse{
		Era:             era.Era,
		Rate:            types.Rate(p.DpsPerGfl, era.Era),
		LastHalvingTime: era.LastHalvingTime,
		CumulativeGfl:   era.CumulativeGfl,
		NextHalvingTime: era.LastHalvingTime.Add(p.HalvingPeriod),
		RemainingGfl:    remaining,
		PoolBaseline:    era.PoolBaseline,
	}, nil
}

// Pool returns the reward pool's balance and what the distribution in progress may still
// pay from it.
func (q queryServer) Pool(ctx context.Context, _ *types.QueryPoolRequest) (*types.QueryPoolResponse, error) {
	addr, err := q.k.addressCodec.BytesToString(q.k.PoolAddress())
	if err != nil {
		return nil, err
	}
	owed := sdkmath.ZeroInt()
	d, found, err := q.k.GetInProgress(ctx)
	if err != nil {
		return nil, err
	}
	if found {
		owed = d.Owed()
	}
	return &types.QueryPoolResponse{
		Address: addr,
		Balance: sdk.NewCoin(types.Denom, q.k.PoolBalance(ctx)),
		Owed:    owed,
	}, nil
}

// LatestEmission returns the finished distribution of the highest epoch.
func (q queryServer) LatestEmission(ctx context.Context, _ *types.QueryLatestEmissionRequest) (*types.QueryLatestEmissionResponse, error) {
	it, err := q.k.Distributions.Iterate(ctx, new(collections.Range[uint64]).Descending())
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	if !it.Valid() {
		return &types.QueryLatestEmissionResponse{}, nil
	}
	d, err := it.Value()
	if err != nil {
		return nil, err
	}
	return &types.QueryLatestEmissionResponse{Found: true, Distribution: d}, nil
}

// Emission returns the finished distribution of an epoch.
func (q queryServer) Emission(ctx context.Context, req *types.QueryEmissionRequest) (*types.QueryEmissionResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	d, err := q.k.Distributions.Get(ctx, req.Epoch)
	if errors.Is(err, collections.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "no finished distribution for epoch %d", req.Epoch)
	}
	if err != nil {
		return nil, err
	}
	return &types.QueryEmissionResponse{Distribution: d}, nil
}

// Emissions lists the finished distributions by epoch, paginated.
func (q queryServer) Emissions(ctx context.Context, req *types.QueryEmissionsRequest) (*types.QueryEmissionsResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	ds, page, err := query.CollectionPaginate(ctx, q.k.Distributions, req.Pagination,
		func(_ uint64, d types.Distribution) (types.Distribution, error) { return d, nil })
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &types.QueryEmissionsResponse{Distributions: ds, Pagination: page}, nil
}

// ProviderRewards lists a provider's rewards by epoch, paginated.
func (q queryServer) ProviderRewards(ctx context.Context, req *types.QueryProviderRewardsRequest) (*types.QueryProviderRewardsResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	provider, err := q.k.addressCodec.StringToBytes(req.Provider)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "provider %q: %s", req.Provider, err)
	}
	if len(provider) == 0 {
		return nil, status.Error(codes.InvalidArgument, "provider: empty address")
	}
	rewards, page, err := query.CollectionPaginate(ctx, q.k.Rewards, req.Pagination,
		func(_ collections.Pair[sdk.AccAddress, uint64], r types.ProviderReward) (types.ProviderReward, error) {
			return r, nil
		},
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](provider))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &types.QueryProviderRewardsResponse{Rewards: rewards, Pagination: page}, nil
}

// Distribution returns the distribution in progress, if any, and the queued epochs.
func (q queryServer) Distribution(ctx context.Context, _ *types.QueryDistributionRequest) (*types.QueryDistributionResponse, error) {
	d, found, err := q.k.GetInProgress(ctx)
	if err != nil {
		return nil, err
	}
	res := &types.QueryDistributionResponse{InProgress: found, Distribution: d}
	// The queue holds one entry per ended epoch not yet started: a handful at most.
	err = q.k.PendingEpochs.Walk(ctx, nil, func(e uint64) (bool, error) {
		res.PendingEpochs = append(res.PendingEpochs, e)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// VerifiedWork returns a provider's verified work in a reward epoch, per workload class
// (at most one record per class: a handful).
func (q queryServer) VerifiedWork(ctx context.Context, req *types.QueryVerifiedWorkRequest) (*types.QueryVerifiedWorkResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	provider, err := q.k.addressCodec.StringToBytes(req.Provider)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "provider %q: %s", req.Provider, err)
	}
	if len(provider) == 0 {
		return nil, status.Error(codes.InvalidArgument, "provider: empty address")
	}
	var out []types.WorkloadWork
	rng := collections.NewSuperPrefixedTripleRange[uint64, sdk.AccAddress, int32](req.Epoch, provider)
	err = q.k.Work.Walk(ctx, rng, func(key collections.Triple[uint64, sdk.AccAddress, int32], r types.WorkRecord) (bool, error) {
		out = append(out, types.WorkloadWork{Workload: key.K3(), Record: r})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return &types.QueryVerifiedWorkResponse{Work: out}, nil
}
