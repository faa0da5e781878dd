package keeper_test

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sdkmath "cosmossdk.io/math"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// activeListed pages through a provider's active tasks (limit per page, by next key, in
// reverse when asked) as flops-worker does, and returns the ids in the order listed and
// the pages it took, checking that no task is listed twice.
func activeListed(t *testing.T, qs types.QueryServer, f *fixture, provider string, limit uint64, reverse bool) ([]uint64, int) {
	t.Helper()
	return activePaged(t, limit, func(pg *query.PageRequest) ([]types.Task, *query.PageResponse) {
		pg.Reverse = reverse
		res, err := qs.TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{Provider: provider, Active: true, Pagination: pg})
		require.NoError(t, err)
		return res.Tasks, res.Pagination
	})
}

// activePaged pages a query of tasks in flight by next key, limit a page, and returns the
// ids in the order listed and the pages it took, checking that no task is listed twice.
func activePaged(t *testing.T, limit uint64, page func(*query.PageRequest) ([]types.Task, *query.PageResponse)) ([]uint64, int) {
	t.Helper()
	var ids []uint64
	seen := map[uint64]bool{}
	var key []byte
	for pages := 1; pages <= 100; pages++ {
		tasks, pg := page(&query.PageRequest{Key: key, Limit: limit})
		bound := limit
		if bound == 0 {
			bound = query.DefaultLimit
		}
		require.LessOrEqual(t, uint64(len(tasks)), bound, "a page holds at most its limit")
		for _, task := range tasks {
			require.False(t, seen[task.Id], "task %d listed twice", task.Id)
			seen[task.Id] = true
			ids = append(ids, task.Id)
		}
		if len(pg.NextKey) == 0 {
			return ids, pages
		}
		key = pg.NextKey
	}
	t.Fatal("no last page after 100")
	return nil, 0
}

// activeOrder sorts listed tasks as the active queries list them: by node (descending in
// reverse), then newest first.
func activeOrder(tasks [][2]uint64, reverse bool) []uint64 {
	slices.SortFunc(tasks, func(x, y [2]uint64) int {
		if x[0] != y[0] {
			if reverse {
				return cmp.Compare(y[0], x[0])
			}
			return cmp.Compare(x[0], y[0])
		}
		return cmp.Compare(y[1], x[1])
	})
	var ids []uint64
	for _, e := range tasks {
		ids = append(ids, e[1])
	}
	return ids
}

// setOpenTasks writes each node's count of tasks in flight into its slot, as the
// transitions keep it (the module's invariant): the tests here write tasks directly.
func (f *fixture) setOpenTasks(open map[uint64]uint32) {
	f.t.Helper()
	for node, n := range open {
		s := f.slot(node)
		s.OpenTasks = n
		require.NoError(f.t, f.k.Slots.Set(f.ctx, node, s))
	}
}

// A provider's tasks in flight, paged as a client pages them: every one, once, by node
// and newest first (the nodes reversed when asked), and no other provider's, however many
// of its settled tasks the index still holds (job_retention_blocks). With tasks in
// flight from the start of the retained ones on each node, each node's entries are read
// back to them; a page makes at most 5,000 reads (activeScanPerPage), so 12,000 entries
// take at least three pages whatever the limit, and a page may hold none and still have
// a next key. The same listing comes from the slots' counts and, for nodes whose slots
// are gone, from reading all of their entries. Offsets, count_total and a next key this
// query did not give are refused.
func TestTasksByProviderActivePagesAreBounded(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.operator("a"), f.operator("b")
	nodes := []uint64{f.addNode(a, 8, nil), f.addNode(a, 8, nil), f.addNode(a, 8, nil)}
	settled := []types.TaskStatus{types.TASK_STATUS_SETTLED, types.TASK_STATUS_FAILED, types.TASK_STATUS_EXPIRED, types.TASK_STATUS_CANCELLED}
	live := []types.TaskStatus{types.TASK_STATUS_ASSIGNED, types.TASK_STATUS_RUNNING, types.TASK_STATUS_COMMITTED, types.TASK_STATUS_REVEALED, types.TASK_STATUS_VERIFIED}
	var want [][2]uint64
	open := map[uint64]uint32{}
	id := uint64(0)
	set := func(provider string, node uint64, s types.TaskStatus) {
		id++
		require.NoError(t, f.k.Tasks.Set(f.ctx, id, types.Task{Id: id, JobId: id, Status: s, NodeId: node, Provider: provider, Price: sdkmath.NewInt(1)}))
		if provider == a && slices.Contains(live, s) {
			want = append(want, [2]uint64{node, id})
			open[node]++
		}
	}
	for i := range 12_000 {
		node := nodes[i%len(nodes)]
		if i%1_499 == 7 { // a task in flight here and there on each node, one more at the end
			set(a, node, live[i%len(live)])
		} else {
			set(a, node, settled[i%len(settled)])
		}
		if i%4 == 0 {
			set(b, node+10, live[i%len(live)]) // another provider's, in flight
		}
	}
	set(a, nodes[1], types.TASK_STATUS_RUNNING)
	set(a, nodes[2], types.TASK_STATUS_PENDING) // not assigned yet: no node entry
	require.Len(t, want, 10)
	require.Len(t, open, 3, "tasks in flight on every node")
	forward, reversed := activeOrder(slices.Clone(want), false), activeOrder(slices.Clone(want), true)

	qs := keeper.NewQueryServerImpl(f.k)
	list := func(round string) {
		for _, limit := range []uint64{0, 1, 2, 200} {
			got, pages := activeListed(t, qs, f, a, limit, false)
			require.Equal(t, forward, got, "%s, pages of %d", round, limit)
			require.GreaterOrEqual(t, pages, 3, "%s: 12,000 entries at 5,000 reads a page, pages of %d", round, limit)
			got, _ = activeListed(t, qs, f, a, limit, true)
			require.Equal(t, reversed, got, "%s, reversed, pages of %d", round, limit)
		}
	}
	f.setOpenTasks(open)
	list("counted by the slots")
	for _, n := range nodes {
		require.NoError(t, f.k.Slots.Remove(f.ctx, n))
	}
	list("slots gone")

	for name, pg := range map[string]*query.PageRequest{
		"an offset":   {Offset: 3, Limit: 2},
		"count_total": {Limit: 2, CountTotal: true},
	} {
		_, err := qs.TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{Provider: a, Active: true, Pagination: pg})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
		require.ErrorContains(t, err, "pages by next_key only", name)
	}
	_, err := qs.TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{Provider: a, Active: true, Pagination: &query.PageRequest{Key: []byte("0123456789")}})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "a next_key of 10 bytes is not one this query gives")
}

// A busy provider retains a day of settled tasks (job_retention_blocks), and its workers
// poll their tasks in flight every block. The poll costs what is in flight, not what is
// retained: a node's entries are read newest first until its slot's open_tasks are
// found. The worker's poll of each node (TasksByNode, active) and the provider's listing
// (TasksByProvider, active) spend the same gas with 0 or 12,000 settled tasks retained
// from before, and still find a long task that 50 short ones, since settled, ran beside.
// Reading every retained entry, as the listing did, costs gas in proportion to them.
func TestActivePollCostsWhatIsInFlightNotWhatIsRetained(t *testing.T) {
	type result struct {
		nodeGas, providerGas uint64
		node, provider       []uint64
	}
	poll := func(retained int) result {
		f := newFixture(t, nil)
		a := f.operator("a")
		n1, n2, idle := f.addNode(a, 8, nil), f.addNode(a, 8, nil), f.addNode(a, 8, nil)
		open := map[uint64]uint32{}
		id := uint64(1_000_000) // the same varint length in both runs: the gas is the bytes read
		set := func(node uint64, s types.TaskStatus) uint64 {
			id++
			require.NoError(t, f.k.Tasks.Set(f.ctx, id, types.Task{Id: id, JobId: id, Status: s, NodeId: node, Provider: a, Price: sdkmath.NewInt(1)}))
			if s != types.TASK_STATUS_SETTLED {
				open[node]++
			}
			return id
		}
		set(idle, types.TASK_STATUS_SETTLED) // a node that has worked and has nothing in flight
		for i := range retained {
			set([]uint64{n1, n2, idle}[i%3], types.TASK_STATUS_SETTLED)
		}
		long := set(n1, types.TASK_STATUS_RUNNING)
		for range 50 {
			set(n1, types.TASK_STATUS_SETTLED)
		}
		live := []uint64{long, set(n1, types.TASK_STATUS_COMMITTED), set(n2, types.TASK_STATUS_ASSIGNED), set(n2, types.TASK_STATUS_VERIFIED)}
		f.setOpenTasks(open)

		qs := keeper.NewQueryServerImpl(f.k)
		var r result
		for _, n := range []uint64{n1, n2, idle} {
			ids, _ := activePaged(t, 200, func(pg *query.PageRequest) ([]types.Task, *query.PageResponse) {
				ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
				res, err := qs.TasksByNode(ctx, &types.QueryTasksByNodeRequest{NodeId: n, Active: true, Pagination: pg})
				require.NoError(t, err)
				r.nodeGas += ctx.GasMeter().GasConsumed()
				return res.Tasks, res.Pagination
			})
			r.node = append(r.node, ids...)
		}
		r.provider, _ = activePaged(t, 200, func(pg *query.PageRequest) ([]types.Task, *query.PageResponse) {
			ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
			res, err := qs.TasksByProvider(ctx, &types.QueryTasksByProviderRequest{Provider: a, Active: true, Pagination: pg})
			require.NoError(t, err)
			r.providerGas += ctx.GasMeter().GasConsumed()
			return res.Tasks, res.Pagination
		})
		require.ElementsMatch(t, live, r.node, "%d retained: the nodes' polls", retained)
		require.ElementsMatch(t, live, r.provider, "%d retained: the provider's listing", retained)
		return r
	}
	none, busy := poll(0), poll(12_000)
	require.Equal(t, none.nodeGas, busy.nodeGas, "the nodes' polls, with 12,000 settled tasks retained")
	require.Equal(t, none.providerGas, busy.providerGas, "the provider's listing, with 12,000 settled tasks retained")
	t.Logf("a poll of the 3 nodes: %d gas; the provider's listing: %d gas (0 or 12,000 retained)", busy.nodeGas, busy.providerGas)
}

// TasksByNode with active lists that node's tasks in flight only, newest first, page by
// page however small, and the same node's other tasks and other nodes' are left out.
func TestTasksByNodeActiveListsOneNode(t *testing.T) {
	f := newFixture(t, nil)
	a := f.operator("a")
	n1, n2 := f.addNode(a, 8, nil), f.addNode(a, 8, nil)
	open := map[uint64]uint32{}
	var want []uint64
	for i := range uint64(40) {
		id, node, s := i+1, []uint64{n1, n2}[i%2], types.TASK_STATUS_SETTLED
		if i%5 == 0 {
			s = types.TASK_STATUS_RUNNING
			if node == n1 {
				want = append(want, id)
			}
			open[node]++
		}
		require.NoError(t, f.k.Tasks.Set(f.ctx, id, types.Task{Id: id, JobId: id, Status: s, NodeId: node, Provider: a, Price: sdkmath.NewInt(1)}))
	}
	f.setOpenTasks(open)
	slices.Reverse(want)
	qs := keeper.NewQueryServerImpl(f.k)
	for _, limit := range []uint64{1, 3, 0} {
		got, pages := activePaged(t, limit, func(pg *query.PageRequest) ([]types.Task, *query.PageResponse) {
			res, err := qs.TasksByNode(f.ctx, &types.QueryTasksByNodeRequest{NodeId: n1, Active: true, Pagination: pg})
			require.NoError(t, err)
			return res.Tasks, res.Pagination
		})
		require.Equal(t, want, got, "pages of %d", limit)
		if limit == 1 {
			require.Len(t, want, pages, "one a page, and no empty page after the last")
		}
	}
	res, err := qs.TasksByNode(f.ctx, &types.QueryTasksByNodeRequest{NodeId: n1})
	require.NoError(t, err)
	require.Len(t, res.Tasks, 20, "without active, every task of the node")
}
