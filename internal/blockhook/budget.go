package blockhook

import (
	"errors"
	"fmt"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/branch"
)

// ErrBudgetSpent: the block's work budget ran out; what was running was not written and
// is done in a later block. It is not the item's failure.
var ErrBudgetSpent = errors.New("block work budget spent")

// Budget meters a block hook's work by what it costs, not by how many items it pops:
// gas, as the SDK charges every store read, write and iteration, on a meter of the hook's
// own whose limit is a module param. Every unit of work runs through Run, atomically, on
// a child meter holding what is left of the budget; a unit that runs out of it is
// discarded whole and the hook stops for the block, so that a budget can be exhausted
// anywhere without leaving half an item written.
type Budget struct {
	limit uint64
	used  uint64
}

// NewBudget returns a budget of limit gas.
func NewBudget(limit uint64) *Budget { return &Budget{limit: limit} }

// Limit is the budget's gas.
func (b *Budget) Limit() uint64 { return b.limit }

// Used is the gas spent so far.
func (b *Budget) Used() uint64 { return b.used }

// Remaining is the gas left.
func (b *Budget) Remaining() uint64 { return b.limit - b.used }

// Spent says whether nothing is left.
func (b *Budget) Spent() bool { return b.used >= b.limit }

// Run runs fn on a branch of ctx whose gas meter holds what is left of the budget. It
// returns nil when fn succeeded (the branch is written), ErrBudgetSpent when the budget
// ran out inside fn (nothing written; the caller stops and leaves the work queued), or
// fn's error or panic as an error (nothing written; the item failed). The gas fn used is
// spent either way. A unit that runs out of gas while it had at least half the block's
// budget is a failure (work is cut in parts far smaller than that, so it would never
// complete), reported as an error wrapping ErrItemTooBig.
func (b *Budget) Run(ctx sdk.Context, what string, fn func(ctx sdk.Context) error) (err error) {
	if b.Spent() {
		return ErrBudgetSpent
	}
	whole := b.Remaining() >= b.limit/2
	meter := storetypes.NewGasMeter(b.Remaining())
	cacheCtx, write := branch.Context(ctx.WithGasMeter(meter))
	defer func() {
		b.used += meter.GasConsumedToLimit()
		if r := recover(); r != nil {
			switch r.(type) {
			case storetypes.ErrorOutOfGas, storetypes.ErrorGasOverflow:
				if whole {
					err = fmt.Errorf("%s: %w: it needs more than half the block budget of %d gas", what, ErrItemTooBig, b.limit)
				} else {
					err = ErrBudgetSpent
				}
			default:
				err = fmt.Errorf("%s: panic: %v", what, r)
			}
		}
		if err == nil {
			write()
		}
	}()
	return fn(cacheCtx)
}

// ErrItemTooBig: an item that runs out of gas with a whole block's budget to itself.
var ErrItemTooBig = errors.New("item too big for one block")
