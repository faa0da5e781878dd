package keeper

import (
	"context"

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
// ended. Constant work; a failure is logged, never returned to x/epochs (which would halt
// the chain).
func (h epochHooks) AfterEpochEnd(ctx context.Context, identifier string, number int64) error {
	h.k.hookItem(ctx, "reputation: queue epoch", func(ctx sdk.Context) error {
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
	return nil
}

// BeforeEpochStart implements epochstypes.EpochHooks.
func (epochHooks) BeforeEpochStart(context.Context, string, int64) error { return nil }

// scoreBatch scores at most max_updates_per_block nodes of the pending epochs, oldest
// epoch first, and stores where it stopped.
func (k Keeper) scoreBatch(ctx sdk.Context) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	st, err := k.Scoring.Get(ctx)
	if err != nil {
		return err
	}
	budget := int(p.MaxUpdatesPerBlock)
	// Each turn either spends budget or finishes an epoch, so the loop ends.
	for budget > 0 && len(st.Pending) > 0 {
		used, err := k.scoreEpochStep(ctx, p, &st, budget)
		if err != nil {
			return err
		}
		budget -= used
	}
	return k.Scoring.Set(ctx, st)
}

// scoreEpochStep scores up to budget nodes of st.Pending[0] after st.Cursor and returns
// how many it took; when no node is left the epoch leaves the queue.
func (k Keeper) scoreEpochStep(ctx sdk.Context, p types.Params, st *types.ScoringState, budget int) (int, error) {
	epoch := st.Pending[0]
	it, err := k.Scores.Iterate(ctx, new(collections.Range[uint64]).StartExclusive(st.Cursor))
	if err != nil {
		return 0, err
	}
	var ids []uint64
	for ; it.Valid() && len(ids) < budget; it.Next() {
		id, err := it.Key()
		if err != nil {
			_ = it.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	finished := !it.Valid()
	if err := it.Close(); err != nil {
		return 0, err
	}

	for _, id := range ids {
		if err := blockhook.Apply(ctx, "reputation: score node", func(ctx sdk.Context) error {
			return k.scoreNode(ctx, p, id, epoch)
		}); err != nil {
			// The node keeps its score for this epoch; its counters go, so that nothing
			// is left for an epoch that is no longer pending.
			_ = blockhook.Apply(ctx, "reputation: drop counters", func(ctx sdk.Context) error {
				return k.Counters.Remove(ctx, collections.Join(epoch, id))
			})
		}
		st.Cursor = id
	}
	if finished {
		st.Pending = st.Pending[1:]
		st.Cursor = 0
		if err := ctx.EventManager().EmitTypedEvent(&types.EventEpochScored{Epoch: epoch}); err != nil {
			return len(ids), err
		}
	}
	return len(ids), nil
}

// scoreNode applies the epoch's counters to one node: new score, history record, operator
// aggregate, event. A node not yet known in that epoch, or already scored for it, is left
// alone.
func (k Keeper) scoreNode(ctx sdk.Context, p types.Params, id, epoch uint64) error {
	old, err := k.Scores.Get(ctx, id)
	if err != nil {
		return err
	}
	if epoch < old.FirstEpoch || epoch <= old.LastEpoch {
		return nil
	}
	key := collections.Join(epoch, id)
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
