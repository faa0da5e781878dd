package chain

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cosmos/cosmos-sdk/types/query"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// TasksInFlight lists a node's tasks in flight (assigned to verified), every page, oldest
// first. The chain reads a node's tasks newest first until it has found the ones its slot
// counts, so a poll costs what is in flight, not the day of settled tasks the chain
// retains; a page may hold none and still have a next key.
func TasksInFlight(ctx context.Context, q markettypes.QueryClient, nodeID uint64) ([]markettypes.Task, error) {
	var out []markettypes.Task
	var key []byte
	for {
		res, err := q.TasksByNode(ctx, &markettypes.QueryTasksByNodeRequest{
			NodeId: nodeID, Active: true, Pagination: &query.PageRequest{Key: key, Limit: 200},
		})
		if err != nil {
			return nil, fmt.Errorf("tasks of node %d: %w", nodeID, err)
		}
		out = append(out, res.Tasks...)
		if res.Pagination == nil || len(res.Pagination.NextKey) == 0 {
			slices.SortFunc(out, func(a, b markettypes.Task) int { return cmp.Compare(a.Id, b.Id) })
			return out, nil
		}
		key = res.Pagination.NextKey
	}
}
