package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	"github.com/flopsnet/flops/x/reputation/types"
)

var _ markettypes.ReputationKeeper = Keeper{}

// Reputation returns the node's score and whether it may get work (score >= min_score);
// a node with no record has initial_score. x/market uses it for the scheduler's
// eligibility and ties, the auction's reputation factor and the audit probability. O(1).
func (k Keeper) Reputation(ctx context.Context, nodeID uint64) (sdkmath.LegacyDec, bool, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.LegacyDec{}, false, err
	}
	s, err := k.Scores.Get(ctx, nodeID)
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		node, err := k.gfl.GetNode(ctx, nodeID)
		if errorsmod.IsOf(err, gfltypes.ErrNodeNotFound) {
			return p.InitialScore, p.Eligible(p.InitialScore), nil // no node, no operator
		} else if err != nil {
			return sdkmath.LegacyDec{}, false, errorsmod.Wrapf(err, "operator of node %d", nodeID)
		}
		start, err := k.startScore(ctx, p, node.Operator)
		if err != nil {
			return sdkmath.LegacyDec{}, false, err
		}
		return start, p.Eligible(start), nil
	case err != nil:
		return sdkmath.LegacyDec{}, false, err
	}
	return s.Score, p.Eligible(s.Score), nil
}

// startScore is the score a new node of operator starts from: initial_score, or the mean
// of the operator's scored nodes when that is lower. A node is its operator's, so a node
// with a low score cannot be replaced by a fresh one with a clean 0.5 (and adding nodes
// can never raise the operator's mean).
func (k Keeper) startScore(ctx context.Context, p types.Params, operator string) (sdkmath.LegacyDec, error) {
	addr, err := k.operatorAddr("operator", operator)
	if err != nil {
		return sdkmath.LegacyDec{}, err
	}
	mean, n, err := k.providerMean(ctx, p, addr)
	if err != nil {
		return sdkmath.LegacyDec{}, err
	}
	if n > 0 && mean.LT(p.InitialScore) {
		return mean, nil
	}
	return p.InitialScore, nil
}

// ProviderReputation returns the mean score of the operator's nodes (truncated to 18
// decimals; initial_score when it has none) and whether it is >= min_score. x/dps
// multiplies rewards by it. O(1): the sum and count are kept per operator.
func (k Keeper) ProviderReputation(ctx context.Context, operator sdk.AccAddress) (sdkmath.LegacyDec, bool, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.LegacyDec{}, false, err
	}
	score, _, err := k.providerMean(ctx, p, operator)
	if err != nil {
		return sdkmath.LegacyDec{}, false, err
	}
	return score, p.Eligible(score), nil
}

// providerMean returns the operator's mean score and its number of nodes.
func (k Keeper) providerMean(ctx context.Context, p types.Params, operator sdk.AccAddress) (sdkmath.LegacyDec, uint64, error) {
	agg, err := k.Operators.Get(ctx, operator)
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		return p.InitialScore, 0, nil
	case err != nil:
		return sdkmath.LegacyDec{}, 0, err
	case agg.Nodes == 0:
		return p.InitialScore, 0, nil
	}
	return types.Clamp(agg.ScoreSum.QuoInt(sdkmath.NewIntFromUint64(agg.Nodes))), agg.Nodes, nil
}

// setScore stores a score record and keeps the operator aggregates in step: old is the
// record it replaces (nil for a new node).
func (k Keeper) setScore(ctx context.Context, old *types.NodeScore, s types.NodeScore) error {
	if old != nil {
		if err := k.addToOperator(ctx, old.Operator, old.Score.Neg(), -1); err != nil {
			return err
		}
	}
	if err := k.addToOperator(ctx, s.Operator, s.Score, 1); err != nil {
		return err
	}
	return k.Scores.Set(ctx, s.NodeId, s)
}

// addToOperator adds score to the operator's sum and delta (+1 or -1) to its node count;
// an aggregate whose count falls to zero is removed.
func (k Keeper) addToOperator(ctx context.Context, operator string, score sdkmath.LegacyDec, delta int) error {
	addr, err := k.operatorAddr("operator", operator)
	if err != nil {
		return err
	}
	agg, err := k.Operators.Get(ctx, addr)
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		agg = types.OperatorReputation{Operator: operator, ScoreSum: sdkmath.LegacyZeroDec()}
	case err != nil:
		return err
	}
	if delta < 0 {
		if agg.Nodes == 0 {
			return errorsmod.Wrapf(types.ErrInvalidRequest, "operator %s has no scored node to remove", operator)
		}
		agg.Nodes--
	} else {
		agg.Nodes++
	}
	agg.ScoreSum = agg.ScoreSum.Add(score)
	if agg.Nodes == 0 {
		return k.Operators.Remove(ctx, addr)
	}
	return k.Operators.Set(ctx, addr, agg)
}

// ensureNode returns the node's score record, creating it at initial_score (known from
// epoch) when there is none. operator may be empty: x/gfl is then asked for it.
func (k Keeper) ensureNode(ctx sdk.Context, p types.Params, nodeID uint64, operator string, epoch uint64) (types.NodeScore, error) {
	s, err := k.Scores.Get(ctx, nodeID)
	if err == nil {
		return s, nil
	}
	if !errorsmod.IsOf(err, collections.ErrNotFound) {
		return s, err
	}
	if nodeID == 0 {
		return s, errorsmod.Wrap(types.ErrInvalidRequest, "node id 0")
	}
	if operator == "" {
		node, err := k.gfl.GetNode(ctx, nodeID)
		if err != nil {
			return s, errorsmod.Wrapf(err, "operator of node %d", nodeID)
		}
		operator = node.Operator
	}
	start, err := k.startScore(ctx, p, operator)
	if err != nil {
		return s, err
	}
	zero := sdkmath.LegacyZeroDec()
	s = types.NodeScore{
		NodeId: nodeID, Operator: operator, Score: start,
		Accuracy: zero, Responsiveness: zero, PrevScore: zero, FirstEpoch: epoch,
	}
	if err := k.setScore(ctx, nil, s); err != nil {
		return s, err
	}
	return s, ctx.EventManager().EmitTypedEvent(&types.EventNodeTracked{
		NodeId: nodeID, Operator: operator, Score: s.Score, Epoch: epoch,
	})
}

// setOperator records the operator x/gfl reports for a node, moving its score between the
// operators' aggregates when it changed.
func (k Keeper) setOperator(ctx sdk.Context, s types.NodeScore, operator string) error {
	if operator == "" || operator == s.Operator {
		return nil
	}
	old := s
	s.Operator = operator
	if err := k.setScore(ctx, &old, s); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventOperatorChanged{
		NodeId: s.NodeId, OldOperator: old.Operator, NewOperator: operator,
	})
}

// forgetNode drops a deleted node's history, and its score record and counters unless
// its score is below initial_score (x/reputation's hook AfterNodeDeleted).
func (k Keeper) forgetNode(ctx sdk.Context, id uint64) error {
	hist, err := k.History.Iterate(ctx, collections.NewPrefixedPairRange[uint64, uint64](id))
	if err != nil {
		return err
	}
	keys, err := hist.Keys() // at most history_length (<= 1000) records
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := k.History.Remove(ctx, key); err != nil {
			return err
		}
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	s, err := k.Scores.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if s.Score.LT(p.InitialScore) {
		return nil // its operator's standing
	}
	st, err := k.Scoring.Get(ctx)
	if err != nil {
		return err
	}
	for _, epoch := range append([]uint64{st.CurrentEpoch}, st.Pending...) {
		if err := k.Counters.Remove(ctx, collections.Join(epoch, id)); err != nil {
			return err
		}
	}
	if err := k.addToOperator(ctx, s.Operator, s.Score.Neg(), -1); err != nil {
		return err
	}
	return k.Scores.Remove(ctx, id)
}
