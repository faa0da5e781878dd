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
	sb := collections.NewSchemaBuilder(m.k.storeService)
	byNode := collections.NewKeySet(sb, types.TasksByNodeKey, "tasks_by_node", collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key))
	byProvider := collections.NewKeySet(sb, types.TasksByProviderKey, "tasks_by_provider", collections.PairKeyCodec(sdk.AccAddressKey, collections.Uint64Key))
	if err := removeAll(ctx, byNode, collections.NewPrefixedPairRange[uint64, uint64](0)); err != nil {
		return err
	}
	return removeAll(ctx, byProvider, collections.NewPrefixedPairRange[sdk.AccAddress, uint64](sdk.AccAddress{}))
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
