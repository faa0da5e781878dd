package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/reputation/types"
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

// Score returns a node's score record, whether it may get work, and its counters of the
// current epoch. A node with no record answers initial_score with known = false.
func (q queryServer) Score(ctx context.Context, req *types.QueryScoreRequest) (*types.QueryScoreResponse, error) {
	if req == nil || req.NodeId == 0 {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "node_id: must be set")
	}
	p, err := q.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	st, err := q.k.Scoring.Get(ctx)
	if err != nil {
		return nil, err
	}
	res := &types.QueryScoreResponse{CurrentEpoch: st.CurrentEpoch}
	s, err := q.k.Scores.Get(ctx, req.NodeId)
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		zero := sdkmath.LegacyZeroDec()
		s = types.NodeScore{NodeId: req.NodeId, Score: p.InitialScore, Accuracy: zero, Responsiveness: zero, PrevScore: zero}
	case err != nil:
		return nil, err
	default:
		res.Known = true
	}
	res.Score, res.Eligible = s, p.Eligible(s.Score)
	res.Counters, err = q.k.Counters.Get(ctx, collections.Join(st.CurrentEpoch, req.NodeId))
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		res.Counters = types.EpochCounters{NodeId: req.NodeId, Epoch: st.CurrentEpoch}
	case err != nil:
		return nil, err
	}
	return res, nil
}

// History pages through a node's past updates, newest first (pagination.reverse: oldest
// first).
func (q queryServer) History(ctx context.Context, req *types.QueryHistoryRequest) (*types.QueryHistoryResponse, error) {
	if req == nil || req.NodeId == 0 {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "node_id: must be set")
	}
	page := &query.PageRequest{}
	if req.Pagination != nil {
		*page = *req.Pagination
	}
	page.Reverse = !page.Reverse
	recs, res, err := query.CollectionPaginate(ctx, q.k.History, page,
		func(_ collections.Pair[uint64, uint64], r types.ScoreRecord) (types.ScoreRecord, error) {
			return r, nil
		},
		query.WithCollectionPaginationPairPrefix[uint64, uint64](req.NodeId))
	if err != nil {
		return nil, err
	}
	return &types.QueryHistoryResponse{History: recs, Pagination: res}, nil
}

// Ranked pages through the nodes by score, best first (ties: lower node id first;
// pagination.reverse: worst first).
func (q queryServer) Ranked(ctx context.Context, req *types.QueryRankedRequest) (*types.QueryRankedResponse, error) {
	var page *query.PageRequest
	if req != nil {
		page = req.Pagination
	}
	scores, res, err := query.CollectionPaginate(ctx, q.k.Scores.Indexes.ByRank, page,
		func(key collections.Pair[uint64, uint64], _ collections.NoValue) (types.NodeScore, error) {
			return q.k.Scores.Get(ctx, key.K2())
		})
	if err != nil {
		return nil, err
	}
	return &types.QueryRankedResponse{Scores: scores, Pagination: res}, nil
}

// Provider returns the mean score of an operator's nodes (initial_score when it has
// none) and whether it reaches min_score.
func (q queryServer) Provider(ctx context.Context, req *types.QueryProviderRequest) (*types.QueryProviderResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "operator: must be set")
	}
	operator, err := q.k.operatorAddr("operator", req.Operator)
	if err != nil {
		return nil, err
	}
	p, err := q.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	score, nodes, err := q.k.providerMean(ctx, p, operator)
	if err != nil {
		return nil, err
	}
	return &types.QueryProviderResponse{Score: score, Eligible: p.Eligible(score), Nodes: nodes}, nil
}
