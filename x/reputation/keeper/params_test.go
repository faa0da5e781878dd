package keeper_test

import (
	"context"
	"testing"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/reputation"
	"github.com/flopsnet/flops/x/reputation/keeper"
	"github.com/flopsnet/flops/x/reputation/types"
)

// setupParams builds the keeper on a fresh store with default genesis and adapts it to
// the shared params suite.
func setupParams(t *testing.T) (keepertest.Env, keepertest.ParamsKeeper[types.Params]) {
	env := keepertest.NewEnv(t, types.StoreKey, reputation.AppModule{})
	ak := &keepertest.AccountKeeper{}
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, ak, &fakeGFL{}, keepertest.Epochs{"flops"})
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
			gs := types.DefaultGenesisState()
			gs.Params = p
			return k.InitGenesis(ctx, gs)
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

func TestParamsLifecycle(t *testing.T) {
	keepertest.RunParamsSuite(t, keepertest.ParamsHarness[types.Params, *types.Params]{
		Setup: setupParams,
		Changed: func() types.Params {
			p := types.DefaultParams()
			p.MinScore = sdkmath.LegacyNewDecWithPrec(35, 2)
			p.HistoryLength = 10
			return p
		},
		Invalid: func() types.Params {
			p := types.DefaultParams()
			p.Alpha = sdkmath.LegacyNewDec(2)
			return p
		},
		ErrInvalidAuthority: types.ErrInvalidAuthority,
		ErrInvalidParams:    types.ErrInvalidParams,
		ParamsUpdatedEvent:  "flops.reputation.v1.EventParamsUpdated",
		FollowingEpoch: func(identifier string) types.Params {
			p := types.DefaultParams()
			p.EpochIdentifier = identifier
			return p
		},
	})
}

// A genesis with invalid params is refused and stores nothing.
func TestInitGenesisRejectsInvalidParams(t *testing.T) {
	env := keepertest.NewEnv(t, types.StoreKey, reputation.AppModule{})
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, &fakeGFL{}, nil)
	gs := types.DefaultGenesisState()
	gs.Params.Alpha = sdkmath.LegacyNewDec(2)
	require.ErrorIs(t, k.InitGenesis(env.Ctx, gs), types.ErrInvalidParams)
	has, err := k.Params.Has(env.Ctx)
	require.NoError(t, err)
	require.False(t, has)
}

// Only the authority changes params: anyone else gets ErrInvalidAuthority naming both
// addresses, even with valid params, and nothing is stored or announced.
func TestUpdateParamsRejectsNonAuthority(t *testing.T) {
	f := newFixture(t)
	before, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	p := types.DefaultParams()
	p.MinScore = sdkmath.LegacyNewDecWithPrec(9, 1)
	for _, signer := range []string{operator("mallory"), "", "not-an-address"} {
		_, err := f.ms.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: signer, Params: p})
		require.ErrorIs(t, err, types.ErrInvalidAuthority)
		require.Contains(t, err.Error(), f.env.Authority)
	}
	after, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, before.String(), after.String())
	require.Empty(t, typedEvents[*types.EventParamsUpdated](t, f.ctx))
}
