package chain_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/worker/chain"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// pagedTasks answers TasksByNode with the pages it holds, one a call, each pointing at the
// next by key.
type pagedTasks struct {
	markettypes.QueryClient
	pages [][]uint64
	asked []*markettypes.QueryTasksByNodeRequest
}

func (p *pagedTasks) TasksByNode(_ context.Context, req *markettypes.QueryTasksByNodeRequest, _ ...grpc.CallOption) (*markettypes.QueryTasksByNodeResponse, error) {
	p.asked = append(p.asked, req)
	i := len(req.Pagination.Key) // page i has a key of i bytes
	res := &markettypes.QueryTasksByNodeResponse{Pagination: &query.PageResponse{}}
	for _, id := range p.pages[i] {
		res.Tasks = append(res.Tasks, markettypes.Task{Id: id, NodeId: req.NodeId})
	}
	if i+1 < len(p.pages) {
		res.Pagination.NextKey = make([]byte, i+1)
	}
	return res, nil
}

// TasksInFlight reads every page of the node's tasks in flight, the empty ones too: the
// chain's pages stop at a number of reads and may hold none and still have a next key
// (flops-worker status read only the first page, and could show none of a node's tasks).
// It asks for the node's active tasks and gives them oldest first.
func TestTasksInFlightReadsEveryPage(t *testing.T) {
	q := &pagedTasks{pages: [][]uint64{{}, {9, 7}, {}, {3}}}
	tasks, err := chain.TasksInFlight(context.Background(), q, 42)
	require.NoError(t, err)
	var ids []uint64
	for _, task := range tasks {
		ids = append(ids, task.Id)
	}
	require.Equal(t, []uint64{3, 7, 9}, ids)
	require.Len(t, q.asked, 4)
	for _, req := range q.asked {
		require.Equal(t, uint64(42), req.NodeId)
		require.True(t, req.Active, "the tasks in flight only")
	}
}
