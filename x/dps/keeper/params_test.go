package keeper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/dps"
	"github.com/flopsnet/flops/x/dps/keeper"
	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// setupParams builds the keeper on a fresh store with default genesis and adapts it to
// the shared params suite.
func setupParams(t *testing.T) (keepertest.Env, keepertest.ParamsKeeper[types.Params]) {
	env := keepertest.NewEnv(t, types.StoreKey, dps.AppModule{})
	ak := &keepertest.AccountKeeper{}
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, ak, newFakeBank(env.StoreService), nil, nil,
		marketTake(markettypes.DefaultParams().TakeRatePpm), keepertest.Epochs{"flops"})
	require.NoError(t, k.InitGenesis(env.Ctx, types.DefaultGenesisState()))
	// genesis creates the module account
	require.Contains(t, ak.Created, types.ModuleName)

	ms := keeper.NewMsgServerImpl(k)
	qs := keeper.NewQueryServerImpl(k)
	return env, keepertest.ParamsKeeper[types.Params]{
		Update: func(ctx context.Context, authority string, p types.Params) error {
			_, err := ms.UpdateParams(ctx, &types.MsgUpdateParams{Authority: authority, Params: p})
			return err
		},
		Get: k.Params.Get,
		Query: func(ctx context.Context) (types.Params, error) {
			res, err := qs.Params(ctx, &types.QueryParamsRequest{})
			if err != nil {
				return types.Params{}, err
			}
			return res.Params, nil
		},
		InitWith: func(ctx context.Context, p types.Params) error {
			return k.InitGenesis(ctx, &types.GenesisState{Params: p})
		},
		ExportGet: func(ctx context.Context) (types.Params, error) {
			gs, err := k.ExportGenesis(ctx)
			if err != nil {
				return types.Params{}, err
			}
			return gs.Params, nil
		},
	}
}

// marketTake is x/market's take_rate_ppm.
type marketTake uint32

func (m marketTake) TakeRatePpm(context.Context) (uint32, error) { return uint32(m), nil }

// A params update whose work reward cap is not below x/market's take (5%) is refused and
// changes nothing: wash work would pay (markettypes.WashLoopLoses).
func TestParamsUpdateKeepsTheWorkCapBelowTheTake(t *testing.T) {
	env, pk := setupParams(t)
	for _, c := range []uint64{50_000, 50_001, 1_000_000} {
		p := types.DefaultParams()
		p.WorkRewardCapPpm = c
		err := pk.Update(env.Ctx, env.Authority, p)
		require.ErrorIs(t, err, types.ErrInvalidParams, "cap %d", c)
		require.ErrorContains(t, err, "raise the take first")
		got, err := pk.Get(env.Ctx)
		require.NoError(t, err)
		require.Equal(t, types.DefaultParams().WorkRewardCapPpm, got.WorkRewardCapPpm)
	}
	for _, c := range []uint64{49_999, 0} {
		p := types.DefaultParams()
		p.WorkRewardCapPpm = c
		require.NoError(t, pk.Update(env.Ctx, env.Authority, p), "cap %d", c)
	}
}

func TestParamsLifecycle(t *testing.T) {
	keepertest.RunParamsSuite(t, keepertest.ParamsHarness[types.Params, *types.Params]{
		Setup: setupParams,
		Changed: func() types.Params {
			p := types.DefaultParams()
			p.EmissionSharePpm = 100_000
			return p
		},
		Invalid: func() types.Params {
			p := types.DefaultParams()
			p.EmissionSharePpm = 2_000_000
			return p
		},
		ErrInvalidAuthority: types.ErrInvalidAuthority,
		ErrInvalidParams:    types.ErrInvalidParams,
		ParamsUpdatedEvent:  "flops.dps.v1.EventParamsUpdated",
		FollowingEpoch: func(identifier string) types.Params {
			p := types.DefaultParams()
			p.EpochIdentifier = identifier
			return p
		},
	})
}

// A genesis with invalid params is refused and stores nothing.
func TestInitGenesisRejectsInvalidParams(t *testing.T) {
	env := keepertest.NewEnv(t, types.StoreKey, dps.AppModule{})
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, newFakeBank(env.StoreService), nil, nil, nil, nil)
	gs := types.DefaultGenesisState()
	gs.Params.EmissionSharePpm = 2_000_000
	require.ErrorIs(t, k.InitGenesis(env.Ctx, gs), types.ErrInvalidParams)
	has, err := k.Params.Has(env.Ctx)
	require.NoError(t, err)
	require.False(t, has)
}
