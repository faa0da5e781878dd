package app

import (
	"encoding/json"
	"fmt"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

// ExportAppStateAndValidators exports the whole state as a genesis; with forZeroHeight the
// state is prepared to restart a new chain at height 0 (rewards withdrawn, heights reset).
func (app *App) ExportAppStateAndValidators(forZeroHeight bool, jailAllowedAddrs, modulesToExport []string) (servertypes.ExportedApp, error) {
	ctx := app.NewContextLegacy(true, cmtproto.Header{Height: app.LastBlockHeight()})

	// CometBFT starts InitChain at the last height + 1.
	height := app.LastBlockHeight() + 1
	if forZeroHeight {
		height = 0
		if err := app.prepForZeroHeightGenesis(ctx, jailAllowedAddrs); err != nil {
			return servertypes.ExportedApp{}, err
		}
	}

	genState, err := app.ModuleManager.ExportGenesisForModules(ctx, app.appCodec, modulesToExport)
	if err != nil {
		return servertypes.ExportedApp{}, err
	}
	appState, err := json.MarshalIndent(genState, "", "  ")
	if err != nil {
		return servertypes.ExportedApp{}, err
	}
	validators, err := staking.WriteValidators(ctx, app.StakingKeeper)
	return servertypes.ExportedApp{
		AppState:        appState,
		Validators:      validators,
		Height:          height,
		ConsensusParams: app.GetConsensusParams(ctx),
	}, err
}

// prepForZeroHeightGenesis settles distribution and resets staking and slashing heights so
// that the exported state starts cleanly at height 0.
func (app *App) prepForZeroHeightGenesis(ctx sdk.Context, jailAllowedAddrs []string) error {
	allowed := make(map[string]bool, len(jailAllowedAddrs))
	for _, addr := range jailAllowedAddrs {
		if _, err := sdk.ValAddressFromBech32(addr); err != nil {
			return fmt.Errorf("jail allowed address %q: %w", addr, err)
		}
		allowed[addr] = true
	}

	valCodec := app.StakingKeeper.ValidatorAddressCodec()
	// Withdraw all validator commission and delegator rewards.
	err := app.StakingKeeper.IterateValidators(ctx, func(_ int64, val stakingtypes.ValidatorI) bool {
		bz, err := valCodec.StringToBytes(val.GetOperator())
		if err == nil {
			_, _ = app.DistrKeeper.WithdrawValidatorCommission(ctx, bz)
		}
		return false
	})
	if err != nil {
		return err
	}
	dels, err := app.StakingKeeper.GetAllDelegations(ctx)
	if err != nil {
		return err
	}
	for _, d := range dels {
		valAddr, err := sdk.ValAddressFromBech32(d.ValidatorAddress)
		if err != nil {
			return err
		}
		delAddr := sdk.MustAccAddressFromBech32(d.DelegatorAddress)
		_, _ = app.DistrKeeper.WithdrawDelegationRewards(ctx, delAddr, valAddr)
	}
	app.DistrKeeper.DeleteAllValidatorSlashEvents(ctx)
	app.DistrKeeper.DeleteAllValidatorHistoricalRewards(ctx)

	height := ctx.BlockHeight()
	ctx = ctx.WithBlockHeight(0)
	err = app.StakingKeeper.IterateValidators(ctx, func(_ int64, val stakingtypes.ValidatorI) bool {
		valBz, err := valCodec.StringToBytes(val.GetOperator())
		if err != nil {
			return true
		}
		// Donate unwithdrawn reward dust to the community pool.
		scraps, err := app.DistrKeeper.GetValidatorOutstandingRewardsCoins(ctx, valBz)
		if err != nil {
			return true
		}
		feePool, err := app.DistrKeeper.FeePool.Get(ctx)
		if err != nil {
			return true
		}
		feePool.CommunityPool = feePool.CommunityPool.Add(scraps...)
		if err := app.DistrKeeper.FeePool.Set(ctx, feePool); err != nil {
			return true
		}
		_ = app.DistrKeeper.Hooks().AfterValidatorCreated(ctx, valBz)
		return false
	})
	if err != nil {
		return err
	}
	for _, d := range dels {
		valAddr, err := sdk.ValAddressFromBech32(d.ValidatorAddress)
		if err != nil {
			return err
		}
		delAddr := sdk.MustAccAddressFromBech32(d.DelegatorAddress)
		if err := app.DistrKeeper.Hooks().BeforeDelegationCreated(ctx, delAddr, valAddr); err != nil {
			return err
		}
		if err := app.DistrKeeper.Hooks().AfterDelegationModified(ctx, delAddr, valAddr); err != nil {
			return err
		}
	}
	ctx = ctx.WithBlockHeight(height)

	if err := app.StakingKeeper.IterateRedelegations(ctx, func(_ int64, red stakingtypes.Redelegation) bool {
		for i := range red.Entries {
			red.Entries[i].CreationHeight = 0
		}
		_ = app.StakingKeeper.SetRedelegation(ctx, red)
		return false
	}); err != nil {
		return err
	}
	if err := app.StakingKeeper.IterateUnbondingDelegations(ctx, func(_ int64, ubd stakingtypes.UnbondingDelegation) bool {
		for i := range ubd.Entries {
			ubd.Entries[i].CreationHeight = 0
		}
		_ = app.StakingKeeper.SetUnbondingDelegation(ctx, ubd)
		return false
	}); err != nil {
		return err
	}

	// Reset validators' unbonding heights and jail those not allowed.
	kvStore := ctx.KVStore(app.keys[stakingtypes.StoreKey])
	iter := storetypes.KVStoreReversePrefixIterator(kvStore, stakingtypes.ValidatorsKey)
	var addrs []sdk.ValAddress
	for ; iter.Valid(); iter.Next() {
		addrs = append(addrs, stakingtypes.AddressFromValidatorsKey(iter.Key()))
	}
	if err := iter.Close(); err != nil {
		return err
	}
	for _, addr := range addrs {
		validator, err := app.StakingKeeper.GetValidator(ctx, addr)
		if err != nil {
			return fmt.Errorf("validator %s: %w", addr, err)
		}
		validator.UnbondingHeight = 0
		if len(allowed) > 0 && !allowed[addr.String()] {
			validator.Jailed = true
		}
		if err := app.StakingKeeper.SetValidator(ctx, validator); err != nil {
			return err
		}
	}
	if _, err := app.StakingKeeper.ApplyAndReturnValidatorSetUpdates(ctx); err != nil {
		return err
	}

	return app.SlashingKeeper.IterateValidatorSigningInfos(ctx, func(addr sdk.ConsAddress, info slashingtypes.ValidatorSigningInfo) bool {
		info.StartHeight = 0
		_ = app.SlashingKeeper.SetValidatorSigningInfo(ctx, addr, info)
		return false
	})
}
