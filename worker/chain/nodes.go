package chain

import (
	"context"
	"fmt"

	"github.com/cosmos/cosmos-sdk/types/query"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// NodesOf lists an operator's nodes, every page (pages of 100, not counted).
func NodesOf(ctx context.Context, q gfltypes.QueryClient, operator string) ([]gfltypes.Node, error) {
	var out []gfltypes.Node
	var key []byte
	for {
		res, err := q.NodesByOperator(ctx, &gfltypes.QueryNodesByOperatorRequest{Operator: operator, Pagination: &query.PageRequest{Key: key, Limit: 100}})
		if err != nil {
			return nil, fmt.Errorf("nodes of %s: %w", operator, err)
		}
		out = append(out, res.Nodes...)
		if res.Pagination == nil || len(res.Pagination.NextKey) == 0 {
			return out, nil
		}
		key = res.Pagination.NextKey
	}
}
