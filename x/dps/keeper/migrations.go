package keeper

import (
	"context"

	"github.com/flopsnet/flops/x/dps/types"
)

// Migrator runs x/dps's store migrations.
type Migrator struct{ k Keeper }

// NewMigrator returns x/dps's migrator.
func NewMigrator(k Keeper) Migrator { return Migrator{k: k} }

// Migrate1to2 sets availability_ask_cap_ppm, which version 1's params lack (read as 0,
// no cap), to its default: a chain upgraded to version 2 stops paying availability to
// nodes priced out of their class's market as a new chain does. Governance may set 0
// afterwards. A distribution in progress keeps the cap it started with (none).
func (m Migrator) Migrate1to2(ctx context.Context) error {
	p, err := m.k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if p.AvailabilityAskCapPpm != 0 {
		return nil
	}
	p.AvailabilityAskCapPpm = types.DefaultAvailabilityAskCapPPM
	if err := p.Validate(); err != nil {
		return err
	}
	return m.k.Params.Set(ctx, p)
}
