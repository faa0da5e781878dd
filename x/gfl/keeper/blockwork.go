package keeper

import (
	"context"
	"errors"
	"math"
	"time"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/gfl/types"
)

// x/gfl's block work (EndBlock), within end_block_gas (internal/blockhook): retries of
// failed items first, then challenges past their commit deadline (MISSED), past their
// reveal deadline (FAILED), the challenges due, and the pending rebalance a node at a
// time. max_challenges_per_block and max_rebalance_per_block still cap the items taken.
// An item that fails waits in the retries (1, 2, 4, 8 blocks) and is resolved by its
// kind's rule after five failures:
//
//	issue      the node's challenge is rescheduled one challenge interval later
//	miss/fail  the challenge is dropped without its statistics, penalty or hooks: the
//	           node is free to be challenged again (nothing is held by a challenge)
//	rebalance  the node keeps its power of the previous epoch (ugfl unchanged), its
//	           statistics of the epoch are dropped
//	retire     the node's deletion is put off one node_retention_blocks

const (
	kindIssue     = types.ItemIssue
	kindMiss      = types.ItemMiss
	kindFail      = types.ItemFail
	kindRebalance = types.ItemRebalance
	kindRetire    = types.ItemRetire
	kindPull      = types.ItemPull
)

// EndBlocker runs x/gfl's block work within its budget.
func (k Keeper) EndBlocker(goCtx context.Context) error {
	ctx := sdk.UnwrapSDKContext(goCtx)
	if err := k.sealBlockValue(ctx); err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	r := blockhook.NewRunner(types.ModuleName, blockhook.NewBudget(p.EndBlockGas), k.Retries, k.kinds(p)...)
	if err := k.blockWork(ctx, p, r); err != nil && !errors.Is(err, blockhook.ErrBudgetSpent) {
		return err
	}
	return nil
}

func (k Keeper) blockWork(ctx sdk.Context, p types.Params, r *blockhook.Runner) error {
	limit := int(p.MaxChallengesPerBlock)
	if err := r.Retry(ctx, limit); err != nil {
		return err
	}
	byID := func(kind string) func(collections.Pair[int64, uint64]) blockhook.Item {
		return func(key collections.Pair[int64, uint64]) blockhook.Item {
			return blockhook.Item{Kind: kind, ID: key.K2()}
		}
	}
	byHeight := new(collections.Range[collections.Pair[int64, uint64]]).EndInclusive(collections.Join(ctx.BlockHeight(), uint64(math.MaxUint64)))
	byTime := new(collections.Range[collections.Pair[time.Time, uint64]]).EndInclusive(collections.Join(ctx.BlockTime(), uint64(math.MaxUint64)))
	if _, err := blockhook.Queue(ctx, r, kindMiss, k.CommitDeadlines, byTime, func(key collections.Pair[time.Time, uint64]) blockhook.Item {
		return blockhook.Item{Kind: kindMiss, ID: key.K2()}
	}, limit); err != nil {
		return err
	}
	if _, err := blockhook.Queue(ctx, r, kindFail, k.RevealDeadlines, byHeight, byID(kindFail), limit); err != nil {
		return err
	}
	// a challenge's due height is its queue key; the item carries it as Sub
	if _, err := blockhook.Queue(ctx, r, kindIssue, k.ChallengeQueue, byHeight, func(key collections.Pair[int64, uint64]) blockhook.Item {
		return blockhook.Item{Kind: kindIssue, ID: key.K2(), Sub: uint64(key.K1())}
	}, limit); err != nil {
		return err
	}
	if _, err := blockhook.Queue(ctx, r, kindPull, k.RoundPulls, byHeight, byID(kindPull), limit); err != nil {
		return err
	}
	// a retire entry's height is its key; the item carries it as Sub
	if _, err := blockhook.Queue(ctx, r, kindRetire, k.NodeRetireAt, byHeight, func(key collections.Pair[int64, uint64]) blockhook.Item {
		return blockhook.Item{Kind: kindRetire, ID: key.K2(), Sub: uint64(key.K1())}
	}, limit); err != nil {
		return err
	}
	return k.rebalanceStep(ctx, p, r)
}

func (k Keeper) kinds(p types.Params) []blockhook.Kind {
	dropChallenge := func(ctx sdk.Context, it blockhook.Item) (string, error) {
		c, err := k.Challenges.Get(ctx, it.ID)
		if errorsmod.IsOf(err, collections.ErrNotFound) {
			return "the challenge is gone", nil
		} else if err != nil {
			return "", err
		}
		if err := k.dropChallenge(ctx, c); err != nil {
			return "", err
		}
		return "the challenge is dropped without its statistics, penalty or hooks", nil
	}
	return []blockhook.Kind{
		{Name: kindMiss, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.expireCommit(ctx, it.ID)
		}, Resolve: dropChallenge},
		{Name: kindFail, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.expireReveal(ctx, p, it.ID)
		}, Resolve: dropChallenge},
		{Name: kindIssue, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.issueChallenge(ctx, p, it.ID, int64(it.Sub))
		}, Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			node, err := k.Nodes.Get(ctx, it.ID)
			if err != nil {
				return "", err
			}
			if !node.Schedulable() || node.NextChallengeHeight != int64(it.Sub) {
				return "the node moved on", nil
			}
			if err := k.scheduleChallenge(ctx, &node, ctx.BlockHeight()+int64(p.ChallengeIntervalBlocks)); err != nil {
				return "", err
			}
			return "the node's challenge is rescheduled one interval later", k.Nodes.Set(ctx, node.Id, node)
		}},
		{Name: kindPull, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return k.pullRound(ctx, p, it.ID)
		}, Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			r, err := k.Rounds.Get(ctx, it.ID)
			if errorsmod.IsOf(err, collections.ErrNotFound) {
				return "the round is gone", nil
			} else if err != nil {
				return "", err
			}
			r.Pulling = false
			return "the round stops pulling: the operator's nodes not reached are challenged on their own schedule", k.saveRound(ctx, r)
		}},
		{Name: kindRetire, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.retireNode(ctx, p, it.ID, int64(it.Sub))
		}, Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			node, err := k.Nodes.Get(ctx, it.ID)
			if errorsmod.IsOf(err, collections.ErrNotFound) {
				return "the node is gone", nil
			} else if err != nil {
				return "", err
			}
			if node.Status != types.NODE_STATUS_INACTIVE || node.RetireHeight != int64(it.Sub) {
				return "the node moved on", nil
			}
			if err := k.scheduleRetire(ctx, &node, ctx.BlockHeight()+int64(p.NodeRetentionBlocks)); err != nil {
				return "", err
			}
			return "the node's deletion is put off one retention", k.Nodes.Set(ctx, node.Id, node)
		}},
		{Name: kindRebalance, Do: func(ctx sdk.Context, it blockhook.Item) (bool, error) {
			return true, k.rebalanceNode(ctx, p, it.ID, it.Sub)
		}, Resolve: func(ctx sdk.Context, it blockhook.Item) (string, error) {
			if err := k.Stats.Remove(ctx, collections.Join(it.ID, it.Sub)); err != nil {
				return "", err
			}
			return "the node keeps its power of the previous epoch; its statistics are dropped", nil
		}},
	}
}

// expireCommit concludes an issued challenge past its commit deadline as MISSED.
func (k Keeper) expireCommit(ctx sdk.Context, id uint64) error {
	c, err := k.Challenges.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) || (err == nil && c.Status != types.CHALLENGE_STATUS_ISSUED) {
		return nil // concluded already
	} else if err != nil {
		return err
	}
	return k.concludeChallenge(ctx, c, types.CHALLENGE_STATUS_MISSED, 0, "no commitment by the deadline")
}

// expireReveal concludes a committed challenge past its reveal deadline as FAILED, or
// moves the deadline when its round closed late or is still open (revealDeadline).
func (k Keeper) expireReveal(ctx sdk.Context, p types.Params, id uint64) error {
	c, err := k.Challenges.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) || (err == nil && c.Status != types.CHALLENGE_STATUS_COMMITTED) {
		return nil // concluded already
	} else if err != nil {
		return err
	}
	if d, err := k.revealDeadline(ctx, p, c); err != nil {
		return err
	} else if d > ctx.BlockHeight() {
		// the queue takes the old entry off with this item
		c.RevealDeadlineHeight = d
		if err := k.RevealDeadlines.Set(ctx, collections.Join(d, c.Id)); err != nil {
			return err
		}
		return k.Challenges.Set(ctx, c.Id, c)
	}
	return k.concludeChallenge(ctx, c, types.CHALLENGE_STATUS_FAILED, 0, "commitment not opened correctly by the reveal deadline")
}

// dropChallenge removes a challenge and its deadlines and frees its node, recording
// nothing.
func (k Keeper) dropChallenge(ctx sdk.Context, c types.Challenge) error {
	node, err := k.Nodes.Get(ctx, c.NodeId)
	if err != nil {
		return err
	}
	if node.OpenChallenge == c.Id {
		node.OpenChallenge = 0
		if err := k.Nodes.Set(ctx, node.Id, node); err != nil {
			return err
		}
	}
	if err := k.CommitDeadlines.Remove(ctx, collections.Join(c.CommitDeadline, c.Id)); err != nil {
		return err
	}
	if c.RevealDeadlineHeight != 0 {
		if err := k.RevealDeadlines.Remove(ctx, collections.Join(c.RevealDeadlineHeight, c.Id)); err != nil {
			return err
		}
	}
	if c.Status == types.CHALLENGE_STATUS_ISSUED {
		if err := k.roundLeftIssued(ctx, c, false); err != nil {
			return err
		}
	}
	if err := k.roundConcluded(ctx, c); err != nil {
		return err
	}
	return k.Challenges.Remove(ctx, c.Id)
}

// rebalanceStep advances the oldest pending rebalance by at most max_rebalance_per_block
// nodes, each an item of its own (its cursor moves with it); the rebalance ends once the
// last node is done.
func (k Keeper) rebalanceStep(ctx sdk.Context, p types.Params, r *blockhook.Runner) error {
	var ids []uint64
	var epoch uint64
	pending := false
	if err := r.Budget.Run(ctx, "gfl: rebalance due", func(c sdk.Context) error {
		st, err := k.Rebalance.Get(c)
		if err != nil || len(st.Pending) == 0 {
			return err
		}
		pending, epoch = true, st.Pending[0]
		it, err := k.Nodes.Iterate(c, new(collections.Range[uint64]).StartExclusive(st.Cursor))
		if err != nil {
			return err
		}
		defer func() { _ = it.Close() }()
		for ; it.Valid() && len(ids) < int(p.MaxRebalancePerBlock); it.Next() {
			id, err := it.Key()
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	}); err != nil || !pending {
		return err
	}
	advance := func(id uint64) func(sdk.Context) error {
		return func(c sdk.Context) error {
			st, err := k.Rebalance.Get(c)
			if err != nil {
				return err
			}
			st.Cursor = id
			return k.Rebalance.Set(c, st)
		}
	}
	for _, id := range ids {
		if err := r.Do(ctx, kindRebalance, blockhook.Item{Kind: kindRebalance, ID: id, Sub: epoch}, advance(id), advance(id)); err != nil {
			return err
		}
	}
	if len(ids) == int(p.MaxRebalancePerBlock) {
		return nil // more nodes next block (or nothing left: found out then)
	}
	return r.Budget.Run(ctx, "gfl: rebalance finished", func(c sdk.Context) error {
		st, err := k.Rebalance.Get(c)
		if err != nil {
			return err
		}
		st.Pending = st.Pending[1:]
		st.Cursor = 0
		if err := k.Rebalance.Set(c, st); err != nil {
			return err
		}
		np, err := k.NetworkPower.Get(c)
		if err != nil {
			return err
		}
		return c.EventManager().EmitTypedEvent(&types.EventRebalanceFinished{Epoch: epoch, TotalGflops: np.TotalGflops})
	})
}
