package keeper_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/market"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// setupParams builds the keeper on a fresh store with default genesis and adapts it to
// the shared params suite.
func setupParams(t *testing.T) (keepertest.Env, keepertest.ParamsKeeper[types.Params]) {
	env := keepertest.NewEnv(t, types.StoreKey, market.AppModule{})
	ak := &keepertest.AccountKeeper{}
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.TransientService, env.AddressCodec, env.Authority, ak, keepertest.NewBank(), nil, nil, "fee_collector", "dps")
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
			p.TakeRatePpm = 20_000
			return p
		},
		Invalid: func() types.Params {
			p := types.DefaultParams()
			p.TakeRatePpm = 2_000_000
			return p
		},
		ErrInvalidAuthority: types.ErrInvalidAuthority,
		ErrInvalidParams:    types.ErrInvalidParams,
		ParamsUpdatedEvent:  "flops.market.v1.EventParamsUpdated",
	})
}

// workCap is x/dps's work_reward_cap_ppm, with AllWorkCounts's rule of whose work counts.
type workCap struct {
	types.AllWorkCounts
	ppm uint64
}

func (w workCap) WorkRewardCapPpm(context.Context) (uint64, error) { return w.ppm, nil }

// A params update whose take is not above x/dps's work reward cap (4%) is refused and
// changes nothing: wash work would pay (types.WashLoopLoses).
func TestParamsUpdateKeepsTheTakeAboveTheWorkCap(t *testing.T) {
	env := keepertest.NewEnv(t, types.StoreKey, market.AppModule{})
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.TransientService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, keepertest.NewBank(), nil, nil, "fee_collector", "dps")
	k.SetWorkRules(workCap{ppm: 40_000})
	require.NoError(t, k.InitGenesis(env.Ctx, types.DefaultGenesisState()))
	ms := keeper.NewMsgServerImpl(k)
	for _, take := range []uint32{40_000, 39_999, 0} {
		p := types.DefaultParams()
		p.TakeRatePpm = take
		_, err := ms.UpdateParams(env.Ctx, &types.MsgUpdateParams{Authority: env.Authority, Params: p})
		require.ErrorIs(t, err, types.ErrInvalidParams, "take %d", take)
		require.ErrorContains(t, err, "lower the cap first")
		got, err := k.Params.Get(env.Ctx)
		require.NoError(t, err)
		require.Equal(t, types.DefaultParams().TakeRatePpm, got.TakeRatePpm)
	}
	p := types.DefaultParams()
	p.TakeRatePpm = 40_001
	_, err := ms.UpdateParams(env.Ctx, &types.MsgUpdateParams{Authority: env.Authority, Params: p})
	require.NoError(t, err)
}

// A genesis with invalid params is refused and stores nothing.
func TestInitGenesisRejectsInvalidParams(t *testing.T) {
	env := keepertest.NewEnv(t, types.StoreKey, market.AppModule{})
	k := keeper.NewKeeper(env.Codec, env.StoreService, env.TransientService, env.AddressCodec, env.Authority, &keepertest.AccountKeeper{}, keepertest.NewBank(), nil, nil, "fee_collector", "dps")
	gs := types.DefaultGenesisState()
	gs.Params.TakeRatePpm = 2_000_000
	require.ErrorIs(t, k.InitGenesis(env.Ctx, gs), types.ErrInvalidParams)
	has, err := k.Params.Has(env.Ctx)
	require.NoError(t, err)
	require.False(t, has)
}

// Governance cannot strand the escrow by changing the market denom: a params update that
// names another denom is refused and changes nothing, escrow held or not.
func TestGovernanceCannotStrandEscrowByChangingDenom(t *testing.T) {
	env, pk := setupParams(t)
	// every coin of the params in the new denom, so that only the change itself is wrong
	raw, err := json.Marshal(types.DefaultParams())
	require.NoError(t, err)
	var p types.Params
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(string(raw), `"udps"`, `"uatom"`)), &p))
	require.NoError(t, p.Validate())
	err = pk.Update(env.Ctx, env.Authority, p)
	require.ErrorIs(t, err, types.ErrInvalidParams)
	require.Contains(t, err.Error(), "denom udps -> uatom")
	got, err := pk.Get(env.Ctx)
	require.NoError(t, err)
	require.Equal(t, types.DefaultParams().Denom, got.Denom)
}
