package keeper_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/gfl"
	"github.com/flopsnet/flops/x/gfl/keeper"
	"github.com/flopsnet/flops/x/gfl/types"
)

// setupParams builds the keeper on a fresh store with default genesis and adapts it to
// the shared params suite.
func setupParams(t *testing.T) (keepertest.Env, keepertest.ParamsKeeper[types.Params]) {
	env := keepertest.NewEnv(t, types.StoreKey, gfl.AppModule{})
	ak := &keepertest.AccountKeeper{}
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, ak, keepertest.NewBank(), newCollateral(), proposers{}, keepertest.Epochs{"flops"})
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

func TestParamsLifecycle(t *testing.T) {
	keepertest.RunParamsSuite(t, keepertest.ParamsHarness[types.Params, *types.Params]{
		Setup: setupParams,
		Changed: func() types.Params {
			p := types.DefaultParams()
			p.ChallengeSamples = 16
			return p
		},
		Invalid: func() types.Params {
			p := types.DefaultParams()
			p.ChallengeSamples = 0
			return p
		},
		ErrInvalidAuthority: types.ErrInvalidAuthority,
		ErrInvalidParams:    types.ErrInvalidParams,
		ParamsUpdatedEvent:  "flops.gfl.v1.EventParamsUpdated",
		FollowingEpoch: func(identifier string) types.Params {
			p := types.DefaultParams()
			p.EpochIdentifier = identifier
			return p
		},
	})
}

// A genesis with invalid params is refused and stores nothing.
func TestInitGenesisRejectsInvalidParams(t *testing.T) {
	env := keepertest.NewEnv(t, types.StoreKey, gfl.AppModule{})
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, keepertest.NewBank(), newCollateral(), proposers{}, nil)
	gs := types.DefaultGenesisState()
	gs.Params.ChallengeSamples = 0
	require.ErrorIs(t, k.InitGenesis(env.Ctx, gs), types.ErrInvalidParams)
	has, err := k.Params.Has(env.Ctx)
	require.NoError(t, err)
	require.False(t, has)
}
