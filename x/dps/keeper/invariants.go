package keeper

import (
	"fmt"
	"slices"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/internal/sdkint"
	"github.com/flopsnet/flops/x/dps/types"
)

// RegisterInvariants registers x/dps's accounting invariants.
func (k Keeper) RegisterInvariants(reg invariant.Registrar) {
	reg.Register(types.ModuleName, types.InvariantPool, k.PoolInvariant)
	reg.Register(types.ModuleName, types.InvariantDistributions, k.DistributionsInvariant)
}

// PoolInvariant: the reward pool holds at least what the distribution in progress may
// still pay (E - paid - deferred) plus what the deferred payouts owe; E was capped by
// the pool less the deferred payouts when it started and only x/dps pays out of the
// pool.
func (k Keeper) PoolInvariant(ctx sdk.Context) (string, bool) {
	d, found, err := k.GetInProgress(ctx)
	if err != nil {
		return invariant.Format(types.ModuleName, types.InvariantPool, err.Error(), true), true
	}
	reserved, err := k.deferredTotal(ctx)
	if err != nil {
		return invariant.Format(types.ModuleName, types.InvariantPool, err.Error(), true), true
	}
	balance := k.PoolBalance(ctx)
	owed := reserved
	if found {
		owed = owed.Add(d.Owed()).Sub(sdkint.OrZero(d.DeferredAvailability)).Sub(sdkint.OrZero(d.DeferredWork))
	}
	broken := balance.LT(owed)
	msg := fmt.Sprintf("pool %s%s, owed by the distribution in progress and the deferred payouts %s%s (deferred %s%s)",
		balance, types.Denom, owed, types.Denom, reserved, types.Denom)
	return invariant.Format(types.ModuleName, types.InvariantPool, msg, broken), broken
}

// DistributionsInvariant: every distribution is consistent (E_avail + E_work = E, paid
// <= planned, and once finished paid + remainder = E), and the rewards history of each
// epoch adds up to what its distribution paid.
func (k Keeper) DistributionsInvariant(ctx sdk.Context) (string, bool) {
	fail := func(msg string) (string, bool) {
		return invariant.Format(types.ModuleName, types.InvariantDistributions, msg, true), true
	}
	type sums struct{ avail, work sdkmath.Int }
	history := map[uint64]sums{}
	var unindexed []string
	records, indexed := 0, 0
	if err := k.RewardsByEpoch.Walk(ctx, nil, func(collections.Pair[uint64, sdk.AccAddress]) (bool, error) {
		indexed++
		return false, nil
	}); err != nil {
		return fail(err.Error())
	}
	if err := k.Rewards.Walk(ctx, nil, func(key collections.Pair[sdk.AccAddress, uint64], r types.ProviderReward) (bool, error) {
		records++
		if ok, err := k.RewardsByEpoch.Has(ctx, collections.Join(key.K2(), key.K1())); err != nil || !ok {
			unindexed = append(unindexed, fmt.Sprintf("the reward of %s for epoch %d is not indexed by its epoch", r.Provider, r.Epoch))
		}
		s, ok := history[r.Epoch]
		if !ok {
			s = sums{sdkmath.ZeroInt(), sdkmath.ZeroInt()}
		}
		history[r.Epoch] = sums{s.avail.Add(r.Availability), s.work.Add(r.Work)}
		return false, nil
	}); err != nil {
		return fail(err.Error())
	}
	// what the deferred payouts owe, per epoch and kind, and in all
	owedBy := map[uint64]sums{}
	total := sdkmath.ZeroInt()
	if err := k.Deferred.Walk(ctx, nil, func(_ collections.Pair[string, []byte], dp types.DeferredPayout) (bool, error) {
		s, ok := owedBy[dp.Epoch]
		if !ok {
			s = sums{sdkmath.ZeroInt(), sdkmath.ZeroInt()}
		}
		if dp.Kind == types.RewardKindWork {
			s.work = s.work.Add(dp.Amount)
		} else {
			s.avail = s.avail.Add(dp.Amount)
		}
		owedBy[dp.Epoch] = s
		total = total.Add(dp.Amount)
		return false, nil
	}); err != nil {
		return fail(err.Error())
	}
	problems := unindexed
	if records != indexed {
		problems = append(problems, fmt.Sprintf("%d reward records, %d epoch index entries", records, indexed))
	}
	if reserved, err := k.deferredTotal(ctx); err != nil {
		return fail(err.Error())
	} else if !reserved.Equal(total) {
		problems = append(problems, fmt.Sprintf("deferred total %s, the deferred payouts owe %s", reserved, total))
	}
	check := func(d types.Distribution, done bool) {
		if err := d.Validate(done); err != nil {
			problems = append(problems, err.Error())
		}
		o, ok := owedBy[d.Epoch]
		delete(owedBy, d.Epoch)
		if !ok {
			o = sums{sdkmath.ZeroInt(), sdkmath.ZeroInt()}
		}
		if !o.avail.Equal(sdkint.OrZero(d.DeferredAvailability)) || !o.work.Equal(sdkint.OrZero(d.DeferredWork)) {
			problems = append(problems, fmt.Sprintf("epoch %d defers %s availability and %s work, its deferred payouts owe %s and %s",
				d.Epoch, sdkint.OrZero(d.DeferredAvailability), sdkint.OrZero(d.DeferredWork), o.avail, o.work))
		}
		s, ok := history[d.Epoch]
		if !ok {
			s = sums{sdkmath.ZeroInt(), sdkmath.ZeroInt()}
		}
		if !s.avail.Equal(d.PaidAvailability) || !s.work.Equal(d.PaidWork) {
			problems = append(problems, fmt.Sprintf("epoch %d paid %s availability and %s work, its rewards history says %s and %s",
				d.Epoch, d.PaidAvailability, d.PaidWork, s.avail, s.work))
		}
	}
	count := 0
	if err := k.Distributions.Walk(ctx, nil, func(_ uint64, d types.Distribution) (bool, error) {
		count++
		check(d, true)
		return false, nil
	}); err != nil {
		return fail(err.Error())
	}
	d, found, err := k.GetInProgress(ctx)
	if err != nil {
		return fail(err.Error())
	}
	if found {
		check(d, false)
	}
	for _, e := range sortedKeys(owedBy) {
		problems = append(problems, fmt.Sprintf("deferred payouts of epoch %d, which has no distribution", e))
	}
	msg := fmt.Sprintf("%d finished distributions, one in progress: %t", count, found)
	for _, p := range problems {
		msg += "\n" + p
	}
	broken := len(problems) > 0
	return invariant.Format(types.ModuleName, types.InvariantDistributions, msg, broken), broken
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
