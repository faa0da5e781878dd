package keeper

import (
	"context"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/gfl/types"
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

// Node returns one node.
func (q queryServer) Node(ctx context.Context, req *types.QueryNodeRequest) (*types.QueryNodeResponse, error) {
	n, err := q.GetNode(ctx, req.NodeId)
	if err != nil {
		return nil, err
	}
	return &types.QueryNodeResponse{Node: n}, nil
}

// Nodes pages through every node in id order.
func (q queryServer) Nodes(ctx context.Context, req *types.QueryNodesRequest) (*types.QueryNodesResponse, error) {
	nodes, page, err := query.CollectionPaginate(ctx, q.Keeper.Nodes, req.Pagination,
		func(_ uint64, n types.Node) (types.Node, error) { return n, nil })
	if err != nil {
		return nil, err
	}
	return &types.QueryNodesResponse{Nodes: nodes, Pagination: page}, nil
}

// NodesByOperator pages through an operator's nodes.
func (q queryServer) NodesByOperator(ctx context.Context, req *types.QueryNodesByOperatorRequest) (*types.QueryNodesByOperatorResponse, error) {
	op, err := q.operatorAddr("operator", req.Operator)
	if err != nil {
		return nil, err
	}
	nodes, page, err := query.CollectionPaginate(ctx, q.Keeper.Nodes.Indexes.ByOperator, req.Pagination, nodesOf[sdk.AccAddress](ctx, q.Keeper),
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](op))
	if err != nil {
		return nil, err
	}
	return &types.QueryNodesByOperatorResponse{Nodes: nodes, Pagination: page}, nil
}

// NodesByClass pages through the nodes of a GPU class.
func (q queryServer) NodesByClass(ctx context.Context, req *types.QueryNodesByClassRequest) (*types.QueryNodesByClassResponse, error) {
	nodes, page, err := query.CollectionPaginate(ctx, q.Keeper.Nodes.Indexes.ByClass, req.Pagination, nodesOf[string](ctx, q.Keeper),
		query.WithCollectionPaginationPairPrefix[string, uint64](req.GpuClass))
	if err != nil {
		return nil, err
	}
	return &types.QueryNodesByClassResponse{Nodes: nodes, Pagination: page}, nil
}

// NodesByStatus pages through the nodes in a status.
func (q queryServer) NodesByStatus(ctx context.Context, req *types.QueryNodesByStatusRequest) (*types.QueryNodesByStatusResponse, error) {
	nodes, page, err := query.CollectionPaginate(ctx, q.Keeper.Nodes.Indexes.ByStatus, req.Pagination, nodesOf[int32](ctx, q.Keeper),
		query.WithCollectionPaginationPairPrefix[int32, uint64](int32(req.Status)))
	if err != nil {
		return nil, err
	}
	return &types.QueryNodesByStatusResponse{Nodes: nodes, Pagination: page}, nil
}

// nodesOf turns an index entry (reference, node id) into the node.
func nodesOf[R any](ctx context.Context, k Keeper) func(collections.Pair[R, uint64], collections.NoValue) (types.Node, error) {
	return func(key collections.Pair[R, uint64], _ collections.NoValue) (types.Node, error) {
		return k.Nodes.Get(ctx, key.K2())
	}
}

// Challenge returns an open challenge with its sampling height.
func (q queryServer) Challenge(ctx context.Context, req *types.QueryChallengeRequest) (*types.QueryChallengeResponse, error) {
	c, err := q.GetChallenge(ctx, req.ChallengeId)
	if err != nil {
		return nil, err
	}
	res := &types.QueryChallengeResponse{Challenge: c}
	if c.Status == types.CHALLENGE_STATUS_COMMITTED {
		res.SampleHeight = c.CommitHeight + 1
	}
	return res, nil
}

// ChallengeRound returns a challenge round with open members.
func (q queryServer) ChallengeRound(ctx context.Context, req *types.QueryChallengeRoundRequest) (*types.QueryChallengeRoundResponse, error) {
	r, err := q.Rounds.Get(ctx, req.RoundId)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, errorsmod.Wrapf(types.ErrRoundNotFound, "round %d has no open member (unknown or finished)", req.RoundId)
	} else if err != nil {
		return nil, err
	}
	return &types.QueryChallengeRoundResponse{Round: r}, nil
}

// Beacon returns the beacon's value for a committed block.
func (q queryServer) Beacon(ctx context.Context, req *types.QueryBeaconRequest) (*types.QueryBeaconResponse, error) {
	v, source, round, err := q.BeaconValue(ctx, req.Height)
	if err != nil {
		return nil, errorsmod.Wrap(types.ErrBeaconUnavailable, err.Error())
	}
	return &types.QueryBeaconResponse{Value: v, Source: source, Round: round}, nil
}

// PendingRounds lists the awaited drand rounds: those bound to the blocks of the last
// drand.wait_blocks whose round is not on chain and that have not fallen back (at most
// MaxDrandWaitBlocks blocks read).
func (q queryServer) PendingRounds(ctx context.Context, _ *types.QueryPendingRoundsRequest) (*types.QueryPendingRoundsResponse, error) {
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	rng := new(collections.Range[int64]).StartInclusive(max(h-types.MaxDrandWaitBlocks, 0)).Descending()
	it, err := q.BlockRounds.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	var out []types.BlockRound
	for ; it.Valid(); it.Next() {
		br, err := it.Value()
		if err != nil {
			return nil, err
		}
		if br.FallbackHeight <= h {
			break // it and every older block fell back (or will, before a tx could land)
		}
		if n := len(out); n > 0 && out[n-1].Round == br.Round {
			out[n-1] = br // the first block bound to the round
			continue
		}
		has, err := q.DrandRounds.Has(ctx, br.Round)
		if err != nil {
			return nil, err
		}
		if !has {
			out = append(out, br)
		}
	}
	slices.Reverse(out)
	return &types.QueryPendingRoundsResponse{Rounds: out}, nil
}

// OpenChallenges pages through the open challenges of an operator's nodes.
func (q queryServer) OpenChallenges(ctx context.Context, req *types.QueryOpenChallengesRequest) (*types.QueryOpenChallengesResponse, error) {
	op, err := q.operatorAddr("operator", req.Operator)
	if err != nil {
		return nil, err
	}
	cs, page, err := query.CollectionPaginate(ctx, q.Challenges.Indexes.ByOperator, req.Pagination,
		func(key collections.Pair[sdk.AccAddress, uint64], _ collections.NoValue) (types.Challenge, error) {
			return q.Challenges.Get(ctx, key.K2())
		},
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](op))
	if err != nil {
		return nil, err
	}
	return &types.QueryOpenChallengesResponse{Challenges: cs, Pagination: page}, nil
}

// NodePower returns a node's GFL index and its factors.
func (q queryServer) NodePower(ctx context.Context, req *types.QueryNodePowerRequest) (*types.QueryNodePowerResponse, error) {
	n, err := q.GetNode(ctx, req.NodeId)
	if err != nil {
		return nil, err
	}
	p, err := q.Keeper.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryNodePowerResponse{
		PowerGflops: n.PowerGflops, MedianGflops: n.MedianGflops, AvailabilityPpm: n.AvailabilityPpm,
		Epoch: n.PowerEpoch, GpuClass: n.GpuClass, ByWorkload: NodeWorkloadPower(p, n),
	}, nil
}

// NodeStats returns a node's results in the epoch in progress.
func (q queryServer) NodeStats(ctx context.Context, req *types.QueryNodeStatsRequest) (*types.QueryNodeStatsResponse, error) {
	if _, err := q.GetNode(ctx, req.NodeId); err != nil {
		return nil, err
	}
	st, err := q.Rebalance.Get(ctx)
	if err != nil {
		return nil, err
	}
	stats, err := q.Stats.Get(ctx, collections.Join(req.NodeId, st.StatsEpoch))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		stats, err = types.NodeEpochStats{NodeId: req.NodeId, Epoch: st.StatsEpoch}, nil
	}
	if err != nil {
		return nil, err
	}
	return &types.QueryNodeStatsResponse{Stats: stats}, nil
}

// NetworkPower returns the network's GFL index per workload class and the rebalance
// progress.
func (q queryServer) NetworkPower(ctx context.Context, _ *types.QueryNetworkPowerRequest) (*types.QueryNetworkPowerResponse, error) {
	np, err := q.Keeper.NetworkPower.Get(ctx)
	if err != nil {
		return nil, err
	}
	p, err := q.Keeper.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	if np.ByWorkload, err = q.WorkloadTotals(ctx, p); err != nil {
		return nil, err
	}
	st, err := q.Rebalance.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryNetworkPowerResponse{Power: np, Rebalance: st}, nil
}
