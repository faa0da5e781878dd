// Package blockhook runs one queued item of a block hook (EndBlock work, epoch hooks) in
// a cache context (a branch of the block's state, internal/branch: the SDK's CacheContext
// without its copy of every key read): its writes land only if it succeeds, and an error
// or a panic is logged and skipped so that one bad item never halts the chain (DESIGN.md
// section 7, Osmosis' pattern).
package blockhook

import (
	"fmt"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/branch"
)

// Apply runs fn on a branch of ctx and writes the branch back only if fn returns nil.
// A failure (error or panic) is logged with what and returned; the caller decides whether
// to drop or retry the item. Running out of gas is not the item's failure but the
// meter's: it panics on, to the Budget unit (or the transaction) that owns the meter.
func Apply(ctx sdk.Context, what string, fn func(ctx sdk.Context) error) (err error) {
	cacheCtx, write := branch.Context(ctx)
	defer func() {
		if r := recover(); r != nil {
			switch r.(type) {
			case storetypes.ErrorOutOfGas, storetypes.ErrorGasOverflow:
				panic(r)
			}
			err = fmt.Errorf("%s: panic: %v", what, r)
		}
		if err != nil {
			ctx.Logger().Error("block hook item failed; skipped", "item", what, "err", err)
			return
		}
		write()
	}()
	return fn(cacheCtx)
}
