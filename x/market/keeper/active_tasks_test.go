package keeper_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// activeListed pages through a provider's active tasks (limit per page, by next key, in
// reverse when asked) as flops-worker does, and returns the ids in the order listed and
// the pages it took, checking that no task is listed twice.
func activeListed(t *testing.T, qs types.QueryServer, f *fixture, provider string, limit uint64, reverse bool) ([]uint64, int) {
	t.Helper()
	var ids []uint64
	seen := map[uint64]bool{}
	var key []byte
	for pages := 1; pages <= 100; pages++ {
		res, err := qs.TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{
			Provider: provider, Active: true, Pagination: &query.PageRequest{Key: key, Limit: limit, Reverse: reverse},
		})
		require.NoError(t, err)
		bound := limit
		if bound == 0 {
			bound = query.DefaultLimit
		}
		require.LessOrEqual(t, uint64(len(res.Tasks)), bound, "a page holds at most its limit")
		for _, task := range res.Tasks {
			require.False(t, seen[task.Id], "task %d listed twice", task.Id)
			seen[task.Id] = true
			ids = append(ids, task.Id)
		}
		if len(res.Pagination.NextKey) == 0 {
			return ids, pages
		}
		key = res.Pagination.NextKey
	}
	t.Fatal("no last page after 100")
	return nil, 0
}

// A provider's tasks in flight, paged as flops-worker pages them: every one, once, in the
// index's order (by node, then id; reversed when asked), and no other provider's, however
// many of its settled tasks the index still holds (job_retention_blocks). A page reads at
// most 5,000 index entries (activeScanPerPage), so a provider with 12,000 tasks retained
// takes at least three pages whatever the limit, and a page may hold none of its tasks
// and still have a next key. Offsets and count_total, which would read every entry, are
// refused.
func TestTasksByProviderActivePagesAreBounded(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.operator("a"), f.operator("b")
	nodes := []uint64{3, 1, 2}
	settled := []types.TaskStatus{types.TASK_STATUS_SETTLED, types.TASK_STATUS_FAILED, types.TASK_STATUS_EXPIRED, types.TASK_STATUS_CANCELLED}
	live := []types.TaskStatus{types.TASK_STATUS_ASSIGNED, types.TASK_STATUS_RUNNING, types.TASK_STATUS_COMMITTED, types.TASK_STATUS_REVEALED, types.TASK_STATUS_VERIFIED}
	type entry struct{ node, id uint64 }
	var want []entry
	id := uint64(0)
	set := func(provider string, node uint64, s types.TaskStatus) {
		id++
		require.NoError(t, f.k.Tasks.Set(f.ctx, id, types.Task{Id: id, JobId: id, Status: s, NodeId: node, Provider: provider, Price: sdkmath.NewInt(1)}))
		if provider == a && slices.Contains(live, s) {
			want = append(want, entry{node, id})
		}
	}
	for i := range 12_000 {
		node := nodes[i%len(nodes)]
		if i%1_500 == 7 { // a task in flight here and there, one more at the end
			set(a, node, live[i%len(live)])
		} else {
			set(a, node, settled[i%len(settled)])
		}
		if i%4 == 0 {
			set(b, node+10, live[i%len(live)]) // another provider's, in flight
		}
	}
	set(a, 2, types.TASK_STATUS_RUNNING)
	set(a, 3, types.TASK_STATUS_PENDING) // not assigned yet: no node entry
	slices.SortFunc(want, func(x, y entry) int {
		if x.node != y.node {
			return int(x.node) - int(y.node)
		}
		return int(x.id) - int(y.id)
	})
	var wantIDs []uint64
	for _, e := range want {
		wantIDs = append(wantIDs, e.id)
	}
	require.Len(t, wantIDs, 9)

	qs := keeper.NewQueryServerImpl(f.k)
	for _, limit := range []uint64{0, 1, 2, 200} {
		got, pages := activeListed(t, qs, f, a, limit, false)
		require.Equal(t, wantIDs, got, "pages of %d", limit)
		require.GreaterOrEqual(t, pages, 3, "12,000 entries at 5,000 a page, pages of %d", limit)
		got, _ = activeListed(t, qs, f, a, limit, true)
		reversed := slices.Clone(wantIDs)
		slices.Reverse(reversed)
		require.Equal(t, reversed, got, "reversed, pages of %d", limit)
	}

	for name, pg := range map[string]*query.PageRequest{
		"an offset":   {Offset: 3, Limit: 2},
		"count_total": {Limit: 2, CountTotal: true},
	} {
		_, err := qs.TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{Provider: a, Active: true, Pagination: pg})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
		require.ErrorContains(t, err, "pages by next_key only", name)
	}
}
