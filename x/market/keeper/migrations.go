package keeper

import (
	"context"

	"cosmossdk.io/collections"

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

func removeAll[K any](ctx context.Context, set collections.KeySet[K], r collections.Ranger[K]) error {
	it, err := set.Iterate(ctx, r)
	if err != nil {
		return err
	}
	keys, err := it.Keys()
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
