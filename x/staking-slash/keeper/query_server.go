package keeper

import (
	"context"

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
