package app

import (
	"fmt"
	"sort"
	"strings"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/invariant"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// invariantModule is a flops module with accounting invariants.
type invariantModule interface {
	RegisterInvariants(reg invariant.Registrar)
}

// registerInvariants collects the invariants of every module that has some, in module
// manager order (sorted by the order of genesis init, which is deterministic).
func (app *App) registerInvariants() {
	for _, name := range app.ModuleManager.OrderInitGenesis {
		if m, ok := app.ModuleManager.Modules[name].(invariantModule); ok {
			m.RegisterInvariants(app.Invariants)
		}
	}
}

// registerCrossInvariants adds the invariants that read more than one module.
func (app *App) registerCrossInvariants() {
	app.Invariants.Register(markettypes.ModuleName, "exposure", app.exposureInvariant)
}

// exposureInvariant: every provider's exposure in x/staking-slash is exactly what x/market
// holds for it (its tasks in flight, its failure reports waiting for confirmation, its
// pool claims), so that no slash can be dodged by exposure released early and no
// collateral stays locked by exposure nobody holds.
func (app *App) exposureInvariant(ctx sdk.Context) (string, bool) {
	held, err := app.MarketKeeper.HeldExposure(ctx)
	if err != nil {
		return invariant.Format(markettypes.ModuleName, "exposure", err.Error(), true), true
	}
	var problems []string
	seen := map[string]bool{}
	err = app.StakingSlashKeeper.Collaterals.Walk(ctx, nil, func(addr sdk.AccAddress, c sstypes.Collateral) (bool, error) {
		key := addr.String()
		seen[key] = true
		want, ok := held[key]
		if !ok {
			want = sdkmath.ZeroInt()
		}
		if !c.Exposure.Equal(want) {
			problems = append(problems, fmt.Sprintf("provider %s: collateral exposure %s, the market holds %s", key, c.Exposure, want))
		}
		return false, nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	providers := make([]string, 0, len(held))
	for p := range held {
		providers = append(providers, p)
	}
	sort.Strings(providers)
	for _, p := range providers {
		if !seen[p] {
			problems = append(problems, fmt.Sprintf("provider %s: the market holds %s of exposure, it has no collateral record", p, held[p]))
		}
	}
	msg := "every provider's collateral exposure is what the market holds for it"
	if len(problems) > 0 {
		msg = strings.Join(problems, "\n")
	}
	return invariant.Format(markettypes.ModuleName, "exposure", msg, len(problems) > 0), len(problems) > 0
}
