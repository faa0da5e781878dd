package app

import "github.com/flopsnet/flops/internal/invariant"

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
