package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// schedulable reads both counts, every page.
func schedulable(t *testing.T, f *fixture) (map[string][2]uint64, map[string]uint64) {
	t.Helper()
	qs := keeper.NewQueryServerImpl(f.k)
	classes, regions := map[string][2]uint64{}, map[string]uint64{}
	var key []byte
	for {
		res, err := qs.SchedulableByClass(f.ctx, &types.QuerySchedulableByClassRequest{Pagination: &query.PageRequest{Key: key, Limit: 1}})
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Classes), 1)
		for _, c := range res.Classes {
			classes[c.GpuClass] = [2]uint64{c.Idle, c.Loaded}
		}
		if key = res.Pagination.GetNextKey(); key == nil {
			break
		}
	}
	for {
		res, err := qs.SchedulableByRegion(f.ctx, &types.QuerySchedulableByRegionRequest{Pagination: &query.PageRequest{Key: key, Limit: 1}})
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Regions), 1)
		for _, r := range res.Regions {
			regions[r.Region] = r.Nodes
		}
		if key = res.Pagination.GetNextKey(); key == nil {
			break
		}
	}
	return classes, regions
}

// The schedulable nodes are counted by GPU class (the scheduler's counters) and by region
// as nodes join, take work, move region and leave; a node that is not active, or that is
// in no class, is not counted. The counts survive an export and import, the migration
// from version 11 rebuilds the region counts from the slots, and the slots invariant
// catches a miscount.
func TestSchedulableCountsFollowTheNodes(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("a"), 8, nil) // A100-40GB, eu-west
	b := f.addNode(f.operator("b"), 8, func(n *gfltypes.Node) { n.Region = "us-east" })
	h := f.addNode(f.operator("h"), 8, func(n *gfltypes.Node) { n.GpuClass = "H100-80GB" })
	f.addNode(f.operator("d"), 8, func(n *gfltypes.Node) { n.Region = "" })
	idle := f.addNode(f.operator("e"), 8, func(n *gfltypes.Node) { n.Region, n.Status = "ap-south", gfltypes.NODE_STATUS_INACTIVE })
	f.addNode(f.operator("u"), 8, func(n *gfltypes.Node) { n.Region, n.GpuClass = "nowhere", "" })
	check := func(what string, classes map[string][2]uint64, regions map[string]uint64) {
		t.Helper()
		gotClasses, gotRegions := schedulable(t, f)
		require.Equal(t, classes, gotClasses, "%s: by class", what)
		require.Equal(t, regions, gotRegions, "%s: by region", what)
		f.assertInvariants()
	}
	check("registered", map[string][2]uint64{"A100-40GB": {3, 0}, "H100-80GB": {1, 0}}, map[string]uint64{"": 1, "eu-west": 2, "us-east": 1})

	// a task for b alone (its class and region): b is loaded, its region's count unchanged
	spec := f.gemmSpec(1)
	spec.Requirements.AllowedClasses, spec.Requirements.Region = []string{"A100-40GB"}, "us-east"
	job := f.submit(spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	require.Equal(t, b, task.NodeId)
	classes := map[string][2]uint64{"A100-40GB": {2, 1}, "H100-80GB": {1, 0}}
	check("a task assigned", classes, map[string]uint64{"": 1, "eu-west": 2, "us-east": 1})

	f.updateNode(b, func(n *gfltypes.Node) { n.Region = "us-west" }) // loaded, and moved
	check("moved region", classes, map[string]uint64{"": 1, "eu-west": 2, "us-west": 1})

	f.updateNode(h, func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_INACTIVE })
	delete(classes, "H100-80GB")
	check("left", classes, map[string]uint64{"": 1, "eu-west": 1, "us-west": 1})
	f.updateNode(h, func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_ACTIVE })
	classes["H100-80GB"] = [2]uint64{1, 0}
	f.updateNode(idle, func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_ACTIVE })
	classes["A100-40GB"] = [2]uint64{3, 1}
	want := map[string]uint64{"": 1, "eu-west": 2, "us-west": 1, "ap-south": 1}
	check("activated", classes, want)

	// version 11's layout: no region counts; the migration counts the slots
	it, err := f.k.RegionNodes.Iterate(f.ctx, nil)
	require.NoError(t, err)
	regions, err := it.Keys()
	require.NoError(t, err)
	for _, r := range regions {
		require.NoError(t, f.k.RegionNodes.Remove(f.ctx, r))
	}
	msg, broken := f.k.SlotsInvariant(f.ctx)
	require.True(t, broken, "the invariant sees no region counted")
	require.Contains(t, msg, "0 region counters for the active nodes' 4 regions")
	require.NoError(t, keeper.NewMigrator(f.k).Migrate11to12(f.ctx))
	check("migrated", classes, want)

	// a miscount
	require.NoError(t, f.k.RegionNodes.Set(f.ctx, "eu-west", 5))
	msg, broken = f.k.SlotsInvariant(f.ctx)
	require.True(t, broken)
	require.Contains(t, msg, `region "eu-west": counter 5, active nodes 2`)
	require.NoError(t, f.k.RegionNodes.Set(f.ctx, "eu-west", 2))

	// export and import
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	g := newFixture(t, nil)
	g.bank.FundModule(types.ModuleName, sdk.NewCoins(sdk.NewCoin(udps, f.escrow())))
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	gotClasses, gotRegions := schedulable(t, g)
	require.Equal(t, classes, gotClasses, "imported: by class")
	require.Equal(t, want, gotRegions, "imported: by region")
}
