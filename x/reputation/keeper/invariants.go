package keeper

import (
	"fmt"
	"sort"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/x/reputation/types"
)

// Invariant routes.
const (
	RouteRanking   = "ranking"
	RouteOperators = "operators"
	RouteCounters  = "counters"
)

// RegisterInvariants registers x/reputation's invariants.
func (k Keeper) RegisterInvariants(reg invariant.Registrar) {
	reg.Register(types.ModuleName, RouteRanking, k.RankingInvariant)
	reg.Register(types.ModuleName, RouteOperators, k.OperatorsInvariant)
	reg.Register(types.ModuleName, RouteCounters, k.CountersInvariant)
}

func report(route string, problems []string, summary string) (string, bool) {
	msg := summary
	for _, p := range problems {
		msg += "\n" + p
	}
	broken := len(problems) > 0
	return invariant.Format(types.ModuleName, route, msg, broken), broken
}

// RankingInvariant: every score is in [0, 1] and the ranking index holds exactly one
// entry per node, keyed by the node's current score. (Every entry matching its node's
// score and as many entries as nodes means one entry per node.)
func (k Keeper) RankingInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	var nodes, entries uint64
	err := k.Scores.Walk(ctx, nil, func(id uint64, s types.NodeScore) (bool, error) {
		nodes++
		if _, err := types.RankKey(s.Score); err != nil {
			problems = append(problems, fmt.Sprintf("node %d: %s", id, err))
		}
		if s.NodeId != id {
			problems = append(problems, fmt.Sprintf("node %d: record says node %d", id, s.NodeId))
		}
		return false, nil
	})
	if err == nil {
		err = k.Scores.Indexes.ByRank.Walk(ctx, nil, func(rank, id uint64) (bool, error) {
			entries++
			s, err := k.Scores.Get(ctx, id)
			switch {
			case errorsmod.IsOf(err, collections.ErrNotFound):
				problems = append(problems, fmt.Sprintf("ranking entry (%d, %d): no score record", rank, id))
				return false, nil
			case err != nil:
				return true, err
			}
			if want, err := types.RankKey(s.Score); err == nil && want != rank {
				problems = append(problems, fmt.Sprintf("ranking entry (%d, %d): node's score %s ranks %d", rank, id, s.Score, want))
			}
			return false, nil
		})
	}
	if err != nil {
		return report(RouteRanking, []string{err.Error()}, "")
	}
	if entries != nodes {
		problems = append(problems, fmt.Sprintf("ranking has %d entries for %d nodes", entries, nodes))
	}
	return report(RouteRanking, problems, fmt.Sprintf("%d nodes ranked", nodes))
}

// OperatorsInvariant: each operator's aggregate is exactly the sum and count of its nodes'
// scores, and no operator without a node has one.
func (k Keeper) OperatorsInvariant(ctx sdk.Context) (string, bool) {
	type agg struct {
		sum   sdkmath.LegacyDec
		nodes uint64
	}
	want := map[string]*agg{}
	var problems []string
	err := k.Scores.Walk(ctx, nil, func(_ uint64, s types.NodeScore) (bool, error) {
		addr, err := k.operatorAddr("operator", s.Operator)
		if err != nil {
			problems = append(problems, fmt.Sprintf("node %d: %s", s.NodeId, err))
			return false, nil
		}
		key := string(addr)
		a, ok := want[key]
		if !ok {
			a = &agg{sum: sdkmath.LegacyZeroDec()}
			want[key] = a
		}
		a.sum = a.sum.Add(s.Score)
		a.nodes++
		return false, nil
	})
	if err == nil {
		err = k.Operators.Walk(ctx, nil, func(addr sdk.AccAddress, got types.OperatorReputation) (bool, error) {
			a, ok := want[string(addr)]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("operator %s: aggregate of %d nodes but no node", got.Operator, got.Nodes))
			case !a.sum.Equal(got.ScoreSum) || a.nodes != got.Nodes:
				problems = append(problems, fmt.Sprintf("operator %s: aggregate %s over %d nodes, nodes sum to %s over %d",
					got.Operator, got.ScoreSum, got.Nodes, a.sum, a.nodes))
			}
			delete(want, string(addr))
			return false, nil
		})
	}
	if err != nil {
		return report(RouteOperators, []string{err.Error()}, "")
	}
	// Operators with nodes but no aggregate, in address order for a stable message.
	missing := make([]string, 0, len(want))
	for key := range want {
		missing = append(missing, key)
	}
	sort.Strings(missing)
	for _, key := range missing {
		problems = append(problems, fmt.Sprintf("operator %s: %d nodes but no aggregate", sdk.AccAddress(key), want[key].nodes))
	}
	return report(RouteOperators, problems, "operator aggregates match the node scores")
}

// CountersInvariant: counters exist only for known nodes, for the current epoch or a
// pending one the node has not been scored for yet.
func (k Keeper) CountersInvariant(ctx sdk.Context) (string, bool) {
	st, err := k.Scoring.Get(ctx)
	if err != nil {
		return report(RouteCounters, []string{err.Error()}, "")
	}
	pending := make(map[uint64]bool, len(st.Pending))
	for _, e := range st.Pending {
		pending[e] = true
	}
	var problems []string
	var n uint64
	err = k.Counters.Walk(ctx, nil, func(key collections.Pair[uint64, uint64], c types.EpochCounters) (bool, error) {
		n++
		epoch, id := key.K1(), key.K2()
		if c.Epoch != epoch || c.NodeId != id {
			problems = append(problems, fmt.Sprintf("counters (%d, %d) say epoch %d node %d", epoch, id, c.Epoch, c.NodeId))
		}
		if epoch != st.CurrentEpoch && !pending[epoch] {
			problems = append(problems, fmt.Sprintf("counters of node %d for epoch %d: neither current (%d) nor pending", id, epoch, st.CurrentEpoch))
		}
		s, err := k.Scores.Get(ctx, id)
		switch {
		case errorsmod.IsOf(err, collections.ErrNotFound):
			problems = append(problems, fmt.Sprintf("counters of node %d for epoch %d: no score record", id, epoch))
			return false, nil
		case err != nil:
			return true, err
		}
		if epoch <= s.LastEpoch {
			problems = append(problems, fmt.Sprintf("counters of node %d for epoch %d: already scored up to %d", id, epoch, s.LastEpoch))
		}
		return false, nil
	})
	if err != nil {
		return report(RouteCounters, []string{err.Error()}, "")
	}
	return report(RouteCounters, problems, fmt.Sprintf("%d counter records", n))
}
