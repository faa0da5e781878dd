package keeper

import (
	"context"
	"errors"
	"fmt"
	"math"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// The scheduler's queue (keeper.go: AssignQueue, Waiting, GroupParked, AssignRetries).
// A pending task the scheduler may take is, at every moment, in exactly one of:
//
//   - Waiting, in its group (job, role); the group's record (Groups) counts its waiting
//     tasks, and the group is either queued in AssignQueue at the job's priority or parked
//     (GroupRetryAt) until a height;
//   - parked alone (AssignRetryAt, AssignRetries): it found no node for a reason of its
//     own, the nodes it excludes, while its group may still be placed.
//
// Every change here moves the queue's counts (queue_counts.go), which the Queue query
// reads instead of the groups.
//
// A group is queued or parked only while it has a waiting task. Parking a group costs
// the same whatever its size: a job of 5,000 tasks nobody can take costs a block one
// examination when its retry comes, not one per task.
//
// A group of one waiting task names it in its record (size 1, first: the task) and has
// no Waiting entry; a group of several has an entry per waiting task. Most jobs have one
// task: the entry cost each a write at submission and a read and a delete at assignment.
// The form is the same whatever the path that led to it (a group down to one task moves
// the last into its record, a second task moves it back out), so an imported genesis
// stores what the exporting chain did.

// group is a scheduler group: a job and a task role.
type group = collections.Pair[uint64, int32]

func groupOf(t types.Task) group { return collections.Join(t.JobId, int32(t.Role)) }

func waitingKey(t types.Task) collections.Triple[uint64, int32, uint64] {
	return collections.Join3(t.JobId, int32(t.Role), t.Id)
}

// groupState is a group's record: its waiting tasks, the lowest waiting task id (0: not
// known, after that task left a group of several), the height it is parked until (0:
// queued) and its failed tries.
type groupState struct {
	size   uint64
	first  uint64
	parked int64
	tries  uint32
}

func (k Keeper) getGroup(ctx context.Context, g group) (groupState, bool, error) {
	v, err := k.Groups.Get(ctx, g)
	if errors.Is(err, collections.ErrNotFound) {
		return groupState{}, false, nil
	} else if err != nil {
		return groupState{}, false, err
	}
	return groupState{size: v.K1(), first: v.K2(), parked: v.K3(), tries: v.K4()}, true, nil
}

func (k Keeper) setGroup(ctx context.Context, g group, s groupState) error {
	return k.Groups.Set(ctx, g, collections.Join4(s.size, s.first, s.parked, s.tries))
}

// enqueue puts a pending task in its group's waiting set; a group that had none is
// queued, with the task in its record alone.
func (k Keeper) enqueue(ctx context.Context, job types.Job, t types.Task) error {
	// the task is not waiting: it is new, or its last status's entry was released
	g := groupOf(t)
	s, found, err := k.getGroup(ctx, g)
	if err != nil {
		return err
	}
	if !found {
		if err := k.setGroup(ctx, g, groupState{size: 1, first: t.Id}); err != nil {
			return err
		}
		if err := k.moveQueueCounts(ctx, 1, 1, 0, 0); err != nil {
			return err
		}
		return k.AssignQueue.Set(ctx, groupKey(job, t.Role))
	}
	if s.size == 1 {
		// the record's task takes its entry: the group holds several now
		if err := k.Waiting.Set(ctx, collections.Join3(g.K1(), g.K2(), s.first)); err != nil {
			return err
		}
	}
	if err := k.Waiting.Set(ctx, waitingKey(t)); err != nil {
		return err
	}
	s.size++
	if s.first != 0 && t.Id < s.first {
		s.first = t.Id
	}
	if err := k.moveQueueCounts(ctx, 0, 1, 0, 0); err != nil {
		return err
	}
	return k.setGroup(ctx, g, s)
}

// dequeue takes a task out of the scheduler's queue, wherever it is; a group left with no
// waiting task leaves the queue or its parking.
func (k Keeper) dequeue(ctx context.Context, job types.Job, t types.Task) error {
	// a pending task waits in its group or is parked alone, never both
	g := groupOf(t)
	s, found, err := k.getGroup(ctx, g)
	if err != nil {
		return err
	}
	if found && s.size == 1 && s.first == t.Id {
		// the group's one task, in its record: the group goes
		if err := k.Groups.Remove(ctx, g); err != nil {
			return err
		}
		if s.parked != 0 {
			if err := k.moveQueueCounts(ctx, -1, -1, -1, 0); err != nil {
				return err
			}
			return k.GroupRetryAt.Remove(ctx, collections.Join3(s.parked, g.K1(), g.K2()))
		}
		if err := k.moveQueueCounts(ctx, -1, -1, 0, 0); err != nil {
			return err
		}
		return k.AssignQueue.Remove(ctx, groupKey(job, t.Role))
	}
	wk := waitingKey(t)
	has := false
	if found && s.size > 1 {
		if has, err = k.Waiting.Has(ctx, wk); err != nil {
			return err
		}
	}
	if !has {
		_, err := k.unpark(ctx, t.Id)
		return err
	}
	if err := k.Waiting.Remove(ctx, wk); err != nil {
		return err
	}
	if err := k.moveQueueCounts(ctx, 0, -1, 0, 0); err != nil {
		return err
	}
	s.size--
	if s.first == t.Id {
		s.first = 0
	}
	if s.size == 1 {
		// the last one moves into the record
		last := s.first
		if last == 0 {
			ids, err := k.waitingOf(ctx, g.K1(), types.TaskRole(g.K2()), s, 2)
			if err != nil {
				return err
			} else if len(ids) != 1 {
				return fmt.Errorf("market: group (job %d, %s) says 1 waiting task, its waiting set has %d", g.K1(), types.TaskRole(g.K2()), len(ids))
			}
			last = ids[0]
		}
		if err := k.Waiting.Remove(ctx, collections.Join3(g.K1(), g.K2(), last)); err != nil {
			return err
		}
		s.first = last
	}
	return k.setGroup(ctx, g, s)
}

// waitsInGroup says whether a pending task waits in its group: named by a group of one's
// record, or with its entry in a group of several.
func (k Keeper) waitsInGroup(ctx context.Context, t types.Task) (bool, error) {
	s, found, err := k.getGroup(ctx, groupOf(t))
	if err != nil || !found {
		return false, err
	}
	if s.size == 1 {
		return s.first == t.Id, nil
	}
	return k.Waiting.Has(ctx, waitingKey(t))
}

// waitingOf returns up to limit waiting task ids of a group, oldest first: from its record
// when the group holds one task, from the waiting set otherwise.
func (k Keeper) waitingOf(ctx context.Context, jobID uint64, role types.TaskRole, s groupState, limit int) ([]uint64, error) {
	if s.size == 1 && s.first != 0 {
		// (first is 0 only while the last task's entry is looked for: dequeue, the
		// migration to version 4)
		return []uint64{s.first}, nil
	}
	rng := collections.NewSuperPrefixedTripleRange[uint64, int32, uint64](jobID, int32(role))
	if s.first != 0 {
		rng = new(collections.Range[collections.Triple[uint64, int32, uint64]]).
			StartInclusive(collections.Join3(jobID, int32(role), s.first)).
			EndInclusive(collections.Join3(jobID, int32(role), uint64(math.MaxUint64)))
	}
	it, err := k.Waiting.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	var out []uint64
	for ; it.Valid() && len(out) < limit; it.Next() {
		key, err := it.Key()
		if err != nil {
			return nil, err
		}
		out = append(out, key.K3())
	}
	return out, nil
}

// backoff is the wait after the tries-th failed try: 1, 2, 4, ... blocks, at most
// assign_retry_max_blocks.
func backoff(p types.Params, tries uint32) int64 {
	wait := int64(p.AssignRetryMaxBlocks)
	if tries < 32 {
		wait = min(wait, int64(1)<<tries)
	}
	return wait
}

// parkGroup takes a queued group no node could take out of the queue until a later block
// (backoff after its failed tries); its tasks stay waiting in it.
func (k Keeper) parkGroup(ctx context.Context, p types.Params, job types.Job, role types.TaskRole) error {
	g := collections.Join(job.Id, int32(role))
	s, found, err := k.getGroup(ctx, g)
	if err != nil {
		return err
	} else if !found || s.parked != 0 {
		return fmt.Errorf("market: park group (job %d, %s): not queued", job.Id, role)
	}
	if err := k.AssignQueue.Remove(ctx, groupKey(job, role)); err != nil {
		return err
	}
	s.parked = sdk.UnwrapSDKContext(ctx).BlockHeight() + backoff(p, s.tries)
	s.tries++
	if err := k.setGroup(ctx, g, s); err != nil {
		return err
	}
	if err := k.moveQueueCounts(ctx, 0, 0, 1, 0); err != nil {
		return err
	}
	return k.GroupRetryAt.Set(ctx, collections.Join3(s.parked, job.Id, int32(role)))
}

// requeueGroup brings a parked group whose retry height has come back to the queue; it
// keeps its failed tries until it places a task.
func (k Keeper) requeueGroup(ctx context.Context, g group) error {
	s, found, err := k.getGroup(ctx, g)
	if err != nil {
		return err
	} else if !found || s.parked == 0 {
		return fmt.Errorf("market: requeue group (job %d, %s): not parked", g.K1(), types.TaskRole(g.K2()))
	}
	if err := k.GroupRetryAt.Remove(ctx, collections.Join3(s.parked, g.K1(), g.K2())); err != nil {
		return err
	}
	s.parked = 0
	if err := k.setGroup(ctx, g, s); err != nil {
		return err
	}
	if err := k.moveQueueCounts(ctx, 0, 0, -1, 0); err != nil {
		return err
	}
	spec, err := k.JobSpecs.Get(ctx, g.K1())
	if err != nil {
		return err
	}
	return k.AssignQueue.Set(ctx, groupKey(types.Job{Id: g.K1(), Spec: spec}, types.TaskRole(g.K2())))
}

// resetTries: a group that placed a task starts its back-off again.
func (k Keeper) resetTries(ctx context.Context, g group) error {
	s, found, err := k.getGroup(ctx, g)
	if err != nil || !found || s.tries == 0 {
		return err
	}
	s.tries = 0
	return k.setGroup(ctx, g, s)
}

// park takes a pending task that no node could take for a reason of its own out of its
// group until height at (the tries-th failed try); it stays PENDING.
func (k Keeper) park(ctx context.Context, job types.Job, t types.Task, at int64, tries uint32) error {
	if t.Status != types.TASK_STATUS_PENDING {
		return fmt.Errorf("market: park task %d: it is %s", t.Id, t.Status)
	}
	if err := k.dequeue(ctx, job, t); err != nil {
		return err
	}
	if err := k.AssignRetries.Set(ctx, t.Id, collections.Join(at, tries)); err != nil {
		return err
	}
	if err := k.moveQueueCounts(ctx, 0, 0, 0, 1); err != nil {
		return err
	}
	return k.AssignRetryAt.Set(ctx, collections.Join(at, t.Id))
}

// unpark drops a task's own parking, if it has one, and says whether it had.
func (k Keeper) unpark(ctx context.Context, taskID uint64) (bool, error) {
	r, err := k.AssignRetries.Get(ctx, taskID)
	if errors.Is(err, collections.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := k.AssignRetryAt.Remove(ctx, collections.Join(r.K1(), taskID)); err != nil {
		return false, err
	}
	if err := k.moveQueueCounts(ctx, 0, 0, 0, -1); err != nil {
		return false, err
	}
	return true, k.AssignRetries.Remove(ctx, taskID)
}
