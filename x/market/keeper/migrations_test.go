package keeper_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// An unassigned task has no entry in the tasks by node and by provider indexes; version 1
// of the store kept one under node 0 and the empty provider, and the migration to 2
// removes exactly those: the assigned tasks' entries stay, the queries and the
// invariants agree after it.
func TestMigrate1to2DropsTheUnassignedTasksIndexEntries(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("p")
	node := f.addNode(op, 2, nil)
	job := f.submit(f.gemmSpec(5))
	f.blocks(1)
	var pending []uint64
	assigned := 0
	for _, task := range f.tasks(job) {
		if task.NodeId == 0 {
			pending = append(pending, task.Id)
		} else {
			assigned++
		}
	}
	require.Equal(t, 2, assigned, "the node's two GPUs took two tasks")
	require.Len(t, pending, 3)

	m := keeper.NewMigrator(f.k)
	n, err := m.V1UnassignedRefsForTest(f.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "version 2 indexes no unassigned task")
	n, err = m.V1UnassignedRefsForTest(f.ctx, pending...)
	require.NoError(t, err)
	require.Equal(t, 2*len(pending), n, "the store as version 1 kept it")

	require.NoError(t, m.Migrate1to2(f.ctx))
	n, err = m.V1UnassignedRefsForTest(f.ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	byNode, err := keeper.NewQueryServerImpl(f.k).TasksByNode(f.ctx, &types.QueryTasksByNodeRequest{NodeId: node})
	require.NoError(t, err)
	require.Len(t, byNode.Tasks, assigned, "the assigned tasks keep their node entries")
	res, err := keeper.NewQueryServerImpl(f.k).TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{Provider: op})
	require.NoError(t, err)
	require.Len(t, res.Tasks, assigned, "and their provider entries")
	f.assertInvariants()
}

// Version 3 keeps the next job and task ids in one record (a submission reads and writes
// it once); the migration from 2 carries the two sequences' values over and removes them,
// and the next job and tasks take the ids after them.
func TestMigrate2to3MovesTheIDSequences(t *testing.T) {
	f := newFixture(t, nil)
	require.NoError(t, f.k.IDs.Remove(f.ctx))
	m := keeper.NewMigrator(f.k)
	left, err := m.V2SeqsForTest(f.ctx, 41, 977)
	require.NoError(t, err)
	require.True(t, left)
	require.NoError(t, m.Migrate2to3(f.ctx))
	left, err = m.V2SeqsForTest(f.ctx, 0, 0)
	require.NoError(t, err)
	require.False(t, left, "version 2's sequences are gone")
	job, task, err := f.k.PeekIDs(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{41, 977}, []uint64{job, task})

	id := f.submit(f.gemmSpec(3))
	require.Equal(t, uint64(41), id)
	n, err := m.V2ShardRefsForTest(f.ctx)
	require.NoError(t, err)
	require.Zero(t, n, "version 3 indexes no primary by shard")
	tasks := f.tasks(id)
	require.Len(t, tasks, 3)
	require.Equal(t, []uint64{977, 978, 979}, []uint64{tasks[0].Id, tasks[1].Id, tasks[2].Id})
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{42, 980}, []uint64{gs.NextJobId, gs.NextTaskId})
}

// Version 3's tasks by shard index holds only the tasks added to a shard after submission;
// the migration from 2 removes the primaries' entries (version 2 had one per task) and
// keeps the others, and the shard's tasks are found as before.
func TestMigrate2to3DropsThePrimariesShardEntries(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(2)
	spec.Replicas = 3
	job := f.submit(spec)
	tasks := f.tasks(job)
	require.Len(t, tasks, 6)
	m := keeper.NewMigrator(f.k)
	other := types.Task{Id: 1 << 40, JobId: job, Index: 5, Role: types.TASK_ROLE_AUDIT} // an entry the migration keeps
	n, err := m.V2ShardRefsForTest(f.ctx, append(tasks, other)...)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	require.NoError(t, m.Migrate2to3(f.ctx))
	n, err = m.V2ShardRefsForTest(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the non-primary's entry stays")
	for i := range uint32(2) {
		got, err := f.k.ShardTasksForTest(f.ctx, f.job(job), i)
		require.NoError(t, err)
		require.Len(t, got, 3)
		for r, task := range got {
			require.Equal(t, tasks[int(i)*3+r], task)
		}
	}
}

// Version 3 indexed every task by job and kept no first task id in the job's record; the
// migration to 4 takes each job's first task id from any primary it still has (one
// pruned away included), drops the primaries' entries and keeps the added tasks', and
// rewrites the scheduler groups' records as varints.
func TestMigrate3to4RecordsTheFirstTaskIDAndDropsThePrimariesJobEntries(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(2)
	spec.Replicas = 3
	a := f.submit(spec)
	b := f.submit(spec)
	f.submit(f.gemmSpec(1)) // a group of one
	audit := addedTask(t, f, a, 1<<40, 1)
	tasksA, tasksB := f.tasks(a), f.tasks(b)
	require.Len(t, tasksA, 7)
	firstA, firstB := f.job(a).FirstTaskId, f.job(b).FirstTaskId
	require.NoError(t, f.k.Tasks.Remove(f.ctx, tasksB[0].Id)) // b's first primary pruned
	m := keeper.NewMigrator(f.k)
	n, err := m.V3JobForTest(f.ctx, a)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	n, err = m.V3JobForTest(f.ctx, b)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Zero(t, f.job(a).FirstTaskId)
	groups, err := m.V3GroupsForTest(f.ctx)
	require.NoError(t, err)
	require.Len(t, groups, 3, "every job waits for a node")
	_, err = f.k.GroupsForTest(f.ctx)
	require.Error(t, err, "version 3's records are not varints")
	waiting, err := f.k.WaitingForTest(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 6+6+1, waiting)

	require.NoError(t, m.Migrate3to4(f.ctx))
	got, err := f.k.GroupsForTest(f.ctx)
	require.NoError(t, err)
	require.Equal(t, groups, got)
	waiting, err = f.k.WaitingForTest(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 6+6, waiting, "the group of one names its task in its record alone")
	require.Equal(t, firstA, f.job(a).FirstTaskId)
	require.Equal(t, firstB, f.job(b).FirstTaskId)
	n, err = m.JobRefsForTest(f.ctx, a)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the audit's entry stays")
	n, err = m.JobRefsForTest(f.ctx, b)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, tasksA, f.tasks(a))
	require.Equal(t, audit, f.tasks(a)[6])
	require.Equal(t, tasksB[1:], f.tasks(b))
}

// Version 4 counted a job's whole history in its record; the migration to 5 keeps what
// submission wrote there (1: the implied entry 0) and moves the rest to HistoryAdded. The
// history and its length read the same, and the next entry follows the last.
func TestMigrate4to5MovesTheHistoryCountOutOfTheRecord(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("op"), 8, nil)
	a := f.submit(f.gemmSpec(1))
	b := f.submit(f.gemmSpec(1)) // only entry 0
	legacy := f.job(a)
	legacy.HistoryLen, legacy.Spec = 3, types.JobSpec{}
	require.NoError(t, f.k.Jobs.Set(f.ctx, a, legacy))
	for seq := uint32(1); seq < 3; seq++ {
		require.NoError(t, f.k.History.Set(f.ctx, collections.Join(a, seq), types.HistoryEntry{Event: "Old"}))
	}
	qs := keeper.NewQueryServerImpl(f.k)
	before, err := qs.JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: a, Pagination: &query.PageRequest{CountTotal: true}})
	require.NoError(t, err)
	require.Len(t, before.Entries, 3)

	require.NoError(t, keeper.NewMigrator(f.k).Migrate4to5(f.ctx))
	require.Equal(t, uint32(1), f.job(a).HistoryLen)
	require.Equal(t, uint32(1), f.job(b).HistoryLen)
	added, err := f.k.HistoryAdded.Get(f.ctx, a)
	require.NoError(t, err)
	require.Equal(t, uint32(2), added)
	has, err := f.k.HistoryAdded.Has(f.ctx, b)
	require.NoError(t, err)
	require.False(t, has)
	after, err := qs.JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: a, Pagination: &query.PageRequest{CountTotal: true}})
	require.NoError(t, err)
	require.Equal(t, before, after)

	f.next(time.Second) // both assigned
	e, err := f.k.History.Get(f.ctx, collections.Join(a, uint32(3)))
	require.NoError(t, err)
	require.Equal(t, "TaskAssigned", e.Event)
	e, err = f.k.History.Get(f.ctx, collections.Join(b, uint32(1)))
	require.NoError(t, err)
	require.Equal(t, "TaskAssigned", e.Event)
}

// Version 5 kept the class members one key a position (prefix 48); the migration to 6
// packs them into chunks with their positions (and MemberPos) unchanged, and leaves no
// old key. The draw then reads the same node at every position.
func TestMigrate5to6PacksTheClassMembers(t *testing.T) {
	f := newFixture(t, nil)
	h100 := func(g *gfltypes.Node) { g.GpuClass = "H100-80GB" }
	for i := range keeper.MemberChunk + 5 {
		f.addNode(f.operator(fmt.Sprint("a", i)), 8, nil)
	}
	for i := range 3 {
		f.addNode(f.operator(fmt.Sprint("h", i)), 8, h100)
	}
	f.updateNode(2, func(g *gfltypes.Node) { g.Status = gfltypes.NODE_STATUS_INACTIVE }) // a swap
	classes := map[string][]uint64{"A100-40GB": f.classMembers("A100-40GB"), "H100-80GB": f.classMembers("H100-80GB")}
	// the chunks by "class/chunk" (a Pair's fields are pointers: it is no map key)
	readChunks := func() map[string][]byte {
		out := map[string][]byte{}
		require.NoError(t, f.k.MemberChunks.Walk(f.ctx, nil, func(k collections.Pair[string, uint64], v []byte) (bool, error) {
			out[fmt.Sprintf("%s/%d", k.K1(), k.K2())] = v
			return false, nil
		}))
		return out
	}
	chunks := readChunks()
	require.Len(t, chunks, 3)

	// the state as version 5 left it
	m := keeper.NewMigrator(f.k)
	v5 := m.V5MembersForTest()
	for class, nodes := range classes {
		for pos, node := range nodes {
			require.NoError(t, v5.Set(f.ctx, collections.Join(class, uint64(pos)), node))
		}
	}
	require.NoError(t, f.k.MemberChunks.Clear(f.ctx, nil))

	require.NoError(t, m.Migrate5to6(f.ctx))
	require.Equal(t, chunks, readChunks())
	it, err := v5.Iterate(f.ctx, nil)
	require.NoError(t, err)
	require.False(t, it.Valid(), "no version 5 member key is left")
	require.NoError(t, it.Close())
	for class, nodes := range classes {
		require.Equal(t, nodes, f.classMembers(class))
	}
	f.assertInvariants()
	id := f.submit(f.gemmSpec(1))
	f.next(time.Second)
	f.requireAssigned(f.ctx, []uint64{id})
}

// A version 5 class with a hole in its positions (which its invariant forbids) fails the
// migration with the class named, rather than packing its members at other positions.
func TestMigrate5to6RefusesAHole(t *testing.T) {
	f := newFixture(t, nil)
	m := keeper.NewMigrator(f.k)
	v5 := m.V5MembersForTest()
	require.NoError(t, v5.Set(f.ctx, collections.Join("A100-40GB", uint64(0)), 1))
	require.NoError(t, v5.Set(f.ctx, collections.Join("A100-40GB", uint64(2)), 3))
	require.ErrorContains(t, m.Migrate5to6(f.ctx), `class "A100-40GB" has position 2 where 1 was due`)
}

// providerNodeTasks is the ground truth of the tasks index: per provider the ids of its
// tasks that have a node, by node and then id (TasksByProvider's order); per node its
// tasks' ids, sorted.
func providerNodeTasks(f *fixture, jobs []uint64) (byProvider map[string][]uint64, byNode map[uint64][]uint64) {
	byProvider, byNode = map[string][]uint64{}, map[uint64][]uint64{}
	var tasks []types.Task
	for _, j := range jobs {
		for _, t := range f.tasks(j) {
			if t.NodeId != 0 {
				tasks = append(tasks, t)
			}
		}
	}
	slices.SortFunc(tasks, func(a, b types.Task) int {
		if a.NodeId != b.NodeId {
			return cmp.Compare(a.NodeId, b.NodeId)
		}
		return cmp.Compare(a.Id, b.Id)
	})
	for _, t := range tasks {
		byProvider[t.Provider] = append(byProvider[t.Provider], t.Id)
		byNode[t.NodeId] = append(byNode[t.NodeId], t.Id)
	}
	return byProvider, byNode
}

// listed pages through TasksByProvider (limit per page, by next key) or TasksByNode and
// returns the ids in the order listed, checking that no task is listed twice.
func listed(t *testing.T, f *fixture, provider string, node uint64, limit uint64) []uint64 {
	t.Helper()
	qs := keeper.NewQueryServerImpl(f.k)
	var ids []uint64
	seen := map[uint64]bool{}
	var key []byte
	for range 1000 {
		pg := &query.PageRequest{Key: key, Limit: limit}
		var tasks []types.Task
		var next []byte
		if provider != "" {
			res, err := qs.TasksByProvider(f.ctx, &types.QueryTasksByProviderRequest{Provider: provider, Pagination: pg})
			require.NoError(t, err)
			tasks, next = res.Tasks, res.Pagination.NextKey
		} else {
			res, err := qs.TasksByNode(f.ctx, &types.QueryTasksByNodeRequest{NodeId: node, Pagination: pg})
			require.NoError(t, err)
			tasks, next = res.Tasks, res.Pagination.NextKey
		}
		for _, task := range tasks {
			require.False(t, seen[task.Id], "task %d listed twice", task.Id)
			seen[task.Id] = true
			ids = append(ids, task.Id)
		}
		if len(next) == 0 {
			break
		}
		key = next
	}
	return ids
}

// Version 7 keeps one index entry a task under (provider, node), where version 6 kept
// two (by node, by provider). TasksByProvider lists a provider's tasks over all its nodes
// and no other provider's, TasksByNode a node's, both whole when paged by next key; the
// migration from 6 moves every entry, leaves none of the old ones, and the lists and the
// invariants are the same after it.
func TestMigrate6to7MergesTheNodeAndProviderIndexes(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.operator("a"), f.operator("b")
	for range 3 {
		f.addNode(a, 2, nil)
	}
	f.addNode(b, 2, nil)
	var jobs []uint64
	for range 4 {
		jobs = append(jobs, f.submit(f.gemmSpec(2)))
	}
	f.next(time.Second)
	byProvider, byNode := providerNodeTasks(f, jobs)
	require.Len(t, byNode, 4, "every node holds a task")
	require.Len(t, byProvider[a], 6)
	check := func() {
		t.Helper()
		for _, p := range []string{a, b} {
			for _, limit := range []uint64{1, 2, 100} {
				require.Equal(t, byProvider[p], listed(t, f, p, 0, limit), "provider %s, pages of %d", p, limit)
			}
		}
		for node, ids := range byNode {
			require.Equal(t, ids, listed(t, f, "", node, 1), "node %d", node)
		}
		require.Empty(t, listed(t, f, "", 999, 10), "a node x/gfl does not know has no tasks")
		f.assertInvariants()
	}
	check()

	m := keeper.NewMigrator(f.k)
	moved, err := m.V6IndexesForTest(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 8, moved)
	require.Empty(t, listed(t, f, a, 0, 100), "the version 6 layout: the new index is empty")
	require.NoError(t, m.Migrate6to7(f.ctx))
	refs, err := m.V1UnassignedRefsForTest(f.ctx)
	require.NoError(t, err)
	require.Zero(t, refs)
	for _, prefix := range []collections.Prefix{types.TasksByNodeKey, types.TasksByProviderKey} {
		it, err := f.env.StoreService.OpenKVStore(f.ctx).Iterator(prefix.Bytes(), storetypes.PrefixEndBytes(prefix.Bytes()))
		require.NoError(t, err)
		require.False(t, it.Valid(), "a version 6 key of prefix %d is left", prefix.Bytes()[0])
		require.NoError(t, it.Close())
	}
	check()
}

// Version 6's two indexes held the same tasks. A provider entry whose task has no node
// would drop out of the provider's list in version 7, and a node entry whose task is not
// that node's would list it under the wrong node: the migration refuses either, naming
// the task, rather than lose or misfile it.
func TestMigrate6to7RefusesAnEntryItsTaskDoesNotMatch(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(m keeper.Migrator, f *fixture, op string, pending uint64) error
		want  string
	}{
		{"a provider entry without a node", func(m keeper.Migrator, f *fixture, op string, pending uint64) error {
			return m.V6ProviderEntryForTest(f.ctx, sdk.MustAccAddressFromBech32(op), pending)
		}, "task %d of a provider's index entry: has node 0"},
		{"a node entry of a task without that node", func(m keeper.Migrator, f *fixture, _ string, pending uint64) error {
			return m.V6NodeEntryForTest(f.ctx, 1, pending)
		}, "task %d of node 1's index entry: has node 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			a := f.operator("a")
			f.addNode(a, 2, nil)
			job := f.submit(f.gemmSpec(3)) // two assigned, one pending
			f.next(time.Second)
			var pending uint64
			for _, task := range f.tasks(job) {
				if task.NodeId == 0 {
					pending = task.Id
				}
			}
			require.NotZero(t, pending)
			m := keeper.NewMigrator(f.k)
			_, err := m.V6IndexesForTest(f.ctx)
			require.NoError(t, err)
			require.NoError(t, c.write(m, f, a, pending))
			require.ErrorContains(t, m.Migrate6to7(f.ctx), fmt.Sprintf(c.want, pending))
		})
	}
}

// Version 12's params have no task_disk_mib_per_gpu (stored as 0, which Validate
// refuses); the migration to 13 sets the default and keeps a value governance set.
func TestMigrate12to13SetsTheTaskDisk(t *testing.T) {
	f := newFixture(t, nil)
	p := f.params()
	p.TaskDiskMibPerGpu = 0
	require.NoError(t, f.k.Params.Set(f.ctx, p))
	require.ErrorIs(t, p.Validate(), types.ErrInvalidParams)
	require.NoError(t, keeper.NewMigrator(f.k).Migrate12to13(f.ctx))
	got := f.params()
	require.EqualValues(t, types.DefaultTaskDiskMiBPerGPU, got.TaskDiskMibPerGpu)
	p.TaskDiskMibPerGpu = types.DefaultTaskDiskMiBPerGPU
	require.Equal(t, p, got, "nothing else changed")

	got.TaskDiskMibPerGpu = 500 << 10
	require.NoError(t, f.k.Params.Set(f.ctx, got))
	require.NoError(t, keeper.NewMigrator(f.k).Migrate12to13(f.ctx))
	require.EqualValues(t, 500<<10, f.params().TaskDiskMibPerGpu)
}

// Version 14 kept no queue counts (the Queue query walked the groups); the migration to
// 15 counts the queue a chain holds: groups queued and parked, tasks parked alone.
func TestMigrate14to15CountsTheQueue(t *testing.T) {
	f := newFixture(t, nil)
	f.submit(f.unplaceable())
	f.blocks(1) // parked: no node
	three := f.unplaceable()
	three.TaskCount = 3
	b := f.submit(three)
	f.blocks(1)
	require.NoError(t, f.k.ParkAloneForTest(f.ctx, f.tasks(b)[1].Id))
	f.blocks(1)
	want := types.QueryQueueResponse{Groups: 2, Waiting: 3, GroupsParked: 2, Parked: 1}
	require.Equal(t, want, queue(t, f))

	require.NoError(t, f.k.QueueCounts.Remove(f.ctx)) // a version 14 store
	require.Equal(t, types.QueryQueueResponse{}, queue(t, f))
	require.NoError(t, keeper.NewMigrator(f.k).Migrate14to15(f.ctx))
	require.Equal(t, want, queue(t, f))
	f.assertInvariants()
}
