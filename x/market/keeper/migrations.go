package keeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"cosmossdk.io/collections"
	collcodec "cosmossdk.io/collections/codec"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// Migrator runs the market's store migrations.
type Migrator struct{ k Keeper }

// NewMigrator returns the market's migrator.
func NewMigrator(k Keeper) Migrator { return Migrator{k: k} }

// Migrate1to2: the tasks by node and by provider indexes hold only tasks with a node and
// a provider (sparseMulti); version 1 also indexed every unassigned task under node 0 and
// the empty provider. Those entries go. The work is one entry per task never assigned.
func (m Migrator) Migrate1to2(ctx context.Context) error {
	v1 := m.v1Refs()
	if err := removeAll(ctx, v1.byNode, v1.unassignedNode); err != nil {
		return err
	}
	return removeAll(ctx, v1.byProvider, v1.unassignedProvider)
}

// Migrate2to3: the next job id and the next task id move from two sequences (JobSeqKey,
// TaskSeqKey) into one record (IDs), which a submission reads and writes once; and the
// tasks by shard index keeps only the tasks added to a shard after submission (a
// primary's shard follows from its id: shardTasks), so the primaries' entries go. The
// work is one read per task and one delete per primary.
func (m Migrator) Migrate2to3(ctx context.Context) error {
	if err := m.dropPrimaryShardRefs(ctx); err != nil {
		return err
	}
	v2 := m.v2Seqs()
	job, err := v2.job.Peek(ctx)
	if err != nil {
		return err
	}
	task, err := v2.task.Peek(ctx)
	if err != nil {
		return err
	}
	if err := m.k.IDs.Set(ctx, collections.Join(max(job, 1), max(task, 1))); err != nil {
		return err
	}
	if err := collections.Item[uint64](v2.job).Remove(ctx); err != nil {
		return err
	}
	return collections.Item[uint64](v2.task).Remove(ctx)
}

// Migrate3to4: a job's record holds its first task id, and the tasks by job index keeps
// only the tasks added after submission (walkJobTasks finds the primaries by id). Each
// job's first task id follows from any of its primaries (id - index x replicas - replica);
// a job whose primaries were all pruned keeps 0 (none to find). The scheduler groups'
// records are rewritten as varints, a group of one naming its task instead of a waiting
// entry; tasks and jobs are re-encoded by their next write (compactValue reads the old
// encodings).
func (m Migrator) Migrate3to4(ctx context.Context) error {
	byJob := m.v3JobRefs()
	var refs []collections.Pair[uint64, uint64]
	var order []uint64 // jobs in the order their first primary was seen
	aPrimary := map[uint64]types.Task{}
	if err := m.k.taskValues.Walk(ctx, nil, func(id uint64, t types.Task) (bool, error) {
		if t.Role != types.TASK_ROLE_PRIMARY {
			return false, nil
		}
		refs = append(refs, collections.Join(t.JobId, id))
		if _, seen := aPrimary[t.JobId]; !seen {
			aPrimary[t.JobId] = t
			order = append(order, t.JobId)
		}
		return false, nil
	}); err != nil {
		return err
	}
	for _, key := range refs {
		if err := byJob.Remove(ctx, key); err != nil {
			return err
		}
	}
	if err := m.compactGroups(ctx); err != nil {
		return err
	}
	for _, id := range order {
		job, err := m.k.jobValues.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("market: migrate job %d: %w", id, err)
		}
		spec, err := m.k.JobSpecs.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("market: migrate job %d's spec: %w", id, err)
		}
		t := aPrimary[id]
		job.FirstTaskId = t.Id - spec.PrimaryOffset(t.Index, t.Replica)
		if err := m.k.jobValues.Set(ctx, id, job); err != nil {
			return err
		}
	}
	return nil
}

// Migrate4to5: a job's history entries added after submission are counted in
// HistoryAdded, not in its record, whose history_len keeps what submission wrote (the
// implied entry 0), so that a step that only adds an entry leaves the record unwritten.
// A record that counted more moves the rest to HistoryAdded (the length is unchanged).
// The work is one read per job and two writes per job with history.
func (m Migrator) Migrate4to5(ctx context.Context) error {
	var moved []types.Job
	if err := m.k.jobValues.Walk(ctx, nil, func(_ uint64, j types.Job) (bool, error) {
		if j.HistoryLen > 1 {
			moved = append(moved, j)
		}
		return false, nil
	}); err != nil {
		return err
	}
	for _, j := range moved {
		if err := m.k.setHistoryAdded(ctx, j, j.HistoryLen-1); err != nil {
			return err
		}
		j.HistoryLen = 1
		if err := m.k.jobValues.Set(ctx, j.Id, j); err != nil {
			return err
		}
	}
	return nil
}

// Migrate6to7: the tasks-by-node (prefix 8) and tasks-by-provider (prefix 9) indexes
// become one, keyed (provider, node, task) (TasksByProviderNode): a task with a node has
// one index entry where it had two. The work is one read of each indexed task, one write
// and two deletes a task.
func (m Migrator) Migrate6to7(ctx context.Context) error {
	old := m.v1Refs()
	// the two indexes held the same tasks: each node entry's task has that node and a
	// provider, and each provider entry's task a node (one without would drop out of the
	// provider's list)
	task := func(id uint64, entry string, ok func(types.Task) bool) (types.Task, error) {
		t, err := m.k.taskValues.Get(ctx, id)
		if err == nil && !ok(t) {
			err = fmt.Errorf("has node %d, provider %q", t.NodeId, t.Provider)
		}
		if err != nil {
			return t, fmt.Errorf("migrate 6 to 7: task %d of %s's index entry: %w", id, entry, err)
		}
		return t, nil
	}
	byNode, err := keysIn(ctx, old.byNode, nil)
	if err != nil {
		return err
	}
	for _, key := range byNode {
		t, err := task(key.K2(), fmt.Sprintf("node %d", key.K1()), func(t types.Task) bool { return t.NodeId == key.K1() && t.Provider != "" })
		if err != nil {
			return err
		}
		if err := m.k.Tasks.Indexes.ByProviderNode.Reference(ctx, t.Id, t, noTask); err != nil {
			return err
		}
	}
	byProvider, err := keysIn(ctx, old.byProvider, nil)
	if err != nil {
		return err
	}
	for _, key := range byProvider {
		if _, err := task(key.K2(), "a provider", func(t types.Task) bool { return t.NodeId != 0 }); err != nil {
			return err
		}
	}
	if err := old.byNode.Clear(ctx, nil); err != nil {
		return err
	}
	return old.byProvider.Clear(ctx, nil)
}

// Migrate5to6: the class members move from one key a position (prefix 48) into chunks
// of memberChunk positions (MemberChunks), their positions and MemberPos unchanged. The
// work is one read and one delete a member and one write a chunk.
func (m Migrator) Migrate5to6(ctx context.Context) error {
	old := m.v5Members()
	var keys []collections.Pair[string, uint64]
	var chunks [][]byte
	var class string
	var next uint64 // the position the walk expects next of class
	if err := old.Walk(ctx, nil, func(key collections.Pair[string, uint64], node uint64) (bool, error) {
		// a class's positions come in order from 0, without a gap (the slots invariant)
		if len(keys) == 0 || key.K1() != class {
			class, next = key.K1(), 0
		}
		if key.K2() != next {
			return true, fmt.Errorf("market: migrate class members: class %q has position %d where %d was due", class, key.K2(), next)
		}
		next++
		if ck, off := memberKey(class, key.K2()); off == 0 {
			keys, chunks = append(keys, ck), append(chunks, make([]byte, 0, 8*memberChunk))
		}
		chunks[len(chunks)-1] = binary.BigEndian.AppendUint64(chunks[len(chunks)-1], node)
		return false, nil
	}); err != nil {
		return err
	}
	for i, key := range keys {
		if err := m.k.MemberChunks.Set(ctx, key, chunks[i]); err != nil {
			return err
		}
	}
	return old.Clear(ctx, nil)
}

func (m Migrator) dropPrimaryShardRefs(ctx context.Context) error {
	refs := m.v2ShardRefs()
	var primaries []collections.Pair[collections.Pair[uint64, uint32], uint64]
	if err := m.k.taskValues.Walk(ctx, nil, func(id uint64, t types.Task) (bool, error) {
		if t.Role == types.TASK_ROLE_PRIMARY {
			primaries = append(primaries, collections.Join(collections.Join(t.JobId, t.Index), id))
		}
		return false, nil
	}); err != nil {
		return err
	}
	for _, key := range primaries {
		if err := refs.Remove(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// compactGroups rewrites the scheduler groups' records, a fixed-width tuple in version 3,
// as varints (groupValueCodec), and moves a group of one's task from its waiting entry
// into its record (queue.go).
func (m Migrator) compactGroups(ctx context.Context) error {
	old := m.v3Groups()
	var keys []group
	var values []groupValue
	if err := old.Walk(ctx, nil, func(g group, v groupValue) (bool, error) {
		keys, values = append(keys, g), append(values, v)
		return false, nil
	}); err != nil {
		return err
	}
	for i, g := range keys {
		v := values[i]
		if v.K1() == 1 {
			// a group of one names its task in its record, without a waiting entry
			ids, err := m.k.waitingOf(ctx, g.K1(), types.TaskRole(g.K2()), groupState{size: 1}, 2)
			if err != nil {
				return err
			} else if len(ids) != 1 {
				return fmt.Errorf("market: group (job %d, %s) says 1 waiting task, its waiting set has %d", g.K1(), types.TaskRole(g.K2()), len(ids))
			}
			if err := m.k.Waiting.Remove(ctx, collections.Join3(g.K1(), g.K2(), ids[0])); err != nil {
				return err
			}
			v = collections.Join4(v.K1(), ids[0], v.K3(), v.K4())
		}
		if err := m.k.Groups.Set(ctx, g, v); err != nil {
			return err
		}
	}
	return nil
}

// v5Members are the class members as version 5 kept them: (class, position) -> node id.
func (m Migrator) v5Members() collections.Map[collections.Pair[string, uint64], uint64] {
	return collections.NewMap(collections.NewSchemaBuilder(m.k.storeService), collections.NewPrefix(48), "class_members",
		collections.PairKeyCodec(collections.StringKey, collections.Uint64Key), collections.Uint64Value)
}

// v3Groups are the scheduler groups' records as version 3 wrote them.
func (m Migrator) v3Groups() collections.Map[group, groupValue] {
	return collections.NewMap(collections.NewSchemaBuilder(m.k.storeService), types.GroupsKey, "assign_groups",
		collections.PairKeyCodec(collections.Uint64Key, collections.Int32Key),
		collcodec.KeyToValueCodec(collections.QuadKeyCodec(collections.Uint64Key, collections.Uint64Key, collections.Int64Key, collections.Uint32Key)))
}

// v3JobRefs are the raw tasks by job index entries: (job, task).
func (m Migrator) v3JobRefs() collections.KeySet[collections.Pair[uint64, uint64]] {
	return collections.NewKeySet(collections.NewSchemaBuilder(m.k.storeService), types.TasksByJobKey, "tasks_by_job",
		collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key))
}

// v2ShardRefs are the raw tasks by shard index entries: ((job, index), task).
func (m Migrator) v2ShardRefs() collections.KeySet[collections.Pair[collections.Pair[uint64, uint32], uint64]] {
	sb := collections.NewSchemaBuilder(m.k.storeService)
	return collections.NewKeySet(sb, types.TasksByShardKey, "tasks_by_shard",
		collections.PairKeyCodec(collections.PairKeyCodec(collections.Uint64Key, collections.Uint32Key), collections.Uint64Key))
}

// v2Seqs are version 2's sequences of job and task ids.
type v2Seqs struct{ job, task collections.Sequence }

func (m Migrator) v2Seqs() v2Seqs {
	sb := collections.NewSchemaBuilder(m.k.storeService)
	return v2Seqs{
		job:  collections.NewSequence(sb, types.JobSeqKey, "job_seq"),
		task: collections.NewSequence(sb, types.TaskSeqKey, "task_seq"),
	}
}

// v1Refs are the raw tasks-by-node and by-provider index entries and the ranges version 1
// kept unassigned tasks under (node 0, the empty provider).
type v1Refs struct {
	byNode             collections.KeySet[collections.Pair[uint64, uint64]]
	byProvider         collections.KeySet[collections.Pair[sdk.AccAddress, uint64]]
	unassignedNode     collections.Ranger[collections.Pair[uint64, uint64]]
	unassignedProvider collections.Ranger[collections.Pair[sdk.AccAddress, uint64]]
}

func (m Migrator) v1Refs() v1Refs {
	sb := collections.NewSchemaBuilder(m.k.storeService)
	return v1Refs{
		byNode:             collections.NewKeySet(sb, types.TasksByNodeKey, "tasks_by_node", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key)),
		byProvider:         collections.NewKeySet(sb, types.TasksByProviderKey, "tasks_by_provider", collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key)),
		unassignedNode:     collections.NewPrefixedPairRange[uint64, uint64](0),
		unassignedProvider: collections.NewPrefixedPairRange[sdk.AccAddress, uint64](sdk.AccAddress{}),
	}
}

// Migrate7to8: pools are indexed by owner (PoolsByOwnerKey), so that a client's pools are
// listed without reading every pool with its spec (PoolsByOwner). The work is one read
// and one index entry per pool.
func (m Migrator) Migrate7to8(ctx context.Context) error {
	it, err := m.k.Pools.Iterate(ctx, nil)
	if err != nil {
		return err
	}
	pools, err := it.Values() // whole, then indexed: no write while the iterator is open
	if err != nil {
		return err
	}
	for _, p := range pools {
		err := m.k.Pools.Indexes.ByOwner.Reference(ctx, p.Id, p, func() (types.Pool, error) { return types.Pool{}, collections.ErrNotFound })
		if err != nil {
			return fmt.Errorf("migrate 7 to 8: pool %d: %w", p.Id, err)
		}
	}
	return nil
}

// Migrate8to9: the jobs held in each status are counted (JobCountsKey), so that the
// counts are read without reading every job (JobCounts). The work is one index entry
// read per job.
func (m Migrator) Migrate8to9(ctx context.Context) error {
	if err := m.k.recountJobs(ctx); err != nil {
		return fmt.Errorf("migrate 8 to 9: %w", err)
	}
	return nil
}

// Migrate9to10: each pool's spec is stored apart (PoolSpecsKey) and its record keeps the
// spec without its command and environment (poolRecord), so that a unit step, which
// rewrites the record, does not write the spec again. The work is one read and two
// writes per pool.
func (m Migrator) Migrate9to10(ctx context.Context) error {
	it, err := m.k.Pools.Iterate(ctx, nil)
	if err != nil {
		return err
	}
	pools, err := it.Values() // whole, then written: no write while the iterator is open
	if err != nil {
		return err
	}
	for _, pl := range pools {
		if err := m.k.SetPool(ctx, pl); err != nil {
			return fmt.Errorf("migrate 9 to 10: pool %d: %w", pl.Id, err)
		}
	}
	return nil
}

// Migrate10to11: a job with more than programApartBytes of program (command,
// environment, inputs, task arguments) keeps it apart (JobProgramsKey), so that the
// scheduler's read of the spec at each examination does not read it (job_program.go).
// The work is a read of each job's spec, and for those split two writes and the record's.
func (m Migrator) Migrate10to11(ctx context.Context) error {
	it, err := m.k.Jobs.Iterate(ctx, nil)
	if err != nil {
		return err
	}
	ids, err := it.Keys() // whole, then written: no write while the iterator is open
	if err != nil {
		return err
	}
	for _, id := range ids {
		spec, err := m.k.JobSpecs.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("migrate 10 to 11: spec of job %d: %w", id, err)
		}
		if !programApart(spec) {
			continue
		}
		j, err := m.k.jobValues.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("migrate 10 to 11: job %d: %w", id, err)
		}
		if err := m.k.setJobSpec(ctx, &j, spec); err != nil {
			return fmt.Errorf("migrate 10 to 11: job %d: %w", id, err)
		}
		if err := m.k.jobValues.Set(ctx, id, j); err != nil { // the record, its indexes unchanged
			return fmt.Errorf("migrate 10 to 11: job %d: %w", id, err)
		}
	}
	return nil
}

// Migrate11to12: the schedulable nodes are counted by region (RegionNodesKey), for
// SchedulableByRegion, as setSlot counts them from now on. The work is a read of each
// node's slot and a write a region.
func (m Migrator) Migrate11to12(ctx context.Context) error {
	counts := map[string]uint64{}
	var regions []string // in the order the walk first meets them (the map decides nothing)
	if err := m.k.Slots.Walk(ctx, nil, func(_ uint64, s types.NodeSlot) (bool, error) {
		if !s.Active {
			return false, nil
		}
		if counts[s.Region] == 0 {
			regions = append(regions, s.Region)
		}
		counts[s.Region]++
		return false, nil
	}); err != nil {
		return fmt.Errorf("migrate 11 to 12: %w", err)
	}
	for _, r := range regions {
		if err := m.k.RegionNodes.Set(ctx, r, counts[r]); err != nil {
			return fmt.Errorf("migrate 11 to 12: region %q: %w", r, err)
		}
	}
	return nil
}

// Migrate12to13: the params gain task_disk_mib_per_gpu (the disk a task may fill on
// its provider's machine), which a version 12 chain stores as 0, a value Validate
// refuses: it is set to the default. The work is one read and one write.
func (m Migrator) Migrate12to13(ctx context.Context) error {
	p, err := m.k.Params.Get(ctx)
	if err != nil {
		return fmt.Errorf("migrate 12 to 13: %w", err)
	}
	if p.TaskDiskMibPerGpu == 0 {
		p.TaskDiskMibPerGpu = types.DefaultTaskDiskMiBPerGPU
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("migrate 12 to 13: %w", err)
	}
	return m.k.Params.Set(ctx, p)
}

// Migrate13to14: a task won in an auction that ended before its ack (its owner cancelled
// it, its job's deadline passed, its block work failed) left its bid WON with the
// deposit held, where it stayed until the job was pruned with its bids. Version 14
// returns the deposit when such a task ends (finishTask); this returns those a version
// 13 chain still holds: a won bid with a deposit and no task of it assigned is paid back
// and settled. The work is a walk of the bids and, for each job with such a bid, of its
// tasks; the deposits of jobs already pruned are not recorded anywhere and cannot be.
func (m Migrator) Migrate13to14(ctx context.Context) error {
	var won []types.Bid
	if err := m.k.Bids.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], b types.Bid) (bool, error) {
		if b.Status == types.BID_STATUS_WON && b.Deposit.IsPositive() {
			won = append(won, b)
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("migrate 13 to 14: %w", err)
	}
	// the bids are in (job, node) order: one read of each job's tasks
	for i := 0; i < len(won); {
		jobID := won[i].JobId
		var tasks []types.Task
		job, err := m.k.loadJob(ctx, jobID)
		switch {
		case err == nil:
			if tasks, err = m.k.jobTasks(ctx, job); err != nil {
				return fmt.Errorf("migrate 13 to 14: job %d: %w", jobID, err)
			}
		case !errors.Is(err, collections.ErrNotFound):
			return fmt.Errorf("migrate 13 to 14: job %d: %w", jobID, err)
		}
		for ; i < len(won) && won[i].JobId == jobID; i++ {
			b := won[i]
			if wonTaskAssigned(tasks, b.NodeId) {
				continue // held until that task's ack
			}
			if err := m.k.returnDeposit(ctx, &b, types.BID_STATUS_SETTLED); err != nil {
				return fmt.Errorf("migrate 13 to 14: bid of node %d on job %d: %w", b.NodeId, jobID, err)
			}
		}
	}
	return nil
}

// keysIn reads a key set's keys in a range, whole (a caller that writes the set, or
// another collection, does so after the iterator is closed).
func keysIn[K any](ctx context.Context, set collections.KeySet[K], r collections.Ranger[K]) ([]K, error) {
	it, err := set.Iterate(ctx, r)
	if err != nil {
		return nil, err
	}
	return it.Keys()
}

func removeAll[K any](ctx context.Context, set collections.KeySet[K], r collections.Ranger[K]) error {
	keys, err := keysIn(ctx, set, r)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := set.Remove(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// Migrate14to15: version 15 keeps the scheduler queue's counts in one record
// (QueueCounts, queue_counts.go) instead of the Queue query walking every group; this
// counts the queue a version 14 chain holds. The work is a walk of the groups and of the
// tasks parked alone, once.
func (m Migrator) Migrate14to15(ctx context.Context) error {
	if err := m.k.recountQueue(ctx); err != nil {
		return fmt.Errorf("migrate 14 to 15: %w", err)
	}
	return nil
}
