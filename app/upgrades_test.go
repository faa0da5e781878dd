package app_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// x/market's store (1 to 12) and x/gfl's (1 to 2) migrate from their first version to
// the one this binary runs, through the module manager as an upgrade's handler
// (app/upgrades.go) runs it: a version with no migration registered would fail the
// upgrade at its height.
func TestStoresMigrateFromTheirFirstVersion(t *testing.T) {
	a := apptest.New(t)
	now := a.ModuleManager.GetVersionMap()
	require.EqualValues(t, 12, now[markettypes.ModuleName], "x/market's store is at version 12")
	require.EqualValues(t, 2, now[gfltypes.ModuleName], "x/gfl's store is at version 2")
	from := maps.Clone(now)
	from[markettypes.ModuleName] = 1
	from[gfltypes.ModuleName] = 1
	got, err := a.ModuleManager.RunMigrations(a.Ctx(), a.Configurator(), from)
	require.NoError(t, err)
	require.Equal(t, now, got)
}
