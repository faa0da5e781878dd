package app

import (
	"context"
	"fmt"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	upgradetypes "github.com/cosmos/cosmos-sdk/x/upgrade/types"
)

// Upgrade is one named software upgrade: its store changes and its migration handler.
type Upgrade struct {
	Name          string
	StoreUpgrades storetypes.StoreUpgrades
	// Handler runs the migrations; nil means "run the module migrations and nothing else".
	Handler func(ctx context.Context, plan upgradetypes.Plan, vm module.VersionMap) (module.VersionMap, error)
}

// Upgrades lists every upgrade this binary knows, oldest first. A governance
// MsgSoftwareUpgrade names one of them.
var Upgrades []Upgrade

// setUpgradeHandlers registers the handlers of Upgrades and, when this binary starts at
// the height of a planned upgrade, the store loader that applies its store changes.
func (app *App) setUpgradeHandlers() {
	for _, u := range Upgrades {
		handler := u.Handler
		if handler == nil {
			handler = func(ctx context.Context, _ upgradetypes.Plan, vm module.VersionMap) (module.VersionMap, error) {
				return app.ModuleManager.RunMigrations(ctx, app.configurator, vm)
			}
		}
		app.UpgradeKeeper.SetUpgradeHandler(u.Name, handler)
	}

	plan, err := app.UpgradeKeeper.ReadUpgradeInfoFromDisk()
	if err != nil {
		panic(fmt.Errorf("failed to read upgrade info from disk: %w", err))
	}
	if app.UpgradeKeeper.IsSkipHeight(plan.Height) {
		return
	}
	for _, u := range Upgrades {
		if plan.Name == u.Name {
			app.SetStoreLoader(upgradetypes.UpgradeStoreLoader(plan.Height, &u.StoreUpgrades))
		}
	}
}
