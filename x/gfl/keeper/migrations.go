package keeper

import (
	"context"

	"github.com/flopsnet/flops/x/gfl/types"
)

// Migrator runs x/gfl's store migrations.
type Migrator struct{ k Keeper }

// NewMigrator returns x/gfl's migrator.
func NewMigrator(k Keeper) Migrator { return Migrator{k: k} }

// Migrate1to2 indexes the window's drand bindings by round (RoundBlocks), from which the
// oldest bound round is read: version 1 took the round bound to the oldest block, which
// is not the oldest round once governance has moved the beacon to a network whose rounds
// count lower. The work is one entry per block in the window (at most
// BeaconHistoryBlocks).
func (m Migrator) Migrate1to2(ctx context.Context) error {
	var rounds []types.BlockRound
	if err := m.k.BlockRounds.Walk(ctx, nil, func(_ int64, br types.BlockRound) (bool, error) {
		rounds = append(rounds, br)
		return false, nil
	}); err != nil {
		return err
	}
	for _, br := range rounds {
		if err := m.k.bindRound(ctx, br); err != nil {
			return err
		}
	}
	return nil
}
