// Package simulation is x/staking-slash in the app's simulations (app/sim_test.go):
// random genesis params and message factories that bond, unbond and unjail as providers
// do, plus governance param changes within bounds.
package simulation

import (
	"context"
	"time"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/x/staking-slash/keeper"
	"github.com/flopsnet/flops/x/staking-slash/types"
)

// RandomParams are valid params drawn around the defaults: short unbonding (so that
// entries mature within a simulation), a range of collateral per GPU, exposure factor,
// compensation and reward shares.
func RandomParams(s *module.SimulationState) types.Params {
	r := s.Rand
	p := types.DefaultParams()
	p.CollateralDenom = s.BondDenom
	p.MinCollateralPerGpu = sdkmath.NewInt(int64(1+r.Intn(200)) * 1_000_000)
	p.ExposureFactorPpm = uint64(200_000 + r.Intn(4_800_000))
	p.UnbondingTime = time.Duration(1+r.Intn(60)) * time.Minute
	p.MaxUnbondingEntries = uint32(1 + r.Intn(7))
	p.MaxMaturedPerBlock = uint32(1 + r.Intn(100))
	p.CompensationPpm = uint32(r.Intn(600_001))
	p.RewardPpm = uint32(r.Intn(int(1_000_000 - p.CompensationPpm + 1)))
	return p
}

// RandomizedGenState writes the module's random genesis.
func RandomizedGenState(s *module.SimulationState) {
	gs := types.DefaultGenesisState()
	gs.Params = RandomParams(s)
	s.GenState[types.ModuleName] = s.Cdc.MustMarshalJSON(gs)
}

// MsgBondFactory bonds part of a random account's liquid udps.
func MsgBondFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgBond] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgBond) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		from := data.AnyAccount(reporter, simsx.WithDenomBalance(p.CollateralDenom))
		amount := from.LiquidBalance().RandSubsetCoin(reporter, p.CollateralDenom)
		if reporter.IsSkipped() {
			return nil, nil
		}
		return []simsx.SimAccount{from}, &types.MsgBond{Provider: from.AddressBech32, Amount: amount}
	}
}

// MsgUnbondFactory unbonds what a provider may: its bonded collateral less what its
// locked GPUs require and what its exposure needs under the cap.
func MsgUnbondFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgUnbond] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUnbond) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		from := data.AnyAccount(reporter, bonded(ctx, k))
		if reporter.IsSkipped() {
			return nil, nil
		}
		c, err := k.GetCollateral(ctx, from.Address)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		free := Unbondable(p, c)
		if !free.IsPositive() {
			reporter.Skip("nothing unbondable")
			return nil, nil
		}
		amount := sdkmath.NewInt(1 + data.Rand().Int63n(free.Int64()))
		if n, err := k.CountUnbondings(ctx, from.Address); err != nil || n >= uint64(p.MaxUnbondingEntries) {
			reporter.Skip("unbonding entries full")
			return nil, nil
		}
		return []simsx.SimAccount{from}, &types.MsgUnbond{Provider: from.AddressBech32, Amount: sdk.NewCoin(p.CollateralDenom, amount)}
	}
}

// Unbondable is how much of c may be unbonded under p (0 when nothing).
func Unbondable(p types.Params, c types.Collateral) sdkmath.Int {
	required := p.MinCollateralPerGpu.MulRaw(int64(c.LockedGpus))
	// the exposure must stay under bonded * factor: bonded >= exposure * 1e6 / factor
	forExposure := c.Exposure.MulRaw(1_000_000).AddRaw(int64(p.ExposureFactorPpm) - 1).QuoRaw(int64(p.ExposureFactorPpm))
	keep := sdkmath.MaxInt(required, forExposure)
	free := c.Bonded.Sub(keep)
	if free.IsNegative() || !free.IsInt64() {
		return sdkmath.ZeroInt()
	}
	return free
}

// MsgUnjailFactory unjails a provider whose term is over.
func MsgUnjailFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgUnjail] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUnjail) {
		now := sdk.UnwrapSDKContext(ctx).BlockTime()
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		from := data.AnyAccount(reporter, simsx.SimAccountFilterFn(func(a simsx.SimAccount) bool {
			c, err := k.GetCollateral(ctx, a.Address)
			return err == nil && c.Jailed && !now.Before(c.JailedUntil) && c.Bonded.GTE(p.MinCollateralPerGpu.MulRaw(int64(c.LockedGpus)))
		}))
		if reporter.IsSkipped() {
			return nil, nil
		}
		return []simsx.SimAccount{from}, &types.MsgUnjail{Provider: from.AddressBech32}
	}
}

// MsgUpdateParamsFactory is a governance proposal setting random valid params.
func MsgUpdateParamsFactory() simsx.SimMsgFactoryFn[*types.MsgUpdateParams] {
	return func(_ context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUpdateParams) {
		s := &module.SimulationState{Rand: data.Rand().Rand, BondDenom: sdk.DefaultBondDenom}
		return nil, &types.MsgUpdateParams{Authority: data.ModuleAccountAddress(reporter, "gov"), Params: RandomParams(s)}
	}
}

func bonded(ctx context.Context, k keeper.Keeper) simsx.SimAccountFilter {
	return simsx.SimAccountFilterFn(func(a simsx.SimAccount) bool {
		c, err := k.GetCollateral(ctx, a.Address)
		return err == nil && c.Bonded.IsPositive()
	})
}
