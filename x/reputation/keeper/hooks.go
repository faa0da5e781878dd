package keeper

import (
	"context"
	"errors"
	"time"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	"github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The hooks other modules call. Each adds one event to a node's counters of the current
// reputation epoch and never fails or panics its caller: the work runs in a cache context
// (internal/blockhook) and a failure is logged and dropped. The one exception is running
// out of gas: the tx's gas meter panics, and that panic is re-raised after the branch is
// dropped, so that the caller's tx fails as the SDK intends instead of going on with its
// reputation event silently lost (a provider could otherwise tune its gas limit to
// escape a failed verification).

// hookItem runs fn as one hook item.
func (k Keeper) hookItem(ctx context.Context, what string, fn func(ctx sdk.Context) error) {
	sdkCtx, ok := ctx.(sdk.Context)
	if !ok {
		if sdkCtx, ok = ctx.Value(sdk.SdkContextKey).(sdk.Context); !ok {
			return // not called from a block or a tx: nothing to record into
		}
	}
	var outOfGas any
	_ = blockhook.Apply(sdkCtx, what, func(ctx sdk.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				switch r.(type) {
				case storetypes.ErrorOutOfGas, storetypes.ErrorGasOverflow:
					outOfGas = r
					err = errors.New("out of gas")
				default:
					panic(r) // blockhook.Apply recovers and logs it
				}
			}
		}()
		return fn(ctx)
	})
	if outOfGas != nil {
		panic(outOfGas)
	}
}

// count adds one event to the node's counters of the current epoch, creating the node's
// record if needed (operator "" asks x/gfl for it).
func (k Keeper) count(ctx context.Context, what string, nodeID uint64, operator string, add func(c *types.EpochCounters)) {
	k.hookItem(ctx, what, func(ctx sdk.Context) error {
		p, err := k.Params.Get(ctx)
		if err != nil {
			return err
		}
		st, err := k.Scoring.Get(ctx)
		if err != nil {
			return err
		}
		if _, err := k.ensureNode(ctx, p, nodeID, operator, st.CurrentEpoch); err != nil {
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
func (h marketHooks) AfterTaskAcked(ctx context.Context, nodeID uint64, onTime bool) {
	h.k.count(ctx, "reputation: task acked", nodeID, "", func(c *types.EpochCounters) {
		if onTime {
			c.AcksOnTime++
		} else {
			c.AcksLate++
		}
	})
}

// AfterTaskLapsed counts a lost task: missed ack, heartbeat, deadline or reveal
// (responsiveness). The reason is not kept; x/market's own event carries it.
func (h marketHooks) AfterTaskLapsed(ctx context.Context, nodeID uint64, _ string) {
	h.k.count(ctx, "reputation: task lapsed", nodeID, "", func(c *types.EpochCounters) { c.Lapses++ })
}

// AfterTaskVerified counts a result accepted or rejected by verification (accuracy).
func (h marketHooks) AfterTaskVerified(ctx context.Context, nodeID uint64, ok bool) {
	h.k.count(ctx, "reputation: task verified", nodeID, "", func(c *types.EpochCounters) {
		if ok {
			c.TasksVerifiedOk++
		} else {
			c.TasksVerifiedFailed++
		}
	})
}

// AfterTaskSettled counts a paid task finished before its deadline or not
// (responsiveness).
func (h marketHooks) AfterTaskSettled(ctx context.Context, nodeID uint64, beforeDeadline bool) {
	h.k.count(ctx, "reputation: task settled", nodeID, "", func(c *types.EpochCounters) {
		if beforeDeadline {
			c.SettledOnTime++
		} else {
			c.SettledLate++
		}
	})
}

// GFLHooks returns the x/gfl hooks: node changes (a record for every node, its operator
// kept current) and PoCP challenge outcomes.
func (k Keeper) GFLHooks() gfltypes.GFLHooks { return gflHooks{k} }

type gflHooks struct{ k Keeper }

var _ gfltypes.GFLHooks = gflHooks{}

// BeforeNodeChange never vetoes.
func (gflHooks) BeforeNodeChange(context.Context, gfltypes.Node) error { return nil }

// AfterNodeChanged makes sure the node has a score record (initial_score for a new one)
// and that its operator is the one x/gfl has.
func (h gflHooks) AfterNodeChanged(ctx context.Context, node gfltypes.Node) {
	h.k.hookItem(ctx, "reputation: node changed", func(ctx sdk.Context) error {
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
func (h gflHooks) AfterChallengeFinished(ctx context.Context, node gfltypes.Node, _ uint64, status gfltypes.ChallengeStatus) {
	var add func(c *types.EpochCounters)
	switch status {
	case gfltypes.CHALLENGE_STATUS_PASSED:
		add = func(c *types.EpochCounters) { c.ChallengesPassed++ }
	case gfltypes.CHALLENGE_STATUS_FAILED:
		add = func(c *types.EpochCounters) { c.ChallengesFailed++ }
	case gfltypes.CHALLENGE_STATUS_MISSED:
		add = func(c *types.EpochCounters) { c.ChallengesMissed++ }
	default:
		return
	}
	h.k.count(ctx, "reputation: challenge finished", node.Id, node.Operator, add)
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
func (h slashHooks) AfterSlashed(ctx context.Context, rec sstypes.SlashRecord) {
	if rec.Evidence.NodeId == 0 {
		return
	}
	h.k.count(ctx, "reputation: slashed", rec.Evidence.NodeId, "", func(c *types.EpochCounters) { c.Slashes++ })
}

// AfterJailed counts a jailing against evidence.node_id, when set.
func (h slashHooks) AfterJailed(ctx context.Context, _ sdk.AccAddress, _ time.Time, evidence sstypes.SlashEvidence) {
	if evidence.NodeId == 0 {
		return
	}
	h.k.count(ctx, "reputation: jailed", evidence.NodeId, "", func(c *types.EpochCounters) { c.Jails++ })
}
