package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// An entry is paid out by the first block at or after its completion time, not before.
func TestEndBlockPaysOnlyWhenMature(t *testing.T) {
	for _, tc := range []struct {
		name     string
		offset   time.Duration // block time - completion time
		wantPaid bool
	}{
		// a block one nanosecond before completion pays nothing
		{"just before", -time.Nanosecond, false},
		// a block long before completion pays nothing
		{"long before", -59 * time.Minute, false},
		// the block at exactly the completion time pays
		{"at completion", 0, true},
		// a later block pays
		{"after completion", 3 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			prov := addr("provider")
			f.bond(prov, 5_000)
			res := f.unbond(prov, 2_000)
			f.at(res.CompletionTime.Add(tc.offset))
			f.takeEvents()
			f.endBlock()
			_, unbonding := f.totals()
			has, err := f.k.Unbondings.Has(f.ctx, joinKey(prov, res.UnbondingId))
			require.NoError(t, err)
			evs := typedEvents[*types.EventUnbondingMatured](t, f.takeEvents())
			if tc.wantPaid {
				require.False(t, has)
				require.Equal(t, int64(2_000), f.balance(prov).Int64())
				require.Equal(t, int64(3_000), f.moduleBalance().Int64())
				require.True(t, unbonding.IsZero())
				require.Len(t, evs, 1)
				require.Equal(t, res.UnbondingId, evs[0].UnbondingId)
				require.Equal(t, int64(2_000), evs[0].Amount.Int64())
			} else {
				require.True(t, has)
				require.True(t, f.balance(prov).IsZero())
				require.Equal(t, int64(5_000), f.moduleBalance().Int64())
				require.Equal(t, int64(2_000), unbonding.Int64())
				require.Empty(t, evs)
			}
			f.requireInvariants()
		})
	}
}

// Matured entries are paid in completion order, at most max_matured_per_block (2) per
// block; the rest are paid in later blocks.
func TestEndBlockOrderAndBound(t *testing.T) {
	f := newFixture(t)
	a, b, c := addr("a"), addr("b"), addr("c")
	for _, p := range []sdk.AccAddress{a, b, c} {
		f.bond(p, 10_000)
	}
	start := f.ctx.BlockTime()
	// five entries, created a minute apart, alternating providers (ids 0..4)
	type created struct {
		id   uint64
		prov sdk.AccAddress
	}
	var order []created
	for i, p := range []sdk.AccAddress{c, a, b, a, c} {
		f.at(start.Add(time.Duration(i) * time.Minute))
		order = append(order, created{f.unbond(p, int64(100*(i+1))).UnbondingId, p})
	}
	f.takeEvents()

	// all five are due; each block pays the next two in completion order
	f.at(start.Add(2 * time.Hour))
	var paid []uint64
	for block, want := range []int{2, 2, 1, 0} {
		f.endBlock()
		evs := typedEvents[*types.EventUnbondingMatured](t, f.takeEvents())
		require.Len(t, evs, want, "block %d", block)
		for _, e := range evs {
			paid = append(paid, e.UnbondingId)
		}
		f.requireInvariants()
		f.at(f.ctx.BlockTime().Add(time.Second))
	}
	var wantIDs []uint64
	for _, o := range order {
		wantIDs = append(wantIDs, o.id)
	}
	require.Equal(t, wantIDs, paid)
	// a: 200 + 400, b: 300, c: 100 + 500, all paid back
	require.Equal(t, int64(600), f.balance(a).Int64())
	require.Equal(t, int64(300), f.balance(b).Int64())
	require.Equal(t, int64(600), f.balance(c).Int64())
}

// Only the due part of the queue is paid: later entries wait even when the block has
// room.
func TestEndBlockLeavesFutureEntries(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxMaturedPerBlock = 10 })
	prov := addr("provider")
	f.bond(prov, 10_000)
	start := f.ctx.BlockTime()
	first := f.unbond(prov, 100)
	f.at(start.Add(30 * time.Minute))
	second := f.unbond(prov, 200)
	f.at(first.CompletionTime)
	f.endBlock()
	has, err := f.k.Unbondings.Has(f.ctx, joinKey(prov, first.UnbondingId))
	require.NoError(t, err)
	require.False(t, has)
	has, err = f.k.Unbondings.Has(f.ctx, joinKey(prov, second.UnbondingId))
	require.NoError(t, err)
	require.True(t, has)
	f.requireInvariants()
}

// A payout that fails (the bank refuses) or panics is logged and re-queued a minute later
// with an EventItemFailed: that entry keeps its amount, the others are paid, and the
// failed one is paid in a later block once the cause is gone.
func TestEndBlockIsolatesFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		breakBank func(f *fixture, bad sdk.AccAddress)
		fixBank   func(f *fixture, bad sdk.AccAddress)
	}{
		{
			// the bank refuses the send
			name:      "bank error",
			breakBank: func(f *fixture, bad sdk.AccAddress) { f.bank.blocked[string(bad)] = true },
			fixBank:   func(f *fixture, bad sdk.AccAddress) { delete(f.bank.blocked, string(bad)) },
		},
		{
			// the bank panics; the panic is recovered
			name:      "panic",
			breakBank: func(f *fixture, bad sdk.AccAddress) { f.bank.panicOnSendTo = bad },
			fixBank:   func(f *fixture, _ sdk.AccAddress) { f.bank.panicOnSendTo = nil },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			bad, good := addr("bad"), addr("good")
			f.bond(bad, 1_000)
			f.bond(good, 1_000)
			badEntry := f.unbond(bad, 300)
			goodEntry := f.unbond(good, 400)
			tc.breakBank(f, bad)

			f.at(badEntry.CompletionTime)
			f.takeEvents()
			f.endBlock()
			evs := typedEvents[*types.EventUnbondingMatured](t, f.takeEvents())
			require.Len(t, evs, 1)
			require.Equal(t, goodEntry.UnbondingId, evs[0].UnbondingId)
			e, err := f.k.Unbondings.Get(f.ctx, joinKey(bad, badEntry.UnbondingId))
			require.NoError(t, err, "the failed entry stays queued")
			require.Equal(t, int64(300), e.Amount.Int64())
			require.Equal(t, f.ctx.BlockTime().Add(time.Minute), e.CompletionTime, "retried after a minute")
			require.True(t, f.balance(bad).IsZero())
			require.Equal(t, int64(400), f.balance(good).Int64())
			f.requireInvariants()

			f.at(f.ctx.BlockTime().Add(time.Second))
			f.endBlock()
			require.True(t, f.balance(bad).IsZero(), "not due again before its back-off")

			tc.fixBank(f, bad)
			f.at(e.CompletionTime)
			f.endBlock()
			require.Equal(t, int64(300), f.balance(bad).Int64())
			n, err := f.k.Retries.Attempt(f.ctx, blockhook.Item{Kind: "mature", ID: badEntry.UnbondingId, Addr: bad})
			require.NoError(t, err)
			require.Zero(t, n, "a payout that went through forgets its failures")
			f.requireInvariants()
		})
	}
}

// A payout that keeps failing is not retried for ever: after its fifth failure (back-offs
// of 1, 2, 4 and 8 minutes) the amount goes back to the provider's bonded collateral, with
// an EventItemResolved; nothing stays unbonding and the accounting holds throughout.
func TestEndBlockResolvesPayoutThatKeepsFailing(t *testing.T) {
	f := newFixture(t)
	bad := addr("bad")
	f.bond(bad, 1_000)
	res := f.unbond(bad, 300)
	f.bank.blocked[string(bad)] = true
	it := blockhook.Item{Kind: "mature", ID: res.UnbondingId, Addr: bad}

	f.at(res.CompletionTime)
	f.takeEvents()
	for attempt := uint32(1); attempt <= blockhook.MaxAttempts; attempt++ {
		f.endBlock()
		evs := f.takeEvents()
		failed := typedEvents[*blockhook.EventItemFailed](t, evs)
		require.Len(t, failed, 1, "attempt %d", attempt)
		require.Equal(t, attempt, failed[0].Attempt)
		require.Equal(t, "stakingslash", failed[0].Module)
		f.requireInvariants()
		if attempt < blockhook.MaxAttempts {
			e, err := f.k.Unbondings.Get(f.ctx, joinKey(bad, res.UnbondingId))
			require.NoError(t, err)
			require.Equal(t, f.ctx.BlockTime().Add(time.Duration(blockhook.Backoff(attempt))*time.Minute), e.CompletionTime)
			require.Empty(t, typedEvents[*blockhook.EventItemResolved](t, evs))
			f.at(e.CompletionTime)
			continue
		}
		resolved := typedEvents[*blockhook.EventItemResolved](t, evs)
		require.Len(t, resolved, 1)
		require.Contains(t, resolved[0].Rule, "bonded collateral")
	}
	has, err := f.k.Unbondings.Has(f.ctx, joinKey(bad, res.UnbondingId))
	require.NoError(t, err)
	require.False(t, has, "the entry is gone")
	require.Equal(t, int64(1_000), f.collateral(bad).Bonded.Int64(), "the amount is bonded again")
	bonded, unbonding := f.totals()
	require.Equal(t, int64(1_000), bonded.Int64())
	require.True(t, unbonding.IsZero())
	n, err := f.k.Retries.Attempt(f.ctx, it)
	require.NoError(t, err)
	require.Zero(t, n)
	f.requireInvariants()

	// the provider can unbond it again once the bank takes it
	delete(f.bank.blocked, string(bad))
	again := f.unbond(bad, 300)
	f.at(again.CompletionTime)
	f.endBlock()
	require.Equal(t, int64(300), f.balance(bad).Int64())
	f.requireInvariants()
}

// A slash during unbonding lowers what the entry pays out.
func TestSlashedEntryPaysLoweredAmount(t *testing.T) {
	f := newFixture(t)
	prov := addr("provider")
	f.bond(prov, 10_000)
	res := f.unbond(prov, 4_000)
	_, err := f.k.Slash(f.ctx, prov, 250_000, types.SLASH_REASON_WRONG_POCP, types.Beneficiaries{}, types.SlashEvidence{ChallengeId: 9})
	require.NoError(t, err)
	f.at(res.CompletionTime)
	f.endBlock()
	require.Equal(t, int64(3_000), f.balance(prov).Int64())
	require.Equal(t, int64(4_500), f.moduleBalance().Int64()) // 6,000 bonded less 25%
	f.requireInvariants()
}
