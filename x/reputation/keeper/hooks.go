package keeper

import (
	"context"
	"fmt"
	"time"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	"github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The hooks other modules call. Each adds one event to a node's counters of the current
// reputation epoch, atomically: the work runs in a cache context and is written only when
// it succeeds; a failure writes nothing and returns its error, and the caller decides
// (x/market, x/gfl and x/staking-slash fail the step that called the hook, so that no
// provider's record is ever skipped). Running out of gas panics as the SDK intends, so
// the caller's tx fails instead of going on with its reputation event lost (a provider
// could otherwise tune its gas limit to escape a failed verification). Called outside a
// block or a tx (no SDK context), a hook records nothing.

// hookItem runs fn as one atomic hook item.
func (k Keeper) hookItem(ctx context.Context, what string, fn func(ctx sdk.Context) error) error {
	sdkCtx, ok := ctx.(sdk.Context)
	if !ok {
		if sdkCtx, ok = ctx.Value(sdk.SdkContextKey).(sdk.Context); !ok {
			return nil // not called from a block or a tx: nothing to record into
		}
	}
	cacheCtx, write := sdkCtx.CacheContext()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				switch r.(type) {
				case storetypes.ErrorOutOfGas, storetypes.ErrorGasOverflow:
					panic(r) // the caller's tx is out of gas: the SDK fails it
				default:
					err = fmt.Errorf("panic: %v", r) // a broken neighbour: an error, not a crash
				}
			}
		}()
		return fn(cacheCtx)
	}()
	if err != nil {
		return errorsmod.Wrap(err, what)
	}
	write()
	return nil
}

// count adds one event to the node's counters of the current epoch, creating the node's
// record if needed (operator "" asks x/gfl for it).
func (k Keeper) count(ctx context.Context, what string, nodeID uint64, operator string, add func(c *types.EpochCounters)) error {
	return k.hookItem(ctx, what, func(sdkCtx sdk.Context) error {
		// converted once: each conversion of an sdk.Context (904 bytes) to a
		// context.Context copies it to the heap, and this item makes five calls
		var ctx context.Context = sdkCtx
		p, err := k.Params.Get(ctx)
		if err != nil {
			return err
		}
		st, err := k.Scoring.Get(ctx)
		if err != nil {
			return err
		}
		if _, err := k.ensureNode(sdkCtx, p, nodeID, operator, st.CurrentEpoch); err != nil {
			return err
		}
		key := collections.Join(st.CurrentEpoch, nodeID)
		c, err := k.Counters.Get(ctx, key)
		switch {
		case errorsmod.IsOf(err, collections.ErrNotFound):
			c = types.EpochCounters{NodeId: nodeID, Epoch: st.CurrentEpoch}
		case err != nil:
			return err
		}
		add(&c)
		return k.Counters.Set(ctx, key, c)
	})
}

// MarketHooks returns the x/market hooks: task acks, lapses, verifications and
// settlements.
func (k Keeper) MarketHooks() markettypes.MarketHooks { return marketHooks{k} }

type marketHooks struct{ k Keeper }

var _ markettypes.MarketHooks = marketHooks{}

// AfterTaskAcked counts an ack on time or late (responsiveness).
func (h marketHooks) AfterTaskAcked(ctx context.Context, nodeID uint64, onTime bool) error {
	return h.k.count(ctx, "reputation: task acked", nodeID, "", func(c *types.EpochCounters) {
		if onTime {
			c.AcksOnTime++
		} else {
			c.AcksLate++
		}
	})
}

// AfterTaskLapsed counts a lost task: missed ack, heartbeat, deadline or reveal
// (responsiveness). The reason is not kept; x/market's own event carries it.
func (h marketHooks) AfterTaskLapsed(ctx context.Context, nodeID uint64, _ string) error {
	return h.k.count(ctx, "reputation: task lapsed", nodeID, "", func(c *types.EpochCounters) { c.Lapses++ })
}

// AfterTaskVerified counts a result accepted or rejected by verification (accuracy).
func (h marketHooks) AfterTaskVerified(ctx context.Context, nodeID uint64, ok bool) error {
	return h.k.count(ctx, "reputation: task verified", nodeID, "", func(c *types.EpochCounters) {
		if ok {
			c.TasksVerifiedOk++
		} else {
			c.TasksVerifiedFailed++
		}
	})
}

// AfterTaskSettled counts a paid task finished before its deadline or not
// (responsiveness).
func (h marketHooks) AfterTaskSettled(ctx context.Context, nodeID uint64, beforeDeadline bool) error {
	return h.k.count(ctx, "reputation: task settled", nodeID, "", func(c *types.EpochCounters) {
		if beforeDeadline {
			c.SettledOnTime++
		} else {
			c.SettledLate++
		}
	})
}

// AfterWorkVerified implements markettypes.MarketHooks: verified work is x/dps's.
func (marketHooks) AfterWorkVerified(context.Context, markettypes.VerifiedWork) error { return nil }

// GFLHooks returns the x/gfl hooks: node changes (a record for every node, its operator
// kept current) and PoCP challenge outcomes.
func (k Keeper) GFLHooks() gfltypes.GFLHooks { return gflHooks{k} }

type gflHooks struct{ k Keeper }

var _ gfltypes.GFLHooks = gflHooks{}

// BeforeNodeChange never vetoes.
func (gflHooks) BeforeNodeChange(context.Context, gfltypes.Node, *gfltypes.Node) error {
	return nil
}

// BeforeNodeDelete never vetoes.
func (gflHooks) BeforeNodeDelete(context.Context, gfltypes.Node) error { return nil }

// AfterNodeDeleted drops what the module keeps about a node gone for good: its history
// and, when its score is at least initial_score, its score record and counters. A lower
// score stays, scored like any idle node's: it is its operator's standing, which a new
// node of the operator starts from (the operator's mean), so that deleting a node cannot
// launder a record it earned by failing.
func (h gflHooks) AfterNodeDeleted(ctx context.Context, node gfltypes.Node) error {
	return h.k.hookItem(ctx, "reputation: node deleted", func(ctx sdk.Context) error {
		return h.k.forgetNode(ctx, node.Id)
	})
}

// AfterNodeChanged makes sure the node has a score record (initial_score for a new one)
// and that its operator is the one x/gfl has.
func (h gflHooks) AfterNodeChanged(ctx context.Context, node gfltypes.Node) error {
	return h.k.hookItem(ctx, "reputation: node changed", func(ctx sdk.Context) error {
		p, err := h.k.Params.Get(ctx)
		if err != nil {
			return err
		}
		st, err := h.k.Scoring.Get(ctx)
		if err != nil {
			return err
		}
		s, err := h.k.ensureNode(ctx, p, node.Id, node.Operator, st.CurrentEpoch)
		if err != nil {
			return err
		}
		return h.k.setOperator(ctx, s, node.Operator)
	})
}

// AfterChallengeFinished counts a PoCP challenge passed, failed or missed (accuracy);
// any other status is not an outcome and is ignored.
func (h gflHooks) AfterChallengeFinished(ctx context.Context, node gfltypes.Node, _ uint64, status gfltypes.ChallengeStatus) error {
	var add func(c *types.EpochCounters)
	switch status {
	case gfltypes.CHALLENGE_STATUS_PASSED:
		add = func(c *types.EpochCounters) { c.ChallengesPassed++ }
	case gfltypes.CHALLENGE_STATUS_FAILED:
		add = func(c *types.EpochCounters) { c.ChallengesFailed++ }
	case gfltypes.CHALLENGE_STATUS_MISSED:
		add = func(c *types.EpochCounters) { c.ChallengesMissed++ }
	default:
		return nil
	}
	return h.k.count(ctx, "reputation: challenge finished", node.Id, node.Operator, add)
}

// StakingSlashHooks returns the x/staking-slash hooks. Slashes and jails that name a node
// are counted and shown, but they do not enter the score: the event that caused them
// already did, through its own module's hook (a wrong result through
// AfterTaskVerified(false), a missed reveal or an abandoned task through AfterTaskLapsed,
// a failed PoCP answer through AfterChallengeFinished). Scoring them again would punish
// the same fault twice. A slash or jail that names no node is not counted.
func (k Keeper) StakingSlashHooks() sstypes.StakingSlashHooks { return slashHooks{k} }

type slashHooks struct{ k Keeper }

var _ sstypes.StakingSlashHooks = slashHooks{}

// AfterSlashed counts a slash against evidence.node_id, when set.
func (h slashHooks) AfterSlashed(ctx context.Context, rec sstypes.SlashRecord) error {
	if rec.Evidence.NodeId == 0 {
		return nil
	}
	return h.k.count(ctx, "reputation: slashed", rec.Evidence.NodeId, "", func(c *types.EpochCounters) { c.Slashes++ })
}

// AfterJailed counts a jailing against evidence.node_id, when set.
func (h slashHooks) AfterJailed(ctx context.Context, _ sdk.AccAddress, _ time.Time, evidence sstypes.SlashEvidence) error {
	if evidence.NodeId == 0 {
		return nil
	}
	return h.k.count(ctx, "reputation: jailed", evidence.NodeId, "", func(c *types.EpochCounters) { c.Jails++ })
}
