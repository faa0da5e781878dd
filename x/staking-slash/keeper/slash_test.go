package keeper_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// ppmOf is the test's own floor(x * f / 1e6).
func ppmOf(x int64, f uint32) int64 { return x * int64(f) / 1_000_000 }

func rewardedAddrs(n int) []sdk.AccAddress {
	out := make([]sdk.AccAddress, n)
	for i := range out {
		out[i] = addr(fmt.Sprintf("verifier-%d", i))
	}
	return out
}

// Slash takes the fraction of the bonded collateral and of each unbonding entry, and the
// parts (compensation, rewards, burned) add up to the total exactly: the module account
// falls by the total, the beneficiaries rise by their shares, the supply falls by the
// burned part, and no dust is created or lost.
func TestSlashSplitsExactly(t *testing.T) {
	prov := addr("provider")
	client := addr("client")
	for _, tc := range []struct {
		name       string
		fraction   uint32
		bonded     int64   // left bonded
		unbonding  []int64 // open unbonding entries
		compensate bool
		rewarded   int
	}{
		// 10% of a plain bond with every kind of beneficiary
		{"10% bonded only, client and one verifier", 100_000, 10_000, nil, true, 1},
		// truncation everywhere: odd amounts, a third, three verifiers (remainder burned)
		{"a third, bonded and unbonding, three verifiers", 333_333, 10_001, []int64{3_333, 7}, true, 3},
		// everything, nobody to pay: all burned, entries emptied
		{"100% without beneficiaries burns all", 1_000_000, 5_000, []int64{1_000, 2_000}, false, 0},
		// 1 ppm: the bonded part truncates to zero, only the large entry gives 2 udps
		{"1 ppm dust", 1, 999_999, []int64{2_000_000}, true, 3},
		// a zero fraction slashes nothing but is still recorded
		{"zero fraction", 0, 10_000, []int64{500}, true, 1},
		// nothing bonded, only unbonding: a slash during unbonding reaches the entries
		{"unbonding only", 500_000, 0, []int64{1_001, 999, 3}, true, 1},
		// the client alone: its share paid, the reward share burned
		{"compensation only", 250_000, 7_777, []int64{111}, true, 0},
		// verifiers alone: the compensation share burned
		{"three verifiers only", 250_000, 7_777, nil, false, 3},
		// a reward too small to split: each gets floor(reward/3) = 0, all burned
		{"reward smaller than the verifiers", 1_000, 8_000, nil, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sumUnbonding := int64(0)
			for _, u := range tc.unbonding {
				sumUnbonding += u
			}
			f.bond(prov, tc.bonded+sumUnbonding)
			var ids []uint64
			for _, u := range tc.unbonding {
				ids = append(ids, f.unbond(prov, u).UnbondingId)
			}
			b := types.Beneficiaries{Rewarded: rewardedAddrs(tc.rewarded)}
			if tc.compensate {
				// a cap the compensation share never reaches (TestSlashCompensationCapped
				// lowers it)
				b.Compensate, b.CompensationCap = client, sdkmath.NewInt(tc.bonded+sumUnbonding)
			}
			moduleBefore := f.moduleBalance()
			supplyBefore := f.bank.Supply(f.ctx, denom)
			f.takeEvents()

			// expected, from the formula
			wantBondedCut := ppmOf(tc.bonded, tc.fraction)
			wantTotal := wantBondedCut
			for _, u := range tc.unbonding {
				wantTotal += ppmOf(u, tc.fraction)
			}
			wantComp, wantEach := int64(0), int64(0)
			if tc.compensate {
				wantComp = ppmOf(wantTotal, 500_000)
			}
			if tc.rewarded > 0 {
				wantEach = ppmOf(wantTotal, 250_000) / int64(tc.rewarded)
			}
			wantPaid := wantEach * int64(tc.rewarded)
			wantBurned := wantTotal - wantComp - wantPaid

			evidence := types.SlashEvidence{JobId: 7, TaskId: 3}
			rec, err := f.k.Slash(f.ctx, prov, tc.fraction, types.SLASH_REASON_WRONG_RESULT, b, evidence)
			require.NoError(t, err)

			// the record
			require.Equal(t, wantTotal, rec.Amount.Int64(), "total")
			require.Equal(t, wantComp, rec.Compensation.Int64(), "compensation")
			require.Equal(t, wantPaid, rec.Reward.Int64(), "reward paid")
			require.Equal(t, wantBurned, rec.Burned.Int64(), "burned")
			requireInt(t, rec.Amount, rec.Compensation.Add(rec.Reward).Add(rec.Burned), "parts sum to the total")
			require.Equal(t, tc.fraction, rec.FractionPpm)
			require.Equal(t, evidence, rec.Evidence)
			require.Len(t, rec.Rewarded, tc.rewarded)
			if tc.compensate {
				require.Equal(t, client.String(), rec.Compensated)
			}

			// the money: exactly total leaves the module account
			requireInt(t, moduleBefore.Sub(rec.Amount), f.moduleBalance(), "module account falls by the total")
			require.Equal(t, wantComp, f.balance(client).Int64(), "client balance")
			for _, r := range b.Rewarded {
				require.Equal(t, wantEach, f.balance(r).Int64(), "verifier balance")
			}
			requireInt(t, supplyBefore.Sub(rec.Burned), f.bank.Supply(f.ctx, denom), "supply falls by the burned part")

			// the collateral and the entries, lowered in place
			c := f.collateral(prov)
			require.Equal(t, tc.bonded-wantBondedCut, c.Bonded.Int64())
			require.Equal(t, wantTotal, c.SlashedTotal.Int64())
			for i, id := range ids {
				e, err := f.k.Unbondings.Get(f.ctx, joinKey(prov, id))
				require.NoError(t, err)
				require.Equal(t, tc.unbonding[i]-ppmOf(tc.unbonding[i], tc.fraction), e.Amount.Int64(), "entry %d", id)
			}

			// history, event, hook
			stored, err := f.k.Slashes.Get(f.ctx, joinKey(prov, rec.Id))
			require.NoError(t, err)
			requireInt(t, rec.Amount, stored.Amount)
			evs := typedEvents[*types.EventSlash](t, f.takeEvents())
			require.Len(t, evs, 1)
			require.Equal(t, rec.Id, evs[0].Record.Id)
			require.Len(t, f.hooks.slashed, 1)
			require.Equal(t, rec.Id, f.hooks.slashed[0].Id)
			f.requireInvariants()
		})
	}
}

// The client's compensation is at most the cap its caller sets (what the client paid for
// the task): the rest of its share is burned, the verifiers' reward is unchanged, and the
// parts still sum to the total.
func TestSlashCompensationCapped(t *testing.T) {
	prov, client := addr("provider"), addr("client")
	for _, tc := range []struct {
		name          string
		cap, wantComp int64
	}{
		{"cap below the share", 1_234, 1_234},
		{"zero cap", 0, 0},
		{"cap above the share", 1_000_000, 25_000}, // half of the 50,000 slashed
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.bond(prov, 250_000)
			supplyBefore := f.bank.Supply(f.ctx, denom)
			rec, err := f.k.Slash(f.ctx, prov, 200_000, types.SLASH_REASON_WRONG_RESULT,
				types.Beneficiaries{Compensate: client, CompensationCap: sdkmath.NewInt(tc.cap), Rewarded: rewardedAddrs(2)}, types.SlashEvidence{})
			require.NoError(t, err)
			require.EqualValues(t, 50_000, rec.Amount.Int64())
			require.EqualValues(t, tc.wantComp, rec.Compensation.Int64())
			require.EqualValues(t, tc.wantComp, f.balance(client).Int64(), "the client is paid the capped compensation")
			require.EqualValues(t, 12_500, rec.Reward.Int64(), "the verifiers' 25% is not capped")
			requireInt(t, rec.Amount, rec.Compensation.Add(rec.Reward).Add(rec.Burned), "parts sum to the total")
			requireInt(t, supplyBefore.Sub(rec.Burned), f.bank.Supply(f.ctx, denom), "what the cap holds back is burned")
			f.requireInvariants()
		})
	}
}

// SlashAtMost takes the fraction asked for when its total stays within the limit, and
// otherwise the largest fraction whose total does, bonded and unbonding parts alike: the
// total never passes the limit.
func TestSlashAtMost(t *testing.T) {
	prov := addr("provider")
	for _, tc := range []struct {
		name         string
		limit        int64
		wantFraction uint32
		wantTotal    int64
	}{
		// 1% of 1,000,000 bonded and 200,000 unbonding: 12,000
		{"within the limit", 50_000, 10_000, 12_000},
		{"at the limit", 12_000, 10_000, 12_000},
		// floor(3,000 x 1e6 / 1,200,000) = 2,500 ppm: 2,500 + 500
		{"lowered to the limit", 3_000, 2_500, 3_000},
		// floor(1,000 x 1e6 / 1,200,000) = 833 ppm: 833 + 166
		{"lowered, rounding down", 1_000, 833, 999},
		{"zero limit", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.bond(prov, 1_200_000)
			f.unbond(prov, 200_000)
			rec, err := f.k.SlashAtMost(f.ctx, prov, 10_000, sdkmath.NewInt(tc.limit), types.SLASH_REASON_ABANDONED_TASK, types.Beneficiaries{}, types.SlashEvidence{})
			require.NoError(t, err)
			require.Equal(t, tc.wantFraction, rec.FractionPpm)
			require.EqualValues(t, tc.wantTotal, rec.Amount.Int64())
			require.LessOrEqual(t, rec.Amount.Int64(), tc.limit)
			f.requireInvariants()
		})
	}
	f := newFixture(t)
	f.bond(prov, 1_000)
	for _, limit := range []sdkmath.Int{{}, sdkmath.NewInt(-1)} {
		_, err := f.k.SlashAtMost(f.ctx, prov, 10_000, limit, types.SLASH_REASON_ABANDONED_TASK, types.Beneficiaries{}, types.SlashEvidence{})
		require.ErrorIs(t, err, types.ErrInvalidSlash, "limit %s", limit)
	}
}

// CoveringFraction lowers a fraction to the least whose cut of the collateral, bonded and
// unbonding, reaches an amount: rounded up, so that a sum smaller than a ppm of a large
// bond is not rounded away to nothing.
func TestCoveringFraction(t *testing.T) {
	prov := addr("provider")
	for _, tc := range []struct {
		name         string
		amount       int64
		wantFraction uint32
		wantTotal    int64
	}{
		// 1% of 1,000,000 bonded and 200,000 unbonding: 12,000
		{"more than the fraction takes", 50_000, 10_000, 12_000},
		{"what the fraction takes", 12_000, 10_000, 12_000},
		// 3,000 x 1e6 / 1,200,000 = 2,500 ppm exactly: 2,500 + 500
		{"lowered exactly", 3_000, 2_500, 3_000},
		// ceil(1,000 x 1e6 / 1,200,000) = 834 ppm: 834 + 166 (each part rounded down)
		{"lowered, rounding up", 1_000, 834, 1_000},
		// ceil(1 x 1e6 / 1,200,000) = 1 ppm: 1 + 0
		{"less than a ppm", 1, 1, 1},
		{"zero", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.bond(prov, 1_200_000)
			f.unbond(prov, 200_000)
			got, err := f.k.CoveringFraction(f.ctx, prov, 10_000, sdkmath.NewInt(tc.amount))
			require.NoError(t, err)
			require.Equal(t, tc.wantFraction, got)
			rec, err := f.k.Slash(f.ctx, prov, got, types.SLASH_REASON_ABANDONED_TASK, types.Beneficiaries{}, types.SlashEvidence{})
			require.NoError(t, err)
			require.EqualValues(t, tc.wantTotal, rec.Amount.Int64())
			f.requireInvariants()
		})
	}
	f := newFixture(t)
	got, err := f.k.CoveringFraction(f.ctx, addr("nobody"), 10_000, sdkmath.NewInt(5))
	require.NoError(t, err)
	require.Equal(t, uint32(10_000), got, "nothing to cut: the fraction as given")
	for _, amount := range []sdkmath.Int{{}, sdkmath.NewInt(-1)} {
		_, err := f.k.CoveringFraction(f.ctx, prov, 10_000, amount)
		require.ErrorIs(t, err, types.ErrInvalidSlash, "amount %s", amount)
	}
	_, err = f.k.CoveringFraction(f.ctx, prov, 1_000_001, sdkmath.NewInt(1))
	require.ErrorIs(t, err, types.ErrInvalidSlash, "a fraction above one")
}

// A provider with nothing bonded or unbonding gets a zero record, not an error; it is kept
// in the history and reported to the hooks, and no coin moves.
func TestSlashNothingBonded(t *testing.T) {
	f := newFixture(t)
	prov := addr("nobody")
	before := f.bank.Snapshot(f.ctx)
	rec, err := f.k.Slash(f.ctx, prov, 500_000, types.SLASH_REASON_MISSED_REVEAL,
		types.Beneficiaries{Compensate: addr("client"), CompensationCap: sdkmath.NewInt(1_000), Rewarded: rewardedAddrs(2)}, types.SlashEvidence{})
	require.NoError(t, err)
	require.True(t, rec.Amount.IsZero())
	require.True(t, rec.Compensation.IsZero())
	require.True(t, rec.Reward.IsZero())
	require.True(t, rec.Burned.IsZero())
	require.Equal(t, before, f.bank.Snapshot(f.ctx))
	has, err := f.k.Collaterals.Has(f.ctx, prov)
	require.NoError(t, err)
	require.False(t, has, "no collateral record is created")
	_, err = f.k.Slashes.Get(f.ctx, joinKey(prov, rec.Id))
	require.NoError(t, err)
	require.Len(t, f.hooks.slashed, 1)
	f.requireInvariants()
}

// Bad slashes are refused with a registered error, and a slash whose payout fails midway
// changes nothing at all (it runs in a cache context).
func TestSlashRejects(t *testing.T) {
	prov := addr("provider")
	client := addr("client")
	for _, tc := range []struct {
		name     string
		prior    func(f *fixture)
		provider sdk.AccAddress
		fraction uint32
		reason   types.SlashReason
		b        types.Beneficiaries
		wantErr  error
	}{
		{
			// more than the whole collateral
			name: "fraction above 1e6", provider: prov, fraction: 1_000_001,
			reason: types.SLASH_REASON_WRONG_POCP, wantErr: types.ErrInvalidSlash,
		},
		{
			// a slash must say why
			name: "unspecified reason", provider: prov, fraction: 1_000,
			reason: types.SLASH_REASON_UNSPECIFIED, wantErr: types.ErrInvalidSlash,
		},
		{
			// an undefined reason is refused too
			name: "undefined reason", provider: prov, fraction: 1_000,
			reason: types.SlashReason(99), wantErr: types.ErrInvalidSlash,
		},
		{
			// an empty provider address
			name: "empty provider", provider: sdk.AccAddress{}, fraction: 1_000,
			reason: types.SLASH_REASON_WRONG_POCP, wantErr: types.ErrInvalidAddress,
		},
		{
			// an empty rewarded address
			name: "empty rewarded address", provider: prov, fraction: 1_000,
			reason: types.SLASH_REASON_WRONG_POCP,
			b:      types.Beneficiaries{Rewarded: []sdk.AccAddress{addr("v"), {}}}, wantErr: types.ErrInvalidAddress,
		},
		{
			// the second verifier cannot receive: the client's compensation and the first
			// verifier's reward, already paid in the cache context, are rolled back too
			name: "payout failure midway rolls back",
			prior: func(f *fixture) {
				f.bank.blocked[string(rewardedAddrs(2)[1])] = true
			},
			provider: prov, fraction: 100_000, reason: types.SLASH_REASON_WRONG_RESULT,
			b:       types.Beneficiaries{Compensate: client, CompensationCap: sdkmath.NewInt(10_000), Rewarded: rewardedAddrs(2)},
			wantErr: sdkerrors.ErrUnauthorized,
		},
		{
			// a compensated client needs a cap: a caller that forgot it must not pay
			// half the slash to the client
			name: "compensated without a cap", provider: prov, fraction: 100_000, reason: types.SLASH_REASON_WRONG_RESULT,
			b: types.Beneficiaries{Compensate: client}, wantErr: types.ErrInvalidSlash,
		},
		{
			name: "negative compensation cap", provider: prov, fraction: 100_000, reason: types.SLASH_REASON_WRONG_RESULT,
			b: types.Beneficiaries{Compensate: client, CompensationCap: sdkmath.NewInt(-1)}, wantErr: types.ErrInvalidSlash,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.bond(prov, 10_000)
			f.unbond(prov, 1_000)
			if tc.prior != nil {
				tc.prior(f)
			}
			f.takeEvents()
			before := f.snapshot()
			_, err := f.k.Slash(f.ctx, tc.provider, tc.fraction, tc.reason, tc.b, types.SlashEvidence{})
			require.ErrorIs(t, err, tc.wantErr)
			f.requireUnchanged(before)
			require.Empty(t, f.takeEvents(), "no events from a failed slash")
			require.Empty(t, f.hooks.slashed, "no hook call for a failed slash")
			f.requireInvariants()
		})
	}
}

// Slash ids increase across providers and each provider's history keeps its own records.
func TestSlashHistoryIDs(t *testing.T) {
	f := newFixture(t)
	a, b := addr("a"), addr("b")
	f.bond(a, 1_000)
	f.bond(b, 1_000)
	var got []uint64
	for _, p := range []sdk.AccAddress{a, b, a} {
		rec, err := f.k.Slash(f.ctx, p, 10_000, types.SLASH_REASON_ABANDONED_TASK, types.Beneficiaries{}, types.SlashEvidence{})
		require.NoError(t, err)
		got = append(got, rec.Id)
	}
	require.Equal(t, []uint64{0, 1, 2}, got)
	res, err := f.qs.SlashHistory(f.ctx, &types.QuerySlashHistoryRequest{Provider: a.String()})
	require.NoError(t, err)
	require.Len(t, res.Slashes, 2)
	require.Equal(t, uint64(0), res.Slashes[0].Id)
	require.Equal(t, uint64(2), res.Slashes[1].Id)
	requireInt(t, sdkmath.NewInt(10+9), f.collateral(a).SlashedTotal) // 1% of 1000, then 1% of 990
	f.requireInvariants()
}

// A hook that fails (x/reputation could not record the slash) makes Slash return its
// error: the caller's tx or block item then fails whole instead of losing the record.
func TestSlashReturnsAFailingHooksError(t *testing.T) {
	f := newFixture(t)
	p := addr("hooked")
	f.bond(p, 1_000_000)
	f.hooks.fail = errors.New("reputation is broken")
	_, err := f.k.Slash(f.ctx, p, 10_000, types.SLASH_REASON_ABANDONED_TASK, types.Beneficiaries{}, types.SlashEvidence{NodeId: 1})
	require.ErrorIs(t, err, f.hooks.fail)
	require.ErrorIs(t, f.k.Jail(f.ctx, p, f.ctx.BlockTime().Add(time.Hour), types.SlashEvidence{NodeId: 1}), f.hooks.fail)
}

// Slash records do not accumulate: each is deleted slash_retention_blocks after its slash
// by the EndBlock, at most a chunk per block; the collateral keeps slashed_total.
func TestSlashRecordsArePrunedAfterRetention(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.SlashRetentionBlocks = 10 })
	prov := addr("provider")
	f.bond(prov, 10_000)
	h := f.ctx.BlockHeight()
	rec, err := f.k.Slash(f.ctx, prov, 100_000, types.SLASH_REASON_WRONG_RESULT, types.Beneficiaries{}, types.SlashEvidence{NodeId: 1})
	require.NoError(t, err)
	has := func() bool {
		ok, err := f.k.Slashes.Has(f.ctx, collections.Join(prov, rec.Id))
		require.NoError(t, err)
		return ok
	}
	for f.ctx.BlockHeight() < h+9 {
		f.at(f.ctx.BlockTime().Add(time.Second))
		f.endBlock()
		require.True(t, has(), "kept until its retention ends (height %d)", f.ctx.BlockHeight())
	}
	f.at(f.ctx.BlockTime().Add(time.Second))
	f.endBlock()
	require.False(t, has(), "deleted at slash height + retention")
	require.True(t, f.collateral(prov).SlashedTotal.IsPositive(), "the sum stays on the collateral")
	f.requireInvariants()
}
