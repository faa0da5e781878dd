package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// InitGenesis stores a validated genesis state, rebuilds the running totals from the
// records, and checks that the module account (funded by x/bank's genesis, which runs
// first) holds exactly the bonded plus the unbonding collateral.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(); err != nil {
		return err
	}
	// Creates the module account on a fresh chain.
	k.accountKeeper.GetModuleAccount(ctx, types.ModuleName)
	if err := k.Params.Set(ctx, gs.Params); err != nil {
		return err
	}

	bonded := sdkmath.ZeroInt()
	for _, c := range gs.Collaterals {
		addr, err := k.providerAddress(c.Provider)
		if err != nil {
			return err
		}
		if c.Provider, err = k.addressString(addr); err != nil {
			return err
		}
		if err := k.Collaterals.Set(ctx, addr, c); err != nil {
			return err
		}
		bonded = bonded.Add(c.Bonded)
	}
	unbonding := sdkmath.ZeroInt()
	for _, e := range gs.Unbondings {
		addr, err := k.providerAddress(e.Provider)
		if err != nil {
			return err
		}
		if e.Provider, err = k.addressString(addr); err != nil {
			return err
		}
		if err := k.Unbondings.Set(ctx, collections.Join(addr, e.Id), e); err != nil {
			return err
		}
		unbonding = unbonding.Add(e.Amount)
	}
	for _, s := range gs.Slashes {
		addr, err := k.providerAddress(s.Provider)
		if err != nil {
			return err
		}
		if err := k.Slashes.Set(ctx, collections.Join(addr, s.Id), s); err != nil {
			return err
		}
		if err := k.SlashExpiry.Set(ctx, collections.Join3(s.Height+int64(gs.Params.SlashRetentionBlocks), sdk.AccAddress(addr), s.Id)); err != nil {
			return err
		}
	}
	if err := k.UnbondingSeq.Set(ctx, gs.NextUnbondingId); err != nil {
		return err
	}
	if err := k.SlashSeq.Set(ctx, gs.NextSlashId); err != nil {
		return err
	}
	if err := k.TotalBonded.Set(ctx, bonded); err != nil {
		return err
	}
	if err := k.TotalUnbonding.Set(ctx, unbonding); err != nil {
		return err
	}

	want := bonded.Add(unbonding)
	if err := k.Retries.Import(ctx, gs.Retries); err != nil {
		return err
	}
	have := k.bankKeeper.GetBalance(ctx, k.ModuleAddress(), gs.Params.CollateralDenom)
	if !have.Amount.Equal(want) {
		return errorsmod.Wrapf(types.ErrInvalidGenesis,
			"module account %s holds %s, collateral bonded %s + unbonding %s = %s%s",
			k.ModuleAddress(), have, bonded, unbonding, want, gs.Params.CollateralDenom)
	}
	return nil
}

func (k Keeper) providerAddress(s string) (sdk.AccAddress, error) {
	bz, err := k.addressCodec.StringToBytes(s)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidGenesis, "provider %q: %s", s, err)
	}
	return bz, nil
}

// ExportGenesis returns the whole module state.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	gs := &types.GenesisState{Params: p}
	if err := k.Collaterals.Walk(ctx, nil, func(_ sdk.AccAddress, c types.Collateral) (bool, error) {
		gs.Collaterals = append(gs.Collaterals, c)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Unbondings.Walk(ctx, nil, func(_ UnbondingKey, e types.UnbondingEntry) (bool, error) {
		gs.Unbondings = append(gs.Unbondings, e)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Slashes.Walk(ctx, nil, func(_ collections.Pair[sdk.AccAddress, uint64], s types.SlashRecord) (bool, error) {
		gs.Slashes = append(gs.Slashes, s)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if gs.NextUnbondingId, err = k.UnbondingSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.NextSlashId, err = k.SlashSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.Retries, err = k.Retries.Export(ctx); err != nil {
		return nil, err
	}
	return gs, nil
}
