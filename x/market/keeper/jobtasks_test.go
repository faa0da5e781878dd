package keeper_test

import (
	"fmt"
	"slices"
	"testing"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// addedTask stores a task added to a job after its submission (an audit of a shard), with
// an id after every primary's (cancelled: the job's open tasks need not count it).
func addedTask(t *testing.T, f *fixture, job uint64, id uint64, index uint32) types.Task {
	t.Helper()
	task := types.Task{Id: id, JobId: job, Index: index, Role: types.TASK_ROLE_AUDIT, Status: types.TASK_STATUS_CANCELLED,
		Price: sdkmath.ZeroInt(), Exposure: sdkmath.ZeroInt(), Paid: sdkmath.ZeroInt(), Reserved: sdkmath.ZeroInt()}
	require.NoError(t, f.k.Tasks.Set(f.ctx, id, task))
	return task
}

// A job's primaries have no tasks by job entry (their ids follow from the job's first
// task id); the tasks added later have one. The TasksByJob query lists both, in id order,
// and every way of paging (next keys, offsets, reverse, totals) agrees with one big page.
func TestTasksByJobListsThePrimariesWithoutTheirIndexEntries(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(2)
	spec.Replicas = 3
	before := f.submit(f.gemmSpec(1)) // jobs on both sides: none of their tasks is listed
	job := f.submit(spec)
	after := f.submit(f.gemmSpec(1))
	primaries := f.tasks(job)
	require.Len(t, primaries, 6)
	require.Equal(t, primaries[0].Id, f.job(job).FirstTaskId)
	for i, task := range primaries {
		require.Equal(t, f.job(job).FirstTaskId+uint64(i), task.Id)
		require.Equal(t, types.TASK_ROLE_PRIMARY, task.Role)
	}
	m := keeper.NewMigrator(f.k)
	n, err := m.JobRefsForTest(f.ctx, job)
	require.NoError(t, err)
	require.Zero(t, n, "a primary has no tasks by job entry")

	added := []types.Task{addedTask(t, f, job, 1<<40, 0), addedTask(t, f, job, 1<<40+7, 1)}
	n, err = m.JobRefsForTest(f.ctx, job)
	require.NoError(t, err)
	require.Equal(t, 2, n, "an added task has its entry")

	var want []uint64
	for _, task := range append(slices.Clone(primaries), added...) {
		want = append(want, task.Id)
	}
	require.Equal(t, want, idsOf(f.tasks(job)))
	// the sweeps' cursor walks the same list, reading no task, from any id of it
	for after := 0; after <= len(want); after++ {
		cursor := uint64(0)
		if after > 0 {
			cursor = want[after-1]
		}
		for n := 1; n <= len(want)+1; n++ {
			got, err := f.k.LiveJobTaskIDsForTest(f.ctx, job, cursor, n)
			require.NoError(t, err)
			require.Equal(t, want[after:min(after+n, len(want))], append([]uint64{}, got...), "after %d, %d ids", cursor, n)
		}
	}
	require.Len(t, f.tasks(before), 1)
	require.Len(t, f.tasks(after), 1)

	qs := keeper.NewQueryServerImpl(f.k)
	page := func(pg *query.PageRequest) *types.QueryTasksByJobResponse {
		t.Helper()
		res, err := qs.TasksByJob(f.ctx, &types.QueryTasksByJobRequest{JobId: job, Pagination: pg})
		require.NoError(t, err)
		return res
	}
	all := page(&query.PageRequest{CountTotal: true})
	require.Equal(t, want, idsOf(all.Tasks))
	require.Equal(t, uint64(len(want)), all.Pagination.Total)
	require.Nil(t, all.Pagination.NextKey)
	requirePagingAgrees(t, want, func(pg *query.PageRequest) ([]uint64, *query.PageResponse) {
		res := page(pg)
		return idsOf(res.Tasks), res.Pagination
	})
	res := page(&query.PageRequest{Limit: 2})
	require.NotNil(t, res.Pagination.NextKey)
	_, err = qs.TasksByJob(f.ctx, &types.QueryTasksByJobRequest{JobId: job, Pagination: &query.PageRequest{Key: res.Pagination.NextKey, Offset: 1}})
	require.Error(t, err, "a key and an offset")
	_, err = qs.TasksByJob(f.ctx, &types.QueryTasksByJobRequest{JobId: after, Pagination: &query.PageRequest{Key: res.Pagination.NextKey}})
	require.Error(t, err, "another job's key")
	none, err := qs.TasksByJob(f.ctx, &types.QueryTasksByJobRequest{JobId: 999})
	require.NoError(t, err)
	require.Empty(t, none.Tasks)
}

func idsOf(tasks []types.Task) []uint64 {
	out := make([]uint64, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, t.Id)
	}
	return out
}

// A genesis says each job's first task id; one from before the field (0) is imported with
// the id its primaries give, and one whose primaries are not where it says is refused.
func TestGenesisCarriesTheFirstTaskID(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(2)
	spec.Replicas = 2
	a := f.submit(spec)
	b := f.submit(f.gemmSpec(3))
	addedTask(t, f, a, 1<<20, 0)
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	gs.NextTaskId = 1<<20 + 1
	require.NoError(t, gs.Validate())

	old := *gs
	old.Jobs = slices.Clone(gs.Jobs)
	for i := range old.Jobs {
		old.Jobs[i].FirstTaskId = 0
	}
	require.NoError(t, old.Validate())
	g := newFixture(t, nil)
	g.bank.FundModule(types.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, f.bank.ModuleBalance(types.ModuleName, udps))))
	require.NoError(t, g.k.InitGenesis(g.ctx, &old))
	for _, id := range []uint64{a, b} {
		require.Equal(t, f.job(id).FirstTaskId, g.job(id).FirstTaskId)
		require.Equal(t, f.tasks(id), g.tasks(id))
	}

	bad := *gs
	bad.Jobs = slices.Clone(gs.Jobs)
	bad.Jobs[0].FirstTaskId++
	require.ErrorContains(t, bad.Validate(), "replica")
	bad.Jobs[0].FirstTaskId = gs.NextTaskId
	require.ErrorContains(t, bad.Validate(), "below next_task_id")
}

// A scheduler group of one task names it in its record and has no waiting set entry; a
// group of several has an entry per task. Whatever path a group takes between the two
// (submitted, assigned down to one, a lapsed task back in), its form is the one its size
// says, and the invariants (which check that form) hold after every block.
func TestGroupOfOneNamesItsTaskWithoutAWaitingEntry(t *testing.T) {
	f := newFixture(t, nil)
	waiting := func() int {
		t.Helper()
		n, err := f.k.WaitingForTest(f.ctx)
		require.NoError(t, err)
		return n
	}
	groups := func() []string {
		t.Helper()
		g, err := f.k.GroupsForTest(f.ctx)
		require.NoError(t, err)
		return g
	}
	one := f.submit(f.gemmSpec(1))
	solo := f.tasks(one)[0]
	require.Zero(t, waiting())
	require.Equal(t, []string{fmt.Sprintf("job %d role 1: 1 waiting from %d, parked 0, tries 0", one, solo.Id)}, groups())
	three := f.submit(f.gemmSpec(3))
	require.Equal(t, 3, waiting())
	f.assertInvariants()

	// a node for three tasks: the older job's, then the first two of the other
	f.addNode(f.operator("op"), 3, nil)
	f.blocks(1)
	f.assertInvariants()
	tasks := f.tasks(three)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, f.task(solo.Id).Status)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, tasks[0].Status)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, tasks[1].Status)
	require.Equal(t, types.TASK_STATUS_PENDING, tasks[2].Status)
	require.Zero(t, waiting(), "the last waiting task moved into its group's record")
	require.Equal(t, []string{fmt.Sprintf("job %d role 1: 1 waiting from %d, parked %d, tries 1", three, tasks[2].Id, f.ctx.BlockHeight())}, groups(),
		"parked: no node is left for it")

	// nobody acks: the assigned tasks lapse back to PENDING and wait again, in groups of
	// one and of several
	for range 200 {
		f.blocks(1)
		f.assertInvariants()
		if f.task(tasks[0].Id).Status == types.TASK_STATUS_PENDING {
			break
		}
	}
	require.Equal(t, types.TASK_STATUS_PENDING, f.task(tasks[0].Id).Status)
	require.Equal(t, 3, waiting(), "the group of one took two lapsed tasks back: an entry each")
	require.Len(t, groups(), 1, "the lapsed single task waits parked alone (it excludes the node it lapsed on)")
	require.Contains(t, groups()[0], fmt.Sprintf("job %d role 1: 3 waiting from %d", three, tasks[0].Id))
	require.True(t, f.queued(tasks[0].Id))
	require.True(t, f.queued(solo.Id))
}
