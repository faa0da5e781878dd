package keeper

import (
	"fmt"
	"maps"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/x/gfl/types"
)

// RegisterInvariants registers x/gfl's accounting invariants.
func (k Keeper) RegisterInvariants(reg invariant.Registrar) {
	reg.Register(types.ModuleName, "ugfl-supply", k.SupplyInvariant)
	reg.Register(types.ModuleName, "ugfl-holders", k.HoldersInvariant)
	reg.Register(types.ModuleName, "challenge-rounds", k.RoundsInvariant)
	reg.Register(types.ModuleName, "challenge-queue", k.ChallengeQueueInvariant)
}

// ChallengeQueueInvariant: the challenge queue holds exactly one entry per schedulable
// node with a next challenge, at that height, and nothing else (what genesis rebuilds it
// from; a stale entry made an exported-and-imported chain differ).
func (k Keeper) ChallengeQueueInvariant(ctx sdk.Context) (string, bool) {
	var problems []string
	entries := 0
	err := k.ChallengeQueue.Walk(ctx, nil, func(key collections.Pair[int64, uint64]) (bool, error) {
		entries++
		n, err := k.Nodes.Get(ctx, key.K2())
		switch {
		case errorsmod.IsOf(err, collections.ErrNotFound):
			problems = append(problems, fmt.Sprintf("entry (%d, node %d): no such node", key.K1(), key.K2()))
		case err != nil:
			return true, err
		case !n.Schedulable() || n.NextChallengeHeight != key.K1():
			problems = append(problems, fmt.Sprintf("entry (%d, node %d): the node is %s with its next challenge at %d", key.K1(), key.K2(), n.Status, n.NextChallengeHeight))
		}
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "challenge-queue", err.Error(), true), true
	}
	err = k.Nodes.Walk(ctx, nil, func(id uint64, n types.Node) (bool, error) {
		if !n.Schedulable() || n.NextChallengeHeight == 0 {
			return false, nil
		}
		has, err := k.ChallengeQueue.Has(ctx, collections.Join(n.NextChallengeHeight, id))
		if err != nil {
			return true, err
		}
		if !has {
			problems = append(problems, fmt.Sprintf("node %d: next challenge at %d is not queued", id, n.NextChallengeHeight))
		}
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "challenge-queue", err.Error(), true), true
	}
	msg := fmt.Sprintf("%d queue entries checked", entries)
	for _, p := range problems {
		msg += "\n" + p
	}
	broken := len(problems) > 0
	return invariant.Format(types.ModuleName, "challenge-queue", msg, broken), broken
}

// RoundsInvariant: each challenge round counts exactly its open challenges (members) and
// those still to commit (issued), every open challenge's round exists, and a round is
// kept only while something refers to it.
func (k Keeper) RoundsInvariant(ctx sdk.Context) (string, bool) {
	type count struct{ members, issued uint32 }
	counts := map[uint64]count{}
	var problems []string
	err := k.Challenges.Walk(ctx, nil, func(id uint64, c types.Challenge) (bool, error) {
		if c.RoundId == 0 {
			return false, nil
		}
		has, err := k.Rounds.Has(ctx, c.RoundId)
		if err != nil {
			return true, err
		}
		if !has {
			problems = append(problems, fmt.Sprintf("challenge %d: round %d does not exist", id, c.RoundId))
		}
		n := counts[c.RoundId]
		n.members++
		if c.Status == types.CHALLENGE_STATUS_ISSUED {
			n.issued++
		}
		counts[c.RoundId] = n
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "challenge-rounds", err.Error(), true), true
	}
	rounds := 0
	err = k.Rounds.Walk(ctx, nil, func(id uint64, r types.ChallengeRound) (bool, error) {
		rounds++
		if n := counts[id]; n.members != r.Members || n.issued != r.Issued {
			problems = append(problems, fmt.Sprintf("round %d counts %d members, %d issued; its challenges are %d and %d", id, r.Members, r.Issued, n.members, n.issued))
		}
		if r.Members == 0 && r.Issued == 0 && !r.Pulling {
			problems = append(problems, fmt.Sprintf("round %d is kept with nothing referring to it", id))
		}
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "challenge-rounds", err.Error(), true), true
	}
	msg := fmt.Sprintf("%d rounds checked", rounds)
	for _, p := range problems {
		msg += "\n" + p
	}
	broken := len(problems) > 0
	return invariant.Format(types.ModuleName, "challenge-rounds", msg, broken), broken
}

// HoldersInvariant: each operator's ugfl balance = the sum of its nodes' power. With
// the supply invariant (supply = the sum of all nodes' power) it also says that nobody
// but an operator holds ugfl: not the community pool, the fee collector, an IBC escrow
// or a friend.
func (k Keeper) HoldersInvariant(ctx sdk.Context) (string, bool) {
	power := map[string]uint64{}
	err := k.Nodes.Walk(ctx, nil, func(_ uint64, n types.Node) (bool, error) {
		power[n.Operator] += n.PowerGflops
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "ugfl-holders", err.Error(), true), true
	}
	operators := slices.Sorted(maps.Keys(power))
	var problems []string
	for _, op := range operators {
		addr, err := k.addressCodec.StringToBytes(op)
		if err != nil {
			problems = append(problems, fmt.Sprintf("operator %s: %v", op, err))
			continue
		}
		if bal := k.bankKeeper.GetBalance(ctx, addr, types.Denom).Amount; !bal.Equal(sdkmath.NewIntFromUint64(power[op])) {
			problems = append(problems, fmt.Sprintf("operator %s holds %s%s, its nodes' power is %d", op, bal, types.Denom, power[op]))
		}
	}
	msg := fmt.Sprintf("%d operators checked", len(operators))
	for _, p := range problems {
		msg += "\n" + p
	}
	broken := len(problems) > 0
	return invariant.Format(types.ModuleName, "ugfl-holders", msg, broken), broken
}

// SupplyInvariant: ugfl supply = NetworkPower.total_gflops = the sum of the nodes' power
// recorded at their last rebalance = the sum of the class totals, each the power of the
// nodes in its class; only active nodes have power.
func (k Keeper) SupplyInvariant(ctx sdk.Context) (string, bool) {
	np, err := k.NetworkPower.Get(ctx)
	if err != nil {
		return invariant.Format(types.ModuleName, "ugfl-supply", err.Error(), true), true
	}
	var sum, count uint64
	var problems []string
	byClass := map[string]uint64{}
	err = k.Nodes.Walk(ctx, nil, func(id uint64, n types.Node) (bool, error) {
		sum += n.PowerGflops
		if n.PowerGflops > 0 {
			byClass[n.GpuClass] += n.PowerGflops
			count++
			if !n.Schedulable() {
				problems = append(problems, fmt.Sprintf("%s has power %d", n.Describe(), n.PowerGflops))
			}
		}
		return false, nil
	})
	if err != nil {
		return invariant.Format(types.ModuleName, "ugfl-supply", err.Error(), true), true
	}
	var classSum uint64
	if err := k.ClassPower.Walk(ctx, nil, func(class string, p uint64) (bool, error) {
		classSum += p
		if byClass[class] != p {
			problems = append(problems, fmt.Sprintf("class %q total %d != its nodes' power %d", class, p, byClass[class]))
		}
		delete(byClass, class)
		return false, nil
	}); err != nil {
		return invariant.Format(types.ModuleName, "ugfl-supply", err.Error(), true), true
	}
	supply := k.bankKeeper.GetSupply(ctx, types.Denom).Amount
	if !supply.Equal(sdkmath.NewIntFromUint64(sum)) {
		problems = append(problems, fmt.Sprintf("supply %s%s != sum of node power %d", supply, types.Denom, sum))
	}
	if np.TotalGflops != sum || np.Nodes != count {
		problems = append(problems, fmt.Sprintf("network power %d over %d nodes != %d over %d", np.TotalGflops, np.Nodes, sum, count))
	}
	if classSum != sum {
		problems = append(problems, fmt.Sprintf("class totals %d != %d", classSum, sum))
	}
	for _, class := range slices.Sorted(maps.Keys(byClass)) {
		problems = append(problems, fmt.Sprintf("class %q has no total; its nodes' power is %d", class, byClass[class]))
	}
	msg := fmt.Sprintf("supply %s, nodes' power %d", supply, sum)
	for _, p := range problems {
		msg += "\n" + p
	}
	broken := len(problems) > 0
	return invariant.Format(types.ModuleName, "ugfl-supply", msg, broken), broken
}
