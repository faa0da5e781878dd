package keeper_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/flopsnet/flops/x/gfl/types"
)

// A node deactivated node_retention_blocks ago is deleted with its GPUs' ownership (they
// can be registered again) once the market has nothing unsettled on it; a veto puts the
// deletion off one retention; a node reactivated in time is kept; genesis export and
// import keep a queued deletion.
func TestNodeGoneForGoodIsDeleted(t *testing.T) {
	const retention = 100
	f := newFixture(t, func(p *types.Params) { p.NodeRetentionBlocks = retention })
	op := f.operator("alice", 8)
	gone := f.register(op, spec("gone", 2))
	back := f.register(op, spec("back", 2))
	f.blocks(1)
	for _, id := range []uint64{gone, back} {
		_, err := f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id})
		require.NoError(t, err)
	}
	deactivated := f.ctx.BlockHeight()
	require.Equal(t, deactivated+retention, f.node(gone).RetireHeight)

	// the queued deletion survives an export and import
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, f.k.NodeRetireAt.Clear(f.ctx, nil))
	require.NoError(t, f.k.InitGenesis(f.ctx, gs))
	has, err := f.k.NodeRetireAt.Has(f.ctx, collections.Join(deactivated+retention, gone))
	require.NoError(t, err)
	require.True(t, has)

	f.blocks(retention / 2)
	_, err = f.ms.ReactivateNode(f.ctx, &types.MsgReactivateNode{Operator: op, NodeId: back})
	require.NoError(t, err)
	require.Zero(t, f.node(back).RetireHeight)

	f.hooks.deleteVeto = errors.New("task 9 not settled")
	for f.ctx.BlockHeight() <= deactivated+retention {
		f.blocks(1)
	}
	require.Equal(t, types.NODE_STATUS_INACTIVE, f.node(gone).Status, "put off while the market vetoes")
	require.Equal(t, deactivated+retention+retention, f.node(gone).RetireHeight, "looked at again one retention later")

	f.hooks.deleteVeto = nil
	for f.ctx.BlockHeight() <= deactivated+2*retention {
		f.blocks(1)
	}
	_, err = f.k.GetNode(f.ctx, gone)
	require.ErrorIs(t, err, types.ErrNodeNotFound)
	require.Equal(t, []uint64{gone}, f.hooks.deleted)
	for _, uuid := range []string{"GPU-gone-0", "GPU-gone-1"} {
		has, err := f.k.GpuOwners.Has(f.ctx, uuid)
		require.NoError(t, err)
		require.False(t, has, "%s is free", uuid)
	}
	n, err := f.k.NodeRetireAt.Iterate(f.ctx, nil)
	require.NoError(t, err)
	keys, err := n.Keys()
	require.NoError(t, err)
	require.Empty(t, keys)
	require.Equal(t, types.NODE_STATUS_ACTIVE, f.node(back).Status, "the reactivated node is kept")

	// the deleted node's GPUs sell again, to a new node
	again := f.register(op, spec("gone", 2))
	require.Greater(t, again, back)
}
