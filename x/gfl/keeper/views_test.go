package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// NodesByOperator lists one operator's nodes only; NodesAfter pages through every node in
// id order; RebalancePending follows an ended epoch until its rebalance finished.
func TestViews(t *testing.T) {
	f := newFixture(t, nil)
	a, b := f.operator("a", 8), f.operator("b", 8)
	ids := []uint64{f.register(a, spec("a1", 1)), f.register(b, spec("b1", 1)), f.register(a, spec("a2", 1))}
	nodes, err := f.k.NodesByOperator(f.ctx, sdk.MustAccAddressFromBech32(a), 0)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	require.Equal(t, []uint64{ids[0], ids[2]}, []uint64{nodes[0].Id, nodes[1].Id})
	one, err := f.k.NodesByOperator(f.ctx, sdk.MustAccAddressFromBech32(a), 1)
	require.NoError(t, err)
	require.Len(t, one, 1)

	var seen []uint64
	after := uint64(0)
	for {
		page, more, err := f.k.NodesAfter(f.ctx, after, 2)
		require.NoError(t, err)
		for _, n := range page {
			seen = append(seen, n.Id)
			after = n.Id
		}
		if !more {
			break
		}
	}
	require.Equal(t, ids, seen)

	pending, err := f.k.RebalancePending(f.ctx)
	require.NoError(t, err)
	require.False(t, pending)
	f.endEpoch()
	pending, err = f.k.RebalancePending(f.ctx)
	require.NoError(t, err)
	require.True(t, pending)
	f.blocks(5)
	pending, err = f.k.RebalancePending(f.ctx)
	require.NoError(t, err)
	require.False(t, pending)
	_, err = f.k.GetNetworkPower(f.ctx)
	require.NoError(t, err)
}
