package keeper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/testutil/keepertest"
	stakingslash "github.com/flopsnet/flops/x/staking-slash"
	"github.com/flopsnet/flops/x/staking-slash/keeper"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// LockForNode needs bonded >= (locked + gpus) * 1,000; UnlockForNode cannot release more
// than is locked. Every refusal changes nothing.
func TestLockAndUnlock(t *testing.T) {
	prov := addr("provider")
	for _, tc := range []struct {
		name       string
		bonded     int64
		ops        func(f *fixture) error // the last op's error is checked
		wantErr    error
		wantLocked uint64
	}{
		{
			// 4 GPUs need 4,000: exactly covered
			name: "lock exactly covered", bonded: 4_000,
			ops:        func(f *fixture) error { return f.k.LockForNode(f.ctx, prov, 4) },
			wantLocked: 4,
		},
		{
			// locks add up: 2 + 2 GPUs need 4,000
			name: "locks accumulate", bonded: 4_000,
			ops: func(f *fixture) error {
				require.NoError(t, f.k.LockForNode(f.ctx, prov, 2))
				return f.k.LockForNode(f.ctx, prov, 2)
			},
			wantLocked: 4,
		},
		{
			// 5 GPUs need 5,000, only 4,999 bonded
			name: "lock one udps short", bonded: 4_999,
			ops:        func(f *fixture) error { return f.k.LockForNode(f.ctx, prov, 5) },
			wantErr:    types.ErrInsufficientCollateral,
			wantLocked: 0,
		},
		{
			// the existing lock counts: 3 locked + 2 more need 5,000
			name: "existing lock counts", bonded: 4_000,
			ops: func(f *fixture) error {
				require.NoError(t, f.k.LockForNode(f.ctx, prov, 3))
				return f.k.LockForNode(f.ctx, prov, 2)
			},
			wantErr:    types.ErrInsufficientCollateral,
			wantLocked: 3,
		},
		{
			// a provider that never bonded cannot lock a GPU
			name: "nothing bonded", bonded: 0,
			ops:     func(f *fixture) error { return f.k.LockForNode(f.ctx, prov, 1) },
			wantErr: types.ErrInsufficientCollateral,
		},
		{
			// a node without GPUs (CPU-only worker) needs no collateral
			name: "zero GPUs", bonded: 0,
			ops: func(f *fixture) error { return f.k.LockForNode(f.ctx, prov, 0) },
		},
		{
			// unlock releases GPUs
			name: "unlock", bonded: 4_000,
			ops: func(f *fixture) error {
				require.NoError(t, f.k.LockForNode(f.ctx, prov, 4))
				return f.k.UnlockForNode(f.ctx, prov, 3)
			},
			wantLocked: 1,
		},
		{
			// unlocking more than is locked is refused
			name: "unlock too many", bonded: 4_000,
			ops: func(f *fixture) error {
				require.NoError(t, f.k.LockForNode(f.ctx, prov, 2))
				return f.k.UnlockForNode(f.ctx, prov, 3)
			},
			wantErr:    types.ErrInvalidRelease,
			wantLocked: 2,
		},
		{
			// a GPU count that would overflow the requirement is refused, not a panic
			name: "huge lock", bonded: 4_000,
			ops:     func(f *fixture) error { return f.k.LockForNode(f.ctx, prov, ^uint64(0)) },
			wantErr: types.ErrInsufficientCollateral,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.bonded > 0 {
				f.bond(prov, tc.bonded)
			}
			err := tc.ops(f)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tc.wantLocked, f.collateral(prov).LockedGpus)
			req, err := f.k.RequiredCollateral(f.ctx, prov)
			require.NoError(t, err)
			require.Equal(t, int64(tc.wantLocked)*1_000, req.Int64())
			f.requireInvariants()
		})
	}
}

// A refused lock changes nothing.
func TestLockRefusalChangesNothing(t *testing.T) {
	f := newFixture(t)
	prov := addr("provider")
	f.bond(prov, 1_000)
	before := f.snapshot()
	require.ErrorIs(t, f.k.LockForNode(f.ctx, prov, 2), types.ErrInsufficientCollateral)
	require.ErrorIs(t, f.k.UnlockForNode(f.ctx, prov, 1), types.ErrInvalidRelease)
	f.requireUnchanged(before)
}

// Exposure stays within floor(exposure_factor_ppm * bonded / 1e6) (2x here): AddExposure
// refuses beyond it, ReleaseExposure refuses more than is held, and CanAddExposure gives
// the same answer without writing, and false for a jailed provider.
func TestExposure(t *testing.T) {
	prov := addr("provider")
	for _, tc := range []struct {
		name         string
		bonded       int64
		prior        func(f *fixture)
		add          sdkmath.Int
		wantErr      error
		wantCan      bool
		wantExposure int64
	}{
		// within the cap of 2 x 5,000
		{name: "within the cap", bonded: 5_000, add: ints(9_999), wantCan: true, wantExposure: 9_999},
		// exactly the cap
		{name: "exactly the cap", bonded: 5_000, add: ints(10_000), wantCan: true, wantExposure: 10_000},
		// one udps over the cap
		{name: "over the cap", bonded: 5_000, add: ints(10_001), wantErr: types.ErrExposureLimit},
		{
			// what is already exposed counts
			name: "existing exposure counts", bonded: 5_000,
			prior:   func(f *fixture) { require.NoError(t, f.k.AddExposure(f.ctx, prov, ints(6_000))) },
			add:     ints(4_001),
			wantErr: types.ErrExposureLimit, wantExposure: 6_000,
		},
		{
			// the cap truncates: with a 1.5x factor, 3 udps bonded allow floor(4.5) = 4
			name: "cap truncates", bonded: 3,
			prior:   func(f *fixture) { f.setExposureFactor(1_500_000) },
			add:     ints(5),
			wantErr: types.ErrExposureLimit,
		},
		{
			// nothing bonded: no exposure at all
			name: "nothing bonded", bonded: 0, add: ints(1), wantErr: types.ErrExposureLimit,
		},
		{
			// jailed: AddExposure still follows the cap but the scheduler filter says no
			name: "jailed", bonded: 5_000,
			prior:   func(f *fixture) { f.jail(prov, f.ctx.BlockTime().Add(time.Hour)) },
			add:     ints(1),
			wantCan: false, wantExposure: 1,
		},
		{
			// a slash lowers the cap: 10% of 5,000 leaves 4,500, cap 9,000
			name: "slash lowers the cap", bonded: 5_000,
			prior: func(f *fixture) {
				_, err := f.k.Slash(f.ctx, prov, 100_000, types.SLASH_REASON_WRONG_RESULT, types.Beneficiaries{}, types.SlashEvidence{})
				require.NoError(t, err)
			},
			add:     ints(9_001),
			wantErr: types.ErrExposureLimit,
		},
		// a negative value is refused
		{name: "negative", bonded: 5_000, add: ints(-1), wantErr: types.ErrInvalidAmount},
		// zero always fits (and writes nothing)
		{name: "zero", bonded: 0, add: ints(0), wantCan: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.bonded > 0 {
				f.bond(prov, tc.bonded)
			}
			if tc.prior != nil {
				tc.prior(f)
			}
			can, canErr := f.k.CanAddExposure(f.ctx, prov, tc.add)
			before := f.snapshot()
			err := f.k.AddExposure(f.ctx, prov, tc.add)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				f.requireUnchanged(before)
				if errors.Is(tc.wantErr, types.ErrInvalidAmount) {
					require.ErrorIs(t, canErr, tc.wantErr)
				} else {
					require.NoError(t, canErr)
					require.False(t, can, "CanAddExposure agrees with AddExposure")
				}
			} else {
				require.NoError(t, err)
				require.NoError(t, canErr)
				require.Equal(t, tc.wantCan, can)
			}
			require.Equal(t, tc.wantExposure, f.collateral(prov).Exposure.Int64())
			f.requireInvariants()
		})
	}
}

// ReleaseExposure lowers the exposure and emits EventExposure; more than is held is refused.
func TestReleaseExposure(t *testing.T) {
	f := newFixture(t)
	prov := addr("provider")
	f.bond(prov, 5_000)
	require.NoError(t, f.k.AddExposure(f.ctx, prov, ints(3_000)))
	f.takeEvents()
	require.NoError(t, f.k.ReleaseExposure(f.ctx, prov, ints(1_000)))
	evs := typedEvents[*types.EventExposure](t, f.takeEvents())
	require.Len(t, evs, 1)
	require.Equal(t, int64(2_000), evs[0].Exposure.Int64())
	before := f.snapshot()
	require.ErrorIs(t, f.k.ReleaseExposure(f.ctx, prov, ints(2_001)), types.ErrInvalidRelease)
	require.ErrorIs(t, f.k.ReleaseExposure(f.ctx, prov, ints(-1)), types.ErrInvalidAmount)
	f.requireUnchanged(before)
	require.NoError(t, f.k.ReleaseExposure(f.ctx, prov, ints(2_000)))
	require.True(t, f.collateral(prov).Exposure.IsZero())
}

// Jail sets jailed and keeps the later of the old and new jail ends, emits EventJail and
// calls the AfterJailed hook with the end in force.
func TestJail(t *testing.T) {
	f := newFixture(t)
	prov := addr("provider")
	f.bond(prov, 1_000)
	t0 := f.ctx.BlockTime()
	for i, tc := range []struct {
		until     time.Time
		wantUntil time.Time
	}{
		// a first jailing sets the end
		{t0.Add(time.Hour), t0.Add(time.Hour)},
		// a later end extends the jail
		{t0.Add(3 * time.Hour), t0.Add(3 * time.Hour)},
		// an earlier end does not shorten it
		{t0.Add(2 * time.Hour), t0.Add(3 * time.Hour)},
	} {
		f.takeEvents()
		ev := types.SlashEvidence{NodeId: uint64(i + 1)}
		require.NoError(t, f.k.Jail(f.ctx, prov, tc.until, ev))
		jailed, err := f.k.IsJailed(f.ctx, prov)
		require.NoError(t, err)
		require.True(t, jailed)
		require.True(t, f.collateral(prov).JailedUntil.Equal(tc.wantUntil), "case %d", i)
		evs := typedEvents[*types.EventJail](t, f.takeEvents())
		require.Len(t, evs, 1)
		require.True(t, evs[0].Until.Equal(tc.wantUntil))
		call := f.hooks.jailed[len(f.hooks.jailed)-1]
		require.Equal(t, prov, call.provider)
		require.True(t, call.until.Equal(tc.wantUntil))
		require.Equal(t, ev, call.evidence)
	}
	require.Len(t, f.hooks.jailed, 3)

	// a provider that never bonded can be jailed too (its record is created)
	other := addr("other")
	require.NoError(t, f.k.Jail(f.ctx, other, t0.Add(time.Hour), types.SlashEvidence{}))
	jailed, err := f.k.IsJailed(f.ctx, other)
	require.NoError(t, err)
	require.True(t, jailed)
	f.requireInvariants()
}

// Hooks set on the keeper after it was copied (into the msg server, the module, other
// keepers) are seen by every copy; setting them twice, or nil, is a wiring error.
func TestHooksOnCopies(t *testing.T) {
	env := keepertest.NewEnv(t, types.StoreKey, stakingslash.AppModule{})
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, newFakeBank(env.StoreService))
	require.NoError(t, k.InitGenesis(env.Ctx, &types.GenesisState{Params: testParams()}))
	copied := k
	ms := keeper.NewMsgServerImpl(k)

	h := &recordingHooks{}
	k.SetHooks(h)
	prov := addr("provider")
	require.NoError(t, copied.Jail(env.Ctx, prov, env.Ctx.BlockTime(), types.SlashEvidence{}))
	require.Len(t, h.jailed, 1, "a copy made before SetHooks calls the hooks")
	_, err := copied.Slash(env.Ctx, prov, 1, types.SLASH_REASON_WRONG_POCP, types.Beneficiaries{}, types.SlashEvidence{})
	require.NoError(t, err)
	require.Len(t, h.slashed, 1)
	_, err = ms.Unjail(env.Ctx, &types.MsgUnjail{Provider: prov.String()})
	require.NoError(t, err)

	require.Panics(t, func() { copied.SetHooks(&recordingHooks{}) })
	require.Panics(t, func() {
		keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, nil).SetHooks(nil)
	})
}

func (f *fixture) setExposureFactor(ppm uint64) {
	f.t.Helper()
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(f.t, err)
	p.ExposureFactorPpm = ppm
	require.NoError(f.t, f.k.Params.Set(f.ctx, p))
}
