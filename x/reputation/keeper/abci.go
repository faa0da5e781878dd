package keeper

import (
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
)

// EndBlocker advances the scoring of ended epochs by at most max_updates_per_block nodes.
// The step runs in a cache context and every node in a nested one (internal/blockhook): a
// failed node is logged and skipped, a failed step is logged and retried next block, and
// neither halts the chain. The app runs it after x/market's EndBlock.
func (k Keeper) EndBlocker(ctx sdk.Context) error {
	_ = blockhook.Apply(ctx, "reputation: scoring", k.scoreBatch)
	return nil
}
