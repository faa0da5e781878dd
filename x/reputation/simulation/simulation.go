// Package simulation is x/reputation in the app's simulations (app/sim_test.go): random
// genesis params and governance's changes to them, within the bounds Params.Validate sets.
package simulation

import (
	"context"
	"fmt"
	"math/rand" // nolint:determinism // simulation only: the simulator's seeded *rand.Rand draws the operations, never in the state machine

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/x/reputation/types"
)

// RandomParams are valid params: the score's weights (summing to 1), the initial and
// minimum scores, the idle decay, the per-block update bound and the history kept.
func RandomParams(r *rand.Rand) types.Params {
	p := types.DefaultParams()
	a, b := r.Intn(1001), r.Intn(1001)
	if a+b > 1000 {
		a, b = 1000-a, 1000-b
	}
	p.Alpha = sdkmath.LegacyNewDecWithPrec(int64(a), 3)
	p.Beta = sdkmath.LegacyNewDecWithPrec(int64(b), 3)
	p.Gamma = sdkmath.LegacyOneDec().Sub(p.Alpha).Sub(p.Beta)
	p.InitialScore = sdkmath.LegacyNewDecWithPrec(int64(r.Intn(1001)), 3)
	p.MinScore = sdkmath.LegacyNewDecWithPrec(int64(r.Intn(1001)), 3)
	if p.MinScore.GT(p.InitialScore) { // Validate refuses it: no new node would ever work
		p.MinScore, p.InitialScore = p.InitialScore, p.MinScore
	}
	p.IdleDecay = sdkmath.LegacyNewDecWithPrec(int64(r.Intn(1001)), 3)
	p.MaxUpdatesPerBlock = uint32(1 + r.Intn(200))
	p.HistoryLength = uint32(1 + r.Intn(100))
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("reputation simulation params: %v", err))
	}
	return p
}

// RandomizedGenState writes the module's genesis with random params.
func RandomizedGenState(s *module.SimulationState) {
	gs := types.DefaultGenesisState()
	gs.Params = RandomParams(s.Rand)
	s.GenState[types.ModuleName] = s.Cdc.MustMarshalJSON(gs)
}

// MsgUpdateParamsFactory is governance changing the params (a proposal the simulation
// votes through).
func MsgUpdateParamsFactory() simsx.SimMsgFactoryFn[*types.MsgUpdateParams] {
	return func(_ context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUpdateParams) {
		return nil, &types.MsgUpdateParams{Authority: data.ModuleAccountAddress(reporter, "gov"), Params: RandomParams(data.Rand().Rand)}
	}
}
