package blockhook

import (
	"errors"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/collkeys"
)

// Handler does (part of) one item's work. done says the item is finished; false means it
// made progress (its cursor is saved) and has more to do: it is called again, in this
// block while the budget lasts. An item whose work has already been done (it "moved on")
// is done.
type Handler func(ctx sdk.Context, it Item) (done bool, err error)

// Resolver ends an item that failed MaxAttempts times by its kind's documented rule and
// names the rule.
type Resolver func(ctx sdk.Context, it Item) (rule string, err error)

// Kind is one kind of a module's block-hook item: how to do it and how to end it when it
// keeps failing.
type Kind struct {
	Name    string
	Do      Handler
	Resolve Resolver
}

// Runner drives a module's block hook for one block: every unit of work through the
// budget, every failure through the retries.
type Runner struct {
	Module  string
	Budget  *Budget
	Retries Retries
	kinds   map[string]Kind
}

// NewRunner returns a runner with the module's kinds of items.
func NewRunner(module string, budget *Budget, retries Retries, kinds ...Kind) *Runner {
	r := &Runner{Module: module, Budget: budget, Retries: retries, kinds: make(map[string]Kind, len(kinds))}
	for _, k := range kinds {
		r.kinds[k.Name] = k
	}
	return r
}

// Queue runs the due items of one queue: at most limit of them, oldest first. Each item
// is taken off the queue by the unit that finishes it, so an item the budget cuts short
// stays queued; an item that fails goes to the retries. It returns how many keys it took
// and ErrBudgetSpent when the budget ran out (the caller stops).
func Queue[K any](ctx sdk.Context, r *Runner, kind string, ks collections.KeySet[K], rng collections.Ranger[K], item func(K) Item, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var keys []K
	if err := r.Budget.Run(ctx, r.Module+": "+kind+" due", func(c sdk.Context) error {
		var err error
		keys, err = collkeys.CollectKeys(c, ks, rng, limit)
		return err
	}); err != nil {
		return 0, err
	}
	k, ok := r.kinds[kind]
	if !ok {
		return 0, errors.New(r.Module + ": no handler for " + kind)
	}
	for i, key := range keys {
		it := item(key)
		if err := r.drive(ctx, k, it, func(c sdk.Context) error { return ks.Remove(c, key) }); err != nil {
			return i, err
		}
	}
	return len(keys), nil
}

// Do runs one item of a kind that keeps its own queue (the scheduler's): its parts one
// unit each; onDone (if any) runs in the last unit, onFail in the unit that records a
// failure. It returns ErrBudgetSpent when the budget ran out.
func (r *Runner) Do(ctx sdk.Context, kind string, it Item, onDone, onFail func(sdk.Context) error) error {
	k, ok := r.kinds[kind]
	if !ok {
		return errors.New(r.Module + ": no handler for " + kind)
	}
	if onDone == nil {
		onDone = func(sdk.Context) error { return nil }
	}
	return r.driveWith(ctx, k, it, onDone, onFail)
}

// drive runs an item to its end (or the budget's): its parts one unit each; the last
// unit also takes its entry off the queue (remove). A failure is recorded in a unit of
// its own that takes the entry off too. It returns only ErrBudgetSpent or a store error.
func (r *Runner) drive(ctx sdk.Context, k Kind, it Item, remove func(sdk.Context) error) error {
	return r.driveWith(ctx, k, it, remove, remove)
}

func (r *Runner) driveWith(ctx sdk.Context, k Kind, it Item, remove, onFail func(sdk.Context) error) error {
	for {
		var done bool
		err := r.Budget.Run(ctx, r.Module+": "+k.Name, func(c sdk.Context) error {
			d, err := k.Do(c, it)
			if err != nil {
				return err
			}
			done = d
			if d {
				if err := remove(c); err != nil {
					return err
				}
				return r.Retries.Succeeded(c, it)
			}
			return nil
		})
		switch {
		case errors.Is(err, ErrBudgetSpent):
			return err
		case err != nil:
			return r.Fail(ctx, it, err, onFail)
		case done:
			return nil
		}
	}
}

// Fail takes a failed item off its queue (remove) and records the attempt, in a unit of
// its own; ErrBudgetSpent if the budget has no room left for it (the item then stays
// where it was and runs again next block).
func (r *Runner) Fail(ctx sdk.Context, it Item, cause error, remove func(sdk.Context) error) error {
	ctx.Logger().Error("block hook item failed; queued again", "module", r.Module, "kind", it.Kind, "id", it.ID, "sub", it.Sub, "err", cause)
	return r.Budget.Run(ctx, r.Module+": record failure", func(c sdk.Context) error {
		if err := remove(c); err != nil {
			return err
		}
		_, err := r.Retries.Failed(c, it, cause)
		return err
	})
}

// Retry runs the items due in the retries, at most limit: an item under MaxAttempts is
// done again; one at MaxAttempts is resolved by its kind's rule; one whose resolution
// fails is marked stuck (due again in MaxBackoff blocks). It returns ErrBudgetSpent when
// the budget ran out.
func (r *Runner) Retry(ctx sdk.Context, limit int) error {
	var due []collections.Triple[int64, string, []byte]
	if err := r.Budget.Run(ctx, r.Module+": retries due", func(c sdk.Context) error {
		var err error
		due, err = r.Retries.DueKeys(c, limit)
		return err
	}); err != nil {
		return err
	}
	for _, q := range due {
		it := itemOf(q.K2(), q.K3())
		remove := func(c sdk.Context) error { return r.Retries.Due.Remove(c, q) }
		k, ok := r.kinds[it.Kind]
		if !ok {
			if err := r.Budget.Run(ctx, r.Module+": unknown retry", func(c sdk.Context) error {
				if err := remove(c); err != nil {
					return err
				}
				return r.Retries.Stuck(c, it, errors.New("no handler for kind "+it.Kind))
			}); err != nil {
				return err
			}
			continue
		}
		n, err := r.Retries.Attempt(ctx, it)
		if err != nil {
			return err
		}
		if n < MaxAttempts {
			if err := r.retryOnce(ctx, k, it, remove); err != nil {
				return err
			}
			continue
		}
		err = r.Budget.Run(ctx, r.Module+": resolve "+it.Kind, func(c sdk.Context) error {
			if err := remove(c); err != nil {
				return err
			}
			rule, err := k.Resolve(c, it)
			if err != nil {
				return err
			}
			return r.Retries.Resolved(c, it, rule, nil)
		})
		switch {
		case errors.Is(err, ErrBudgetSpent):
			return err
		case err != nil:
			ctx.Logger().Error("block hook item could not be resolved; stuck", "module", r.Module, "kind", it.Kind, "id", it.ID, "err", err)
			if err := r.Budget.Run(ctx, r.Module+": stuck", func(c sdk.Context) error {
				if err := remove(c); err != nil {
					return err
				}
				return r.Retries.Stuck(c, it, err)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// retryOnce does a retried item once more: finished, it is forgotten; with more to do,
// it is due again next block; failed, the attempt counts.
func (r *Runner) retryOnce(ctx sdk.Context, k Kind, it Item, remove func(sdk.Context) error) error {
	err := r.Budget.Run(ctx, r.Module+": retry "+it.Kind, func(c sdk.Context) error {
		if err := remove(c); err != nil {
			return err
		}
		done, err := k.Do(c, it)
		if err != nil {
			return err
		}
		if done {
			return r.Retries.Succeeded(c, it)
		}
		return r.Retries.Again(c, it)
	})
	switch {
	case errors.Is(err, ErrBudgetSpent):
		return err
	case err != nil:
		return r.Fail(ctx, it, err, remove)
	}
	return nil
}
