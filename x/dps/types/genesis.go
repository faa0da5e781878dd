package types

import (
	"fmt"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/sdkint"
	"github.com/flopsnet/flops/internal/validate"
)

// DefaultGenesisState returns the genesis state of a new chain: default params, no era
// (era 0 starts at the genesis time) and no history.
func DefaultGenesisState() *GenesisState {
	return &GenesisState{Params: DefaultParams()}
}

// Validate checks the params and every record of the genesis state: amounts, duplicates,
// references (every reward names a known distribution) and each distribution's accounting
// (paid + remainder = E; the history of a finished one adds up to what it paid).
func (gs GenesisState) Validate() error {
	if err := gs.Params.Validate(); err != nil {
		return errorsmod.Wrap(err, "genesis params")
	}
	if err := gs.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidGenesis, err.Error())
	}
	return nil
}

func (gs GenesisState) validate() error {
	if gs.Era != nil {
		if err := gs.Era.Validate(); err != nil {
			return fmt.Errorf("era: %w", err)
		}
	}
	// Where each epoch appears: pending, in progress or finished, exactly once.
	seen := map[uint64]string{}
	started := map[uint64]struct{}{}
	claim := func(epoch uint64, where string) error {
		if epoch == 0 {
			return fmt.Errorf("%s: epoch 0 (x/epochs numbers epochs from 1)", where)
		}
		if prev, dup := seen[epoch]; dup {
			return fmt.Errorf("%s: epoch %d already in %s", where, epoch, prev)
		}
		seen[epoch] = where
		return nil
	}
	for i, e := range gs.PendingEpochs {
		if i > 0 && e <= gs.PendingEpochs[i-1] {
			return fmt.Errorf("pending_epochs[%d] %d: must be ascending", i, e)
		}
		if err := claim(e, fmt.Sprintf("pending_epochs[%d]", i)); err != nil {
			return err
		}
	}
	if d := gs.InProgress; d != nil {
		if err := d.Validate(false); err != nil {
			return fmt.Errorf("in_progress: %w", err)
		}
		if err := claim(d.Epoch, "in_progress"); err != nil {
			return err
		}
		started[d.Epoch] = struct{}{}
	}
	for i, d := range gs.Distributions {
		where := fmt.Sprintf("distributions[%d]", i)
		if err := d.Validate(true); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := claim(d.Epoch, where); err != nil {
			return err
		}
		started[d.Epoch] = struct{}{}
	}
	type key struct {
		provider string
		epoch    uint64
	}
	rewards := map[key]struct{}{}
	paidA, paidW := map[uint64]sdkmath.Int{}, map[uint64]sdkmath.Int{}
	for i, r := range gs.Rewards {
		where := fmt.Sprintf("rewards[%d]", i)
		if _, err := sdk.AccAddressFromBech32(r.Provider); err != nil {
			return fmt.Errorf("%s: provider %q: %w", where, r.Provider, err)
		}
		k := key{r.Provider, r.Epoch}
		if _, dup := rewards[k]; dup {
			return fmt.Errorf("%s: duplicate (%s, epoch %d)", where, r.Provider, r.Epoch)
		}
		rewards[k] = struct{}{}
		if _, ok := started[r.Epoch]; !ok {
			return fmt.Errorf("%s: epoch %d has no started distribution", where, r.Epoch)
		}
		if err := validate.NonNegativeInt(where+".availability", r.Availability); err != nil {
			return err
		}
		if err := validate.NonNegativeInt(where+".work", r.Work); err != nil {
			return err
		}
		if _, ok := paidA[r.Epoch]; !ok {
			paidA[r.Epoch], paidW[r.Epoch] = sdkmath.ZeroInt(), sdkmath.ZeroInt()
		}
		paidA[r.Epoch] = paidA[r.Epoch].Add(r.Availability)
		paidW[r.Epoch] = paidW[r.Epoch].Add(r.Work)
	}
	// A finished distribution's history adds up to what it paid (checked in the order of
	// the distributions, not of the maps).
	for _, d := range gs.Distributions {
		a, w := sdkmath.ZeroInt(), sdkmath.ZeroInt()
		if v, ok := paidA[d.Epoch]; ok {
			a, w = v, paidW[d.Epoch]
		}
		if !a.Equal(d.PaidAvailability) || !w.Equal(d.PaidWork) {
			return fmt.Errorf("distribution of epoch %d paid %s availability and %s work, its rewards history says %s and %s",
				d.Epoch, d.PaidAvailability, d.PaidWork, a, w)
		}
	}
	if err := gs.validateDeferred(); err != nil {
		return err
	}
	if err := gs.Retries.Validate(ItemKinds...); err != nil {
		return err
	}
	return gs.validateLedger()
}

// validateDeferred checks the deferred payouts: each of a started distribution, of a
// known kind, to a valid recipient, positive and unique, and adding up, per epoch and
// kind, to what its distribution defers.
func (gs GenesisState) validateDeferred() error {
	type key struct {
		epoch     uint64
		kind      string
		node      uint64
		recipient string
	}
	seen := map[key]struct{}{}
	owedA, owedW := map[uint64]sdkmath.Int{}, map[uint64]sdkmath.Int{}
	for i, dp := range gs.DeferredPayouts {
		where := fmt.Sprintf("deferred_payouts[%d]", i)
		switch dp.Kind {
		case RewardKindAvailability:
			if dp.NodeId == 0 {
				return fmt.Errorf("%s: an availability reward needs its node_id", where)
			}
		case RewardKindWork:
			if dp.NodeId != 0 {
				return fmt.Errorf("%s: a work reward has no node_id", where)
			}
		default:
			return fmt.Errorf("%s: unknown kind %q", where, dp.Kind)
		}
		if _, err := sdk.AccAddressFromBech32(dp.Recipient); err != nil {
			return fmt.Errorf("%s.recipient %q: %w", where, dp.Recipient, err)
		}
		if dp.Amount.IsNil() || !dp.Amount.IsPositive() {
			return fmt.Errorf("%s.amount %s: must be positive", where, dp.Amount)
		}
		k := key{dp.Epoch, dp.Kind, dp.NodeId, dp.Recipient}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("%s: duplicate", where)
		}
		seen[k] = struct{}{}
		owed := owedA
		if dp.Kind == RewardKindWork {
			owed = owedW
		}
		if _, ok := owed[dp.Epoch]; !ok {
			owed[dp.Epoch] = sdkmath.ZeroInt()
		}
		owed[dp.Epoch] = owed[dp.Epoch].Add(dp.Amount)
	}
	ds := gs.Distributions
	if gs.InProgress != nil {
		ds = append(append([]Distribution(nil), ds...), *gs.InProgress)
	}
	for _, d := range ds {
		a, w := sdkmath.ZeroInt(), sdkmath.ZeroInt()
		if v, ok := owedA[d.Epoch]; ok {
			a = v
		}
		if v, ok := owedW[d.Epoch]; ok {
			w = v
		}
		delete(owedA, d.Epoch)
		delete(owedW, d.Epoch)
		if !a.Equal(sdkint.OrZero(d.DeferredAvailability)) || !w.Equal(sdkint.OrZero(d.DeferredWork)) {
			return fmt.Errorf("distribution of epoch %d defers %s availability and %s work, its deferred payouts owe %s and %s",
				d.Epoch, sdkint.OrZero(d.DeferredAvailability), sdkint.OrZero(d.DeferredWork), a, w)
		}
	}
	for _, dp := range gs.DeferredPayouts {
		if _, ok := owedA[dp.Epoch]; ok {
			return fmt.Errorf("deferred payout of epoch %d, which has no distribution", dp.Epoch)
		}
		if _, ok := owedW[dp.Epoch]; ok {
			return fmt.Errorf("deferred payout of epoch %d, which has no distribution", dp.Epoch)
		}
	}
	return nil
}

// validateLedger checks the verified-work ledger (every record of an epoch not after the
// current one, not of a finished distribution, unique, with amounts >= 0) and the funding
// links (addresses, no self-funding, unique).
func (gs GenesisState) validateLedger() error {
	finished := map[uint64]struct{}{}
	for _, d := range gs.Distributions {
		finished[d.Epoch] = struct{}{}
	}
	type workKey struct {
		epoch    uint64
		provider string
		workload int32
	}
	work := map[workKey]struct{}{}
	for i, w := range gs.Work {
		where := fmt.Sprintf("work[%d]", i)
		if _, err := sdk.AccAddressFromBech32(w.Provider); err != nil {
			return fmt.Errorf("%s.provider %q: %w", where, w.Provider, err)
		}
		if w.Epoch > gs.CurrentEpoch {
			return fmt.Errorf("%s.epoch %d: after the current epoch %d", where, w.Epoch, gs.CurrentEpoch)
		}
		if _, done := finished[w.Epoch]; done {
			return fmt.Errorf("%s.epoch %d: its distribution finished and pruned it", where, w.Epoch)
		}
		k := workKey{w.Epoch, w.Provider, w.Workload}
		if _, dup := work[k]; dup {
			return fmt.Errorf("%s: duplicate (epoch %d, %s, workload %d)", where, w.Epoch, w.Provider, w.Workload)
		}
		work[k] = struct{}{}
		if err := validate.NonNegativeInt(where+".record.gflop_seconds", w.Record.GflopSeconds); err != nil {
			return err
		}
		if err := validate.NonNegativeInt(where+".record.fees", w.Record.Fees); err != nil {
			return err
		}
	}
	links := map[[2]string]struct{}{}
	for i, l := range gs.FundingLinks {
		if _, err := sdk.AccAddressFromBech32(l.Recipient); err != nil {
			return fmt.Errorf("funding_links[%d].recipient %q: %w", i, l.Recipient, err)
		}
		if _, err := sdk.AccAddressFromBech32(l.Funder); err != nil {
			return fmt.Errorf("funding_links[%d].funder %q: %w", i, l.Funder, err)
		}
		if l.Recipient == l.Funder {
			return fmt.Errorf("funding_links[%d]: %s cannot fund itself", i, l.Recipient)
		}
		if _, dup := links[[2]string{l.Recipient, l.Funder}]; dup {
			return fmt.Errorf("funding_links[%d] (%s, %s): duplicate", i, l.Recipient, l.Funder)
		}
		links[[2]string{l.Recipient, l.Funder}] = struct{}{}
	}
	return nil
}

// Validate checks the era state.
func (e EraState) Validate() error {
	if err := validate.NonNegativeInt("cumulative_gfl", e.CumulativeGfl); err != nil {
		return err
	}
	return validate.NonNegativeInt("pool_baseline", e.PoolBaseline)
}

// Validate checks a distribution's amounts and its accounting: E <= uncapped, E_avail +
// E_work = E, paid <= planned per part, and once done paid + remainder = E; a finished
// one has no progress and a running one has.
func (d Distribution) Validate(done bool) error {
	for _, f := range []struct {
		name string
		v    sdkmath.Int
	}{
		{"replenished", d.Replenished}, {"gfl_credit", d.GflCredit}, {"uncapped", d.Uncapped},
		{"emission", d.Emission}, {"availability", d.Availability}, {"work", d.Work},
		{"paid_availability", d.PaidAvailability}, {"paid_work", d.PaidWork}, {"remainder", d.Remainder},
		{"deferred_availability", sdkint.OrZero(d.DeferredAvailability)}, {"deferred_work", sdkint.OrZero(d.DeferredWork)},
	} {
		if err := validate.NonNegativeInt(fmt.Sprintf("epoch %d %s", d.Epoch, f.name), f.v); err != nil {
			return err
		}
	}
	if d.Emission.GT(d.Uncapped) {
		return fmt.Errorf("epoch %d: emission %s above uncapped %s", d.Epoch, d.Emission, d.Uncapped)
	}
	for i, c := range d.AskCaps {
		if i > 0 && d.AskCaps[i-1].GpuClass >= c.GpuClass {
			return fmt.Errorf("epoch %d: ask_caps[%d] %q: classes must be sorted and distinct", d.Epoch, i, c.GpuClass)
		}
		if err := validate.NonNegativeInt(fmt.Sprintf("epoch %d ask_caps[%d].reference_ask", d.Epoch, i), c.ReferenceAsk); err != nil {
			return err
		}
		if err := validate.NonNegativeInt(fmt.Sprintf("epoch %d ask_caps[%d].cap", d.Epoch, i), c.Cap); err != nil {
			return err
		}
	}
	if !d.Availability.Add(d.Work).Equal(d.Emission) {
		return fmt.Errorf("epoch %d: availability %s + work %s != emission %s", d.Epoch, d.Availability, d.Work, d.Emission)
	}
	if d.PaidAvailability.Add(sdkint.OrZero(d.DeferredAvailability)).GT(d.Availability) || d.PaidWork.Add(sdkint.OrZero(d.DeferredWork)).GT(d.Work) {
		return fmt.Errorf("epoch %d: paid %s availability and %s work, deferred %s and %s, more than planned %s and %s",
			d.Epoch, d.PaidAvailability, d.PaidWork, sdkint.OrZero(d.DeferredAvailability), sdkint.OrZero(d.DeferredWork), d.Availability, d.Work)
	}
	if _, ok := HalvingCause_name[int32(d.Halving)]; !ok {
		return fmt.Errorf("epoch %d: unknown halving cause %d", d.Epoch, d.Halving)
	}
	if done {
		if d.Phase != DISTRIBUTION_PHASE_DONE || d.Progress != nil {
			return fmt.Errorf("epoch %d: a finished distribution must be %s without progress, got %s", d.Epoch, DISTRIBUTION_PHASE_DONE, d.Phase)
		}
		if !d.PaidAvailability.Add(d.PaidWork).Add(d.Remainder).Equal(d.Emission) {
			return fmt.Errorf("epoch %d: paid %s + %s + remainder %s != emission %s",
				d.Epoch, d.PaidAvailability, d.PaidWork, d.Remainder, d.Emission)
		}
		return nil
	}
	if d.Phase == DISTRIBUTION_PHASE_UNSPECIFIED || d.Phase == DISTRIBUTION_PHASE_DONE || DistributionPhase_name[int32(d.Phase)] == "" {
		return fmt.Errorf("epoch %d: a distribution in progress cannot be in phase %s", d.Epoch, d.Phase)
	}
	if d.Progress == nil {
		return fmt.Errorf("epoch %d: a distribution in progress needs its progress", d.Epoch)
	}
	if !d.Remainder.IsZero() {
		return fmt.Errorf("epoch %d: remainder %s before the end", d.Epoch, d.Remainder)
	}
	pr := d.Progress
	if err := validate.NonNegativeInt("progress.total_weight", pr.TotalWeight); err != nil {
		return err
	}
	if err := validate.Range("progress.work_reward_cap_ppm", pr.WorkRewardCapPpm, 0, validate.PPMOne); err != nil {
		return err
	}
	if c := pr.AvailabilityAskCapPpm; c != 0 && (c < validate.PPMOne || c > MaxAvailabilityAskCapPPM) {
		return fmt.Errorf("progress.availability_ask_cap_ppm %d: must be 0 or %d to %d", c, validate.PPMOne, uint64(MaxAvailabilityAskCapPPM))
	}
	if d.Phase == DISTRIBUTION_PHASE_ASKS && pr.AvailabilityAskCapPpm == 0 {
		return fmt.Errorf("epoch %d: the asks pass of a distribution without an ask cap", d.Epoch)
	}
	for i, c := range pr.ClassAsks {
		if i > 0 && pr.ClassAsks[i-1].GpuClass >= c.GpuClass {
			return fmt.Errorf("progress.class_asks[%d] %q: classes must be sorted and distinct", i, c.GpuClass)
		}
		for j, b := range c.Buckets {
			if j > 0 && c.Buckets[j-1].Bucket >= b.Bucket {
				return fmt.Errorf("progress.class_asks[%d].buckets[%d] %d: buckets must be sorted and distinct", i, j, b.Bucket)
			}
		}
	}
	if c := pr.WorkCursor; c != nil {
		if _, err := sdk.AccAddressFromBech32(c.Provider); err != nil {
			return fmt.Errorf("progress.work_cursor.provider %q: %w", c.Provider, err)
		}
	}
	if t := pr.Pending; t != nil {
		if _, err := sdk.AccAddressFromBech32(t.Provider); err != nil {
			return fmt.Errorf("progress.pending.provider %q: %w", t.Provider, err)
		}
		if err := validate.NonNegativeInt("progress.pending.weight", t.Weight); err != nil {
			return err
		}
		if err := validate.NonNegativeInt("progress.pending.fees", t.Fees); err != nil {
			return err
		}
	}
	return nil
}
