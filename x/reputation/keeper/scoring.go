package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/reputation/types"
)

// Epoch-end scoring. At the end of each x/epochs epoch named by epoch_identifier, the
// current reputation epoch is queued and events start counting in the next one. EndBlock
// then walks the known nodes in id order, at most max_updates_per_block per block,
// resuming from a cursor, and applies types.ComputeScore to each with its counters of the
// queued epoch. An epoch that ends while an earlier one is still being scored waits in
// the queue: epochs are scored one after the other, oldest first, each from the scores
// the previous one left, so a slow queue delays scores but never changes them.

// maxHistoryTrimPerUpdate bounds the old history records removed per node update; after
// governance shortens history_length the excess goes at this pace.
const maxHistoryTrimPerUpdate = 16

// EpochHooks returns the x/epochs hooks of the module.
func (k Keeper) EpochHooks() epochstypes.EpochHooks { return epochHooks{k} }

type epochHooks struct{ k Keeper }

var _ epochstypes.EpochHooks = epochHooks{}

// AfterEpochEnd queues the current reputation epoch for scoring when the params' epoch
// ended. Constant work, atomic; a failure is returned to x/epochs, which logs it and goes
// on (it never halts the chain for a hook).
func (h epochHooks) AfterEpochEnd(ctx context.Context, identifier string, number int64) error {
	return h.k.hookItem(ctx, "reputation: queue epoch", func(ctx sdk.Context) error {
		p, err := h.k.Params.Get(ctx)
		if err != nil || identifier != p.EpochIdentifier {
			return err
		}
		st, err := h.k.Scoring.Get(ctx)
		if err != nil {
			return err
		}
		ended := st.CurrentEpoch
		st.Pending = append(st.Pending, ended)
		st.CurrentEpoch++
		if err := h.k.Scoring.Set(ctx, st); err != nil {
			return err
		}
		return ctx.EventManager().EmitTypedEvent(&types.EventEpochQueued{
			Epoch: ended, EpochIdentifier: identifier, EpochNumber: number, Pending: uint64(len(st.Pending)),
		})
	})
}

// BeforeEpochStart implements epochstypes.EpochHooks.
func (epochHooks) BeforeEpochStart(context.Context, string, int64) error { return nil }

// Kinds of the scoring's block-hook items.
const kindScore = types.ItemScore

// EndBlocker advances the scoring of ended epochs within end_block_gas
// (internal/blockhook), at most max_updates_per_block nodes a block: retries of failed
// nodes first, then the oldest pending epoch from its cursor, each node an atomic unit.
// A node that fails waits in the retries (1, 2, 4, 8 blocks) while the epoch goes on
// without it; after five failures it is resolved by dropping its counters of that epoch
// (it keeps its score: the epoch is not applied to it). The app runs it after x/market's
// EndBlock.
func (k Keeper) EndBlocker(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	r := blockhook.NewRunner(types.ModuleName, blockhook.NewBudget(p.EndBlockGas), k.Retries, blockhook.Kind{
		Name: kindScore,
		Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.scoreNode(ctx, p, it.ID, it.Sub)
		},
		Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			return "the node keeps its score; its counters of the epoch are dropped", k.Counters.Remove(ctx, collections.Join(it.Sub, it.ID))
		},
	})
	if err := r.Retry(ctx, int(p.MaxUpdatesPerBlock)); err != nil {
		return ignoreSpent(err)
	}
	left := int(p.MaxUpdatesPerBlock)
	// each turn scores nodes or finishes an epoch, so the loop ends
	for left > 0 {
		n, more, err := k.scoreEpochStep(ctx, p, r, left)
		if err != nil || !more {
			return ignoreSpent(err)
		}
		left -= n
	}
	return nil
}

func ignoreSpent(err error) error {
	if errors.Is(err, blockhook.ErrBudgetSpent) {
		return nil
	}
	return err
}

// scoreEpochStep scores up to limit nodes of the oldest pending epoch after its cursor,
// each an item of its own that moves the cursor with it, and returns how many it took;
// when no node is left the epoch leaves the queue. more is false when no epoch is
// pending.
func (k Keeper) scoreEpochStep(ctx sdk.Context, p types.Params, r *blockhook.Runner, limit int) (n int, more bool, err error) {
	var ids []uint64
	var epoch uint64
	finished := false
	if err := r.Budget.Run(ctx, "reputation: nodes due", func(c sdk.Context) error {
		st, err := k.Scoring.Get(c)
		if err != nil || len(st.Pending) == 0 {
			return err
		}
		more, epoch = true, st.Pending[0]
		it, err := k.Scores.Iterate(c, new(collections.Range[uint64]).StartExclusive(st.Cursor))
		if err != nil {
			return err
		}
		defer func() { _ = it.Close() }()
		for ; it.Valid() && len(ids) < limit; it.Next() {
			id, err := it.Key()
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		finished = !it.Valid()
		return nil
	}); err != nil || !more {
		return 0, false, err
	}
	advance := func(id uint64) func(sdk.Context) error {
		return func(c sdk.Context) error {
			st, err := k.Scoring.Get(c)
			if err != nil {
				return err
			}
			st.Cursor = id
			return k.Scoring.Set(c, st)
		}
	}
	for _, id := range ids {
		if err := r.Do(ctx, kindScore, blockhook.Item{Kind: kindScore, ID: id, Sub: epoch}, advance(id), advance(id)); err != nil {
			return 0, false, err
		}
	}
	if !finished {
		return len(ids), true, nil
	}
	return len(ids), true, r.Budget.Run(ctx, "reputation: epoch scored", func(c sdk.Context) error {
		st, err := k.Scoring.Get(c)
		if err != nil {
			return err
		}
		st.Pending = st.Pending[1:]
		st.Cursor = 0
		if err := k.Scoring.Set(c, st); err != nil {
			return err
		}
		return c.EventManager().EmitTypedEvent(&types.EventEpochScored{Epoch: epoch})
	})
}

// scoreNode applies the epoch's counters to one node: new score, history record, operator
// aggregate, event. A node not yet known in that epoch, or already scored for it, is left
// alone.
func (k Keeper) scoreNode(ctx sdk.Context, p types.Params, id, epoch uint64) error {
	old, err := k.Scores.Get(ctx, id)
	if err != nil {
		return err
	}
	key := collections.Join(epoch, id)
	if epoch < old.FirstEpoch || epoch <= old.LastEpoch {
		// not the node's epoch, or one it has moved past (a retried node whose next
		// epoch was scored first): nothing to apply, and its counters go
		return k.Counters.Remove(ctx, key)
	}
	c, err := k.Counters.Get(ctx, key)
	found := err == nil
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		c = types.EpochCounters{NodeId: id, Epoch: epoch}
	case err != nil:
		return err
	}

	res := types.ComputeScore(p.Weights(), old.Score, c)
	s := old
	s.PrevScore, s.Score = old.Score, res.Score
	s.Accuracy, s.Responsiveness = res.Accuracy, res.Responsiveness
	s.LastEpoch, s.Outcome = epoch, res.Outcome
	if err := k.setScore(ctx, &old, s); err != nil {
		return err
	}
	if err := k.History.Set(ctx, collections.Join(id, epoch), types.ScoreRecord{
		NodeId: id, Epoch: epoch, Score: s.Score, Accuracy: s.Accuracy, Responsiveness: s.Responsiveness,
		PrevScore: s.PrevScore, Outcome: s.Outcome, Counters: c,
	}); err != nil {
		return err
	}
	if err := k.trimHistory(ctx, id, epoch, p.HistoryLength); err != nil {
		return err
	}
	if found {
		if err := k.Counters.Remove(ctx, key); err != nil {
			return err
		}
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventScoreUpdated{
		NodeId: id, Operator: s.Operator, Epoch: epoch, Score: s.Score, PrevScore: s.PrevScore,
		Accuracy: s.Accuracy, Responsiveness: s.Responsiveness, Outcome: s.Outcome, Eligible: p.Eligible(s.Score),
	})
}

// trimHistory keeps the node's records of the last length epochs up to epoch: it removes
// those of epochs <= epoch - length, at most maxHistoryTrimPerUpdate of them.
func (k Keeper) trimHistory(ctx sdk.Context, id, epoch uint64, length uint32) error {
	if epoch <= uint64(length) {
		return nil
	}
	rng := collections.NewPrefixedPairRange[uint64, uint64](id).EndInclusive(epoch - uint64(length))
	it, err := k.History.Iterate(ctx, rng)
	if err != nil {
		return err
	}
	var old []collections.Pair[uint64, uint64]
	for ; it.Valid() && len(old) < maxHistoryTrimPerUpdate; it.Next() {
		key, err := it.Key()
		if err != nil {
			_ = it.Close()
			return err
		}
		old = append(old, key)
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, key := range old {
		if err := k.History.Remove(ctx, key); err != nil {
			return err
		}
	}
	return nil
}
