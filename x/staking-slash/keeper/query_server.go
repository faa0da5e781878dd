package keeper

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

type queryServer struct{ Keeper }

var _ types.QueryServer = queryServer{}

// NewQueryServerImpl returns the module's Query service.
func NewQueryServerImpl(k Keeper) types.QueryServer { return queryServer{Keeper: k} }

// Params returns the module parameters.
func (q queryServer) Params(ctx context.Context, _ *types.QueryParamsRequest) (*types.QueryParamsResponse, error) {
	p, err := q.Keeper.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryParamsResponse{Params: p}, nil
}

func (q queryServer) provider(s string) (sdk.AccAddress, error) {
	addr, err := q.addressCodec.StringToBytes(s)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "provider %q: %s", s, err)
	}
	if len(addr) == 0 {
		return nil, status.Error(codes.InvalidArgument, "provider: empty address")
	}
	return addr, nil
}

// Collateral returns a provider's collateral record (zero for one that never bonded) with
// its unbonding sum, requirement and exposure cap.
func (q queryServer) Collateral(ctx context.Context, req *types.QueryCollateralRequest) (*types.QueryCollateralResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	provider, err := q.provider(req.Provider)
	if err != nil {
		return nil, err
	}
	p, err := q.Keeper.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	c, err := q.GetCollateral(ctx, provider)
	if err != nil {
		return nil, err
	}
	entries, err := q.ProviderUnbondings(ctx, provider)
	if err != nil {
		return nil, err
	}
	res := &types.QueryCollateralResponse{Collateral: c}
	res.Unbonding = sdkmath.ZeroInt()
	for _, e := range entries {
		res.Unbonding = res.Unbonding.Add(e.Amount)
	}
	if res.Required, err = requiredFor(p, c.LockedGpus); err != nil {
		return nil, err
	}
	if res.ExposureCap, err = exposureCap(p, c.Bonded); err != nil {
		return nil, err
	}
	return res, nil
}

// Unbondings returns a provider's open unbonding entries by id, paginated.
func (q queryServer) Unbondings(ctx context.Context, req *types.QueryUnbondingsRequest) (*types.QueryUnbondingsResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	provider, err := q.provider(req.Provider)
	if err != nil {
		return nil, err
	}
	entries, page, err := query.CollectionPaginate(ctx, q.Keeper.Unbondings, req.Pagination,
		func(_ UnbondingKey, e types.UnbondingEntry) (types.UnbondingEntry, error) { return e, nil },
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](provider))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &types.QueryUnbondingsResponse{Unbondings: entries, Pagination: page}, nil
}

// SlashHistory returns a provider's slash records, oldest first, paginated.
func (q queryServer) SlashHistory(ctx context.Context, req *types.QuerySlashHistoryRequest) (*types.QuerySlashHistoryResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	provider, err := q.provider(req.Provider)
	if err != nil {
		return nil, err
	}
	slashes, page, err := query.CollectionPaginate(ctx, q.Slashes, req.Pagination,
		func(_ collections.Pair[sdk.AccAddress, uint64], s types.SlashRecord) (types.SlashRecord, error) {
			return s, nil
		},
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](provider))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &types.QuerySlashHistoryResponse{Slashes: slashes, Pagination: page}, nil
}
