package keeper

import (
	"context"
	"fmt"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/market/types"
)

// Draw is the scheduler's power-of-two-choices draw for one task: how many eligible
// candidates it gathered, the two it drew and their reputation, and the node it keeps.
type Draw struct {
	Candidates     int
	A, B           types.NodeSlot
	ScoreA, ScoreB sdkmath.LegacyDec
	Winner         types.NodeSlot
}

// DrawForTest runs the scheduler's draw for a pending task on ctx without writing
// anything, and returns it; tests check that its winner is the node the scheduler then
// assigns.
func (k Keeper) DrawForTest(ctx sdk.Context, taskID uint64) (Draw, bool, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return Draw{}, false, err
	}
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return Draw{}, false, err
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return Draw{}, false, err
	}
	sb := newSched()
	classes, err := sb.classesOf(ctx, k, job)
	if err != nil {
		return Draw{}, false, err
	}
	seed, ready, err := k.drawSeed(ctx, &t)
	if err != nil || !ready {
		return Draw{}, false, err
	}
	d, found, err := k.draw(ctx, p, sb, classes, job, t, seed)
	if err != nil || !found {
		return Draw{}, found, err
	}
	return Draw{
		Candidates: len(d.pool), A: d.a.slot, B: d.b.slot, ScoreA: d.a.score, ScoreB: d.b.score, Winner: d.best.slot,
	}, true, nil
}

// LoadPPM exposes loadPPM.
func LoadPPM(used, total uint32) uint32 { return loadPPM(used, total) }

// CanMove exposes the lifecycle core's table of task moves.
func CanMove(from, to types.TaskStatus) bool { return canMove(from, to) }

// TransitionForTest runs the lifecycle core's transition of a stored task.
func (k Keeper) TransitionForTest(ctx sdk.Context, taskID uint64, to types.TaskStatus) error {
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return err
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	return k.transition(ctx, p, &job, &t, to, step{}, nil)
}

// ParkGroupForTest parks a job's queued primaries as the scheduler does when no node can
// take them (tests that need many groups due in one block).
func (k Keeper) ParkGroupForTest(ctx sdk.Context, jobID uint64) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	job, err := k.loadJob(ctx, jobID)
	if err != nil {
		return err
	}
	return k.parkGroup(ctx, p, job, types.TASK_ROLE_PRIMARY)
}

// ParkAloneForTest parks one pending task on its own, due at this height, as the
// scheduler does with a task that found no node because of the nodes it excludes.
func (k Keeper) ParkAloneForTest(ctx sdk.Context, taskID uint64) error {
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return err
	}
	job, err := k.loadJob(ctx, t.JobId)
	if err != nil {
		return err
	}
	return k.park(ctx, job, t, ctx.BlockHeight(), 1)
}

// AssignAttempts is how many times a task's assignment failed and was handed to the
// block-hook retries.
func (k Keeper) AssignAttempts(ctx sdk.Context, taskID uint64) (uint32, error) {
	return k.Retries.Attempt(ctx, blockhook.Item{Kind: kindAssign, ID: taskID})
}

// V1UnassignedRefsForTest writes the index entries version 1 of the store kept for an
// unassigned task (node 0, the empty provider), and counts all such entries.
func (m Migrator) V1UnassignedRefsForTest(ctx context.Context, taskIDs ...uint64) (int, error) {
	v1 := m.v1Refs()
	for _, id := range taskIDs {
		if err := v1.byNode.Set(ctx, collections.Join(uint64(0), id)); err != nil {
			return 0, err
		}
		if err := v1.byProvider.Set(ctx, collections.Join(sdk.AccAddress{}, id)); err != nil {
			return 0, err
		}
	}
	n, err := countAll(ctx, v1.byNode, v1.unassignedNode)
	if err != nil {
		return 0, err
	}
	p, err := countAll(ctx, v1.byProvider, v1.unassignedProvider)
	return n + p, err
}

func countAll[K any](ctx context.Context, set collections.KeySet[K], r collections.Ranger[K]) (int, error) {
	it, err := set.Iterate(ctx, r)
	if err != nil {
		return 0, err
	}
	keys, err := it.Keys()
	return len(keys), err
}

// V2SeqsForTest sets version 2's sequences of job and task ids, as a version 2 store
// held them, and reports whether either is still in the store.
func (m Migrator) V2SeqsForTest(ctx context.Context, job, task uint64) (bool, error) {
	v2 := m.v2Seqs()
	if job > 0 {
		if err := v2.job.Set(ctx, job); err != nil {
			return false, err
		}
		if err := v2.task.Set(ctx, task); err != nil {
			return false, err
		}
	}
	a, err := collections.Item[uint64](v2.job).Has(ctx)
	if err != nil {
		return false, err
	}
	b, err := collections.Item[uint64](v2.task).Has(ctx)
	return a || b, err
}

// V2ShardRefsForTest writes the tasks by shard index entries of the given tasks as
// version 2 kept them (every task had one) and counts all entries of the index.
func (m Migrator) V2ShardRefsForTest(ctx context.Context, tasks ...types.Task) (int, error) {
	refs := m.v2ShardRefs()
	for _, t := range tasks {
		if err := refs.Set(ctx, collections.Join(collections.Join(t.JobId, t.Index), t.Id)); err != nil {
			return 0, err
		}
	}
	n := 0
	err := refs.Walk(ctx, nil, func(collections.Pair[collections.Pair[uint64, uint32], uint64]) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

// ShardTasksForTest returns every task of a job's shard, in id order.
func (k Keeper) ShardTasksForTest(ctx context.Context, job types.Job, index uint32) ([]types.Task, error) {
	return k.shardTasks(ctx, job, index)
}

// JobTasksForTest returns every task of a job, in id order.
func (k Keeper) JobTasksForTest(ctx context.Context, jobID uint64) ([]types.Task, error) {
	job, err := k.loadJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return k.jobTasks(ctx, job)
}

// V3JobForTest puts a job back in version 3's form: its record without a first task id
// and a tasks by job entry for each of its tasks; it returns the index's entries of the
// job after.
func (m Migrator) V3JobForTest(ctx context.Context, jobID uint64) (int, error) {
	job, err := m.k.loadJob(ctx, jobID)
	if err != nil {
		return 0, err
	}
	tasks, err := m.k.jobTasks(ctx, job)
	if err != nil {
		return 0, err
	}
	job.FirstTaskId = 0
	job.Spec = types.JobSpec{}
	if err := m.k.jobValues.Set(ctx, jobID, job); err != nil {
		return 0, err
	}
	refs := m.v3JobRefs()
	for _, t := range tasks {
		if err := refs.Set(ctx, collections.Join(t.JobId, t.Id)); err != nil {
			return 0, err
		}
	}
	return m.JobRefsForTest(ctx, jobID)
}

// JobRefsForTest counts the tasks by job index entries of a job.
func (m Migrator) JobRefsForTest(ctx context.Context, jobID uint64) (int, error) {
	n := 0
	err := m.v3JobRefs().Walk(ctx, collections.NewPrefixedPairRange[uint64, uint64](jobID), func(collections.Pair[uint64, uint64]) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

// V3GroupsForTest rewrites the scheduler groups' records as version 3 did (a fixed-width
// tuple; a group of one's task with a waiting entry) and returns them, as GroupsForTest
// does.
func (m Migrator) V3GroupsForTest(ctx context.Context) ([]string, error) {
	var keys []group
	var values []groupValue
	if err := m.k.Groups.Walk(ctx, nil, func(g group, v groupValue) (bool, error) {
		keys, values = append(keys, g), append(values, v)
		return false, nil
	}); err != nil {
		return nil, err
	}
	for i, g := range keys {
		if err := m.v3Groups().Set(ctx, g, values[i]); err != nil {
			return nil, err
		}
		if values[i].K1() == 1 { // version 3 gave a group of one's task its entry
			if err := m.k.Waiting.Set(ctx, collections.Join3(g.K1(), g.K2(), values[i].K2())); err != nil {
				return nil, err
			}
		}
	}
	return m.k.groupsOf(ctx, m.v3Groups())
}

// WaitingForTest counts the scheduler's waiting set entries.
func (k Keeper) WaitingForTest(ctx context.Context) (int, error) {
	n := 0
	err := k.Waiting.Walk(ctx, nil, func(collections.Triple[uint64, int32, uint64]) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

// GroupsForTest returns the scheduler groups' records, one line each, in key order.
func (k Keeper) GroupsForTest(ctx context.Context) ([]string, error) {
	return k.groupsOf(ctx, k.Groups)
}

func (k Keeper) groupsOf(ctx context.Context, groups collections.Map[group, groupValue]) ([]string, error) {
	var out []string
	err := groups.Walk(ctx, nil, func(g group, v groupValue) (bool, error) {
		out = append(out, fmt.Sprintf("job %d role %d: %d waiting from %d, parked %d, tries %d", g.K1(), g.K2(), v.K1(), v.K2(), v.K3(), v.K4()))
		return false, nil
	})
	return out, err
}

// WaitsInGroupForTest says whether a pending task waits in its scheduler group (named by
// a group of one's record, or in the waiting set).
func (k Keeper) WaitsInGroupForTest(ctx context.Context, t types.Task) (bool, error) {
	return k.waitsInGroup(ctx, t)
}

// LiveJobTaskIDsForTest is the sweeps' list of a job's task ids after a cursor.
func (k Keeper) LiveJobTaskIDsForTest(ctx context.Context, jobID, after uint64, n int) ([]uint64, error) {
	job, err := k.loadJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return k.liveJobTaskIDs(ctx, job, after, n)
}

// SameRecordForTest is sameRecord: whether saveJob may leave a job's record unwritten.
func SameRecordForTest(a, b types.Job) bool { return sameRecord(a, b) }

// ClassesForTest is the scheduler's GPU classes for a job (its allowed classes that have
// nodes), as a block's first examination of it finds them, and the job's allowed classes
// as the scheduler's copy of the job holds them after.
func (k Keeper) ClassesForTest(ctx sdk.Context, jobID uint64) (classes, allowed []string, err error) {
	job, err := k.loadJob(ctx, jobID)
	if err != nil {
		return nil, nil, err
	}
	classes, err = newSched().classesOf(ctx, k, job)
	return classes, job.Spec.Requirements.AllowedClasses, err
}

// MemberChunk is memberChunk: the class positions one MemberChunks key holds.
const MemberChunk = memberChunk

// MemberAtForTest is the node at a class's position, as the draw reads it.
func (k Keeper) MemberAtForTest(ctx context.Context, class string, pos uint64) (uint64, error) {
	return k.memberAt(ctx, class, pos)
}

// V5MembersForTest is the class members' map as version 5 kept it (prefix 48).
func (m Migrator) V5MembersForTest() collections.Map[collections.Pair[string, uint64], uint64] {
	return m.v5Members()
}

// V6IndexesForTest rewrites the live tasks' (provider, node) index entries as version 6
// kept them: (node, task) in prefix 8 and (provider, task) in prefix 9, the new index
// cleared. It returns how many tasks it moved.
func (m Migrator) V6IndexesForTest(ctx context.Context) (int, error) {
	old := m.v1Refs()
	type entry struct {
		provider sdk.AccAddress
		node     uint64
		task     uint64
	}
	var entries []entry
	err := m.k.Tasks.Indexes.ByProviderNode.Walk(ctx, nil, func(ref collections.Pair[sdk.AccAddress, uint64], task uint64) (bool, error) {
		entries = append(entries, entry{ref.K1(), ref.K2(), task})
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if err := old.byNode.Set(ctx, collections.Join(e.node, e.task)); err != nil {
			return 0, err
		}
		if err := old.byProvider.Set(ctx, collections.Join(e.provider, e.task)); err != nil {
			return 0, err
		}
		if err := m.k.Tasks.Indexes.ByProviderNode.Unreference(ctx, e.task, func() (types.Task, error) { return m.k.taskValues.Get(ctx, e.task) }); err != nil {
			return 0, err
		}
	}
	return len(entries), nil
}

// V6ProviderEntryForTest writes a version 6 tasks-by-provider entry (prefix 9).
func (m Migrator) V6ProviderEntryForTest(ctx context.Context, provider sdk.AccAddress, task uint64) error {
	return m.v1Refs().byProvider.Set(ctx, collections.Join(provider, task))
}

// V6NodeEntryForTest writes a version 6 tasks-by-node entry (prefix 8).
func (m Migrator) V6NodeEntryForTest(ctx context.Context, node, task uint64) error {
	return m.v1Refs().byNode.Set(ctx, collections.Join(node, task))
}
