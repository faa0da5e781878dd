package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

func TestMsgBond(t *testing.T) {
	prov := addr("provider")
	for _, tc := range []struct {
		name    string
		prior   func(f *fixture) // state before the Msg
		msg     *types.MsgBond
		wantErr error
		// on success: bonded after, provider balance after, module balance after
		wantBonded, wantBalance, wantModule int64
	}{
		{
			// a first bond moves the coins into the module account and records them
			name:       "first bond",
			prior:      func(f *fixture) { f.fund(prov, 5_000) },
			msg:        &types.MsgBond{Provider: prov.String(), Amount: coin(3_000)},
			wantBonded: 3_000, wantBalance: 2_000, wantModule: 3_000,
		},
		{
			// a second bond adds to the bonded collateral
			name:       "bond adds to bonded",
			prior:      func(f *fixture) { f.bond(prov, 1_000); f.fund(prov, 500) },
			msg:        &types.MsgBond{Provider: prov.String(), Amount: coin(500)},
			wantBonded: 1_500, wantBalance: 0, wantModule: 1_500,
		},
		{
			// a zero amount is refused
			name:    "zero amount",
			prior:   func(f *fixture) { f.fund(prov, 5_000) },
			msg:     &types.MsgBond{Provider: prov.String(), Amount: coin(0)},
			wantErr: types.ErrInvalidAmount,
		},
		{
			// a negative amount is refused
			name:    "negative amount",
			prior:   func(f *fixture) { f.fund(prov, 5_000) },
			msg:     &types.MsgBond{Provider: prov.String(), Amount: sdk.Coin{Denom: denom, Amount: sdkmath.NewInt(-5)}},
			wantErr: types.ErrInvalidAmount,
		},
		{
			// only the collateral denom is accepted
			name: "wrong denom",
			prior: func(f *fixture) {
				require.NoError(t, f.bank.Mint(f.ctx, prov, sdk.NewCoins(sdk.NewInt64Coin("uatom", 5_000))))
			},
			msg:     &types.MsgBond{Provider: prov.String(), Amount: sdk.NewInt64Coin("uatom", 1_000)},
			wantErr: types.ErrInvalidAmount,
		},
		{
			// bonding more than the account holds fails in the bank and changes nothing
			name:    "insufficient funds",
			prior:   func(f *fixture) { f.fund(prov, 999) },
			msg:     &types.MsgBond{Provider: prov.String(), Amount: coin(1_000)},
			wantErr: sdkerrors.ErrInsufficientFunds,
		},
		{
			// a malformed signer address is refused
			name:    "bad address",
			msg:     &types.MsgBond{Provider: "flops1bad", Amount: coin(1_000)},
			wantErr: types.ErrInvalidAddress,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.prior != nil {
				tc.prior(f)
			}
			f.takeEvents()
			before := f.snapshot()
			res, err := f.ms.Bond(f.ctx, tc.msg)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				f.requireUnchanged(before)
				f.requireInvariants()
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantBonded, res.Bonded.Int64())
			require.Equal(t, tc.wantBonded, f.collateral(prov).Bonded.Int64())
			require.Equal(t, tc.wantBalance, f.balance(prov).Int64())
			require.Equal(t, tc.wantModule, f.moduleBalance().Int64())
			b, _ := f.totals()
			require.Equal(t, tc.wantBonded, b.Int64())
			evs := typedEvents[*types.EventBond](t, f.takeEvents())
			require.Len(t, evs, 1)
			requireInt(t, tc.msg.Amount.Amount, evs[0].Amount)
			require.Equal(t, tc.wantBonded, evs[0].Bonded.Int64())
			f.requireInvariants()
		})
	}
}

func TestMsgUnbond(t *testing.T) {
	prov := addr("provider")
	// every case starts from 10,000 udps bonded
	for _, tc := range []struct {
		name    string
		prior   func(f *fixture)
		amount  sdk.Coin
		sender  string
		wantErr error
	}{
		{
			// an unbond creates an entry; the coins stay in the module account
			name:   "unbond part",
			amount: coin(4_000),
		},
		{
			// the whole bond can be unbonded when nothing is locked
			name:   "unbond all",
			amount: coin(10_000),
		},
		{
			// exactly the requirement may remain: 6 GPUs need 6,000
			name:   "down to the requirement",
			prior:  func(f *fixture) { require.NoError(t, f.k.LockForNode(f.ctx, prov, 6)) },
			amount: coin(4_000),
		},
		{
			// exposure exactly at the cap after the unbond is allowed: 2x 6,000 = 12,000
			name:   "exposure at the cap after",
			prior:  func(f *fixture) { require.NoError(t, f.k.AddExposure(f.ctx, prov, ints(12_000))) },
			amount: coin(4_000),
		},
		{
			// more than bonded is refused
			name:    "more than bonded",
			amount:  coin(10_001),
			wantErr: types.ErrInsufficientCollateral,
		},
		{
			// the locked GPUs' requirement must stay covered: 7 GPUs need 7,000
			name:    "below the requirement",
			prior:   func(f *fixture) { require.NoError(t, f.k.LockForNode(f.ctx, prov, 7)) },
			amount:  coin(3_001),
			wantErr: types.ErrInsufficientCollateral,
		},
		{
			// the exposure must stay within the cap after the unbond: 2x 5,999 < 12,000
			name:    "exposure over the cap after",
			prior:   func(f *fixture) { require.NoError(t, f.k.AddExposure(f.ctx, prov, ints(12_000))) },
			amount:  coin(4_001),
			wantErr: types.ErrExposureLimit,
		},
		{
			// at most max_unbonding_entries (3) entries may be open
			name: "too many entries",
			prior: func(f *fixture) {
				for range 3 {
					f.unbond(prov, 100)
				}
			},
			amount:  coin(100),
			wantErr: types.ErrTooManyUnbondings,
		},
		{
			// zero is refused
			name:    "zero amount",
			amount:  coin(0),
			wantErr: types.ErrInvalidAmount,
		},
		{
			// only the collateral denom
			name:    "wrong denom",
			amount:  sdk.NewInt64Coin("uatom", 100),
			wantErr: types.ErrInvalidAmount,
		},
		{
			// a provider that never bonded has nothing to unbond
			name:    "not bonded",
			sender:  addr("stranger").String(),
			amount:  coin(1),
			wantErr: types.ErrInsufficientCollateral,
		},
		{
			// a malformed signer address is refused
			name:    "bad address",
			sender:  "flops1bad",
			amount:  coin(1),
			wantErr: types.ErrInvalidAddress,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.bond(prov, 10_000)
			if tc.prior != nil {
				tc.prior(f)
			}
			sender := prov.String()
			if tc.sender != "" {
				sender = tc.sender
			}
			f.takeEvents()
			before := f.snapshot()
			bondedBefore := f.collateral(prov).Bonded
			moduleBefore := f.moduleBalance()
			_, unbondingBefore := f.totals()

			res, err := f.ms.Unbond(f.ctx, &types.MsgUnbond{Provider: sender, Amount: tc.amount})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				f.requireUnchanged(before)
				f.requireInvariants()
				return
			}
			require.NoError(t, err)
			wantCompletion := f.ctx.BlockTime().Add(time.Hour)
			require.True(t, res.CompletionTime.Equal(wantCompletion))
			entry, err := f.k.Unbondings.Get(f.ctx, joinKey(prov, res.UnbondingId))
			require.NoError(t, err)
			requireInt(t, tc.amount.Amount, entry.Amount)
			require.Equal(t, f.ctx.BlockHeight(), entry.CreationHeight)
			require.True(t, entry.CompletionTime.Equal(wantCompletion))
			requireInt(t, bondedBefore.Sub(tc.amount.Amount), f.collateral(prov).Bonded)
			requireInt(t, moduleBefore, f.moduleBalance(), "coins stay in the module account")
			b, u := f.totals()
			requireInt(t, f.collateral(prov).Bonded, b)
			requireInt(t, unbondingBefore.Add(tc.amount.Amount), u)
			evs := typedEvents[*types.EventUnbond](t, f.takeEvents())
			require.Len(t, evs, 1)
			require.Equal(t, res.UnbondingId, evs[0].UnbondingId)
			f.requireInvariants()
		})
	}
}

func TestMsgUnjail(t *testing.T) {
	prov := addr("provider")
	jailEnd := f0time().Add(10 * time.Minute)
	for _, tc := range []struct {
		name    string
		prior   func(f *fixture)
		at      time.Time
		sender  string
		wantErr error
	}{
		{
			// at exactly jailed_until, with the requirement covered, the provider is unjailed
			name:  "at the jail end",
			prior: func(f *fixture) { f.jail(prov, jailEnd) },
			at:    jailEnd,
		},
		{
			// after the jail end as well
			name:  "after the jail end",
			prior: func(f *fixture) { f.jail(prov, jailEnd) },
			at:    jailEnd.Add(time.Hour),
		},
		{
			// a provider that is not jailed cannot unjail
			name:    "not jailed",
			at:      jailEnd,
			wantErr: types.ErrNotJailed,
		},
		{
			// one nanosecond before the jail end is too early
			name:    "before the jail end",
			prior:   func(f *fixture) { f.jail(prov, jailEnd) },
			at:      jailEnd.Add(-time.Nanosecond),
			wantErr: types.ErrStillJailed,
		},
		{
			// a slash below the locked GPUs' requirement keeps the provider jailed:
			// 10 GPUs need 10,000, a 10% slash leaves 9,000
			name: "below the requirement",
			prior: func(f *fixture) {
				require.NoError(t, f.k.LockForNode(f.ctx, prov, 10))
				_, err := f.k.Slash(f.ctx, prov, 100_000, types.SLASH_REASON_WRONG_RESULT, types.Beneficiaries{}, types.SlashEvidence{})
				require.NoError(t, err)
				f.jail(prov, jailEnd)
			},
			at:      jailEnd,
			wantErr: types.ErrInsufficientCollateral,
		},
		{
			// a malformed signer address is refused
			name:    "bad address",
			prior:   func(f *fixture) { f.jail(prov, jailEnd) },
			at:      jailEnd,
			sender:  "flops1bad",
			wantErr: types.ErrInvalidAddress,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.bond(prov, 10_000)
			if tc.prior != nil {
				tc.prior(f)
			}
			f.at(tc.at)
			sender := prov.String()
			if tc.sender != "" {
				sender = tc.sender
			}
			f.takeEvents()
			before := f.snapshot()
			_, err := f.ms.Unjail(f.ctx, &types.MsgUnjail{Provider: sender})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				f.requireUnchanged(before)
				f.requireInvariants()
				return
			}
			require.NoError(t, err)
			jailed, err := f.k.IsJailed(f.ctx, prov)
			require.NoError(t, err)
			require.False(t, jailed)
			require.Len(t, typedEvents[*types.EventUnjail](t, f.takeEvents()), 1)
			ok, err := f.k.CanAddExposure(f.ctx, prov, ints(1))
			require.NoError(t, err)
			require.True(t, ok, "an unjailed provider can be scheduled again")
			f.requireInvariants()
		})
	}
}

// f0time is the block time of a fresh fixture.
func f0time() time.Time { return keepertestGenesisTime }

func (f *fixture) jail(a sdk.AccAddress, until time.Time) {
	f.t.Helper()
	require.NoError(f.t, f.k.Jail(f.ctx, a, until, types.SlashEvidence{NodeId: 1}))
}

// Governance cannot change collateral_denom, held or not: the module account's coins would
// no longer be accounted for, and a proposal cannot know what will be bonded when it
// executes. Other params change freely.
func TestUpdateParamsNeverChangesDenom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bonded  int64
		denom   string
		wantErr error
	}{
		// nothing held: refused all the same
		{"denom change with nothing held", 0, "ustake", types.ErrInvalidParams},
		// collateral held: refused
		{"denom change with collateral held", 1_000, "ustake", types.ErrInvalidParams},
		// collateral held, same denom: other params may change
		{"other params with collateral held", 1_000, denom, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.bonded > 0 {
				f.bond(addr("provider"), tc.bonded)
			}
			p := testParams()
			p.CollateralDenom = tc.denom
			p.MaxMaturedPerBlock = 9
			before := f.snapshot()
			_, err := f.ms.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.env.Authority, Params: p})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				f.requireUnchanged(before)
				return
			}
			require.NoError(t, err)
			require.Equal(t, uint32(9), f.mustParams().MaxMaturedPerBlock)
			f.requireInvariants()
		})
	}
}
