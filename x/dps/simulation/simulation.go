// Package simulation is x/dps in the app's simulations (app/sim_test.go): random genesis
// params and governance's changes to them, within the bounds Params.Validate sets.
package simulation

import (
	"context"
	"fmt"
	"math/rand" // nolint:determinism // simulation only: the simulator's seeded *rand.Rand draws the operations, never in the state machine
	"time"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// RandomParams are valid params drawn around the defaults: emission and availability
// shares, the DPS per GFL-epoch, the halving, the work reward cap, the workload weights,
// the per-block payout bound and the availability ask cap.
func RandomParams(r *rand.Rand) types.Params {
	p := types.DefaultParams()
	p.EmissionSharePpm = uint32(r.Intn(1_000_001))
	p.AvailabilitySharePpm = uint32(r.Intn(1_000_001))
	p.DpsPerGfl = sdkmath.LegacyNewDecWithPrec(int64(1+r.Intn(10_000)), 4) // 0.0001 to 1
	p.HalvingPeriod = time.Duration(1+r.Intn(365*24)) * time.Hour
	p.HalvingThreshold = sdkmath.NewInt(int64(1 + r.Intn(1_000_000_000)))
	// below x/market's take, which the simulations keep at its default (WashLoopLoses)
	p.WorkRewardCapPpm = uint64(r.Intn(int(markettypes.DefaultParams().TakeRatePpm)))
	p.MaxPayoutsPerBlock = uint32(1 + r.Intn(200))
	p.DistributionRetentionEpochs = uint32(1 + r.Intn(500))
	// the ask cap is drawn from the values above, not from r: a draw from r would move
	// every later draw of the simulation's stream, and with it what each seed reaches
	c := rand.New(rand.NewSource(int64(p.DistributionRetentionEpochs)<<8 | int64(p.MaxPayoutsPerBlock)))
	p.AvailabilityAskCapPpm = 0 // one run in four without the cap
	if c.Intn(4) > 0 {
		p.AvailabilityAskCapPpm = uint64(1_000_000 + c.Intn(9_000_001)) // 1x to 10x
	}
	for i := range p.WorkloadWeights {
		p.WorkloadWeights[i].WeightPpm = uint32(1 + r.Intn(2_000_000))
	}
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("dps simulation params: %v", err))
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
