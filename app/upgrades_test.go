package app_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// x/market's store (1 to 15) and x/gfl's (1 to 2) migrate from their first version to
// the one this binary runs, through the module manager as an upgrade's handler
// (app/upgrades.go) runs it: a version with no migration registered would fail the
// upgrade at its height. The market's params as a version 12 chain stored them (no
// task_disk_mib_per_gpu) come out valid, with the default.
func TestStoresMigrateFromTheirFirstVersion(t *testing.T) {
	a := apptest.New(t)
	now := a.ModuleManager.GetVersionMap()
	require.EqualValues(t, 15, now[markettypes.ModuleName], "x/market's store is at version 15")
	require.EqualValues(t, 2, now[gfltypes.ModuleName], "x/gfl's store is at version 2")
	p, err := a.MarketKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	p.TaskDiskMibPerGpu = 0
	require.NoError(t, a.MarketKeeper.Params.Set(a.Ctx(), p))
	from := maps.Clone(now)
	from[markettypes.ModuleName] = 1
	from[gfltypes.ModuleName] = 1
	got, err := a.ModuleManager.RunMigrations(a.Ctx(), a.Configurator(), from)
	require.NoError(t, err)
	require.Equal(t, now, got)
	p, err = a.MarketKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	require.EqualValues(t, markettypes.DefaultTaskDiskMiBPerGPU, p.TaskDiskMibPerGpu)
	require.NoError(t, p.Validate())
}
