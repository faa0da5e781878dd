package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

// Read-only views for the modules that pay or score nodes (x/dps, x/reputation).

// NodesByOperator returns an operator's nodes in id order, at most limit of them (limit
// <= 0: all; the caller bounds its own work).
func (k Keeper) NodesByOperator(ctx context.Context, operator sdk.AccAddress, limit int) ([]types.Node, error) {
	it, err := k.Nodes.Indexes.ByOperator.MatchExact(ctx, operator)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	var out []types.Node
	for ; it.Valid() && (limit <= 0 || len(out) < limit); it.Next() {
		id, err := it.PrimaryKey()
		if err != nil {
			return nil, err
		}
		n, err := k.Nodes.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// NodesAfter returns up to limit nodes with an id above after, in id order, and whether
// more follow.
func (k Keeper) NodesAfter(ctx context.Context, after uint64, limit int) ([]types.Node, bool, error) {
	it, err := k.Nodes.Iterate(ctx, new(collections.Range[uint64]).StartExclusive(after))
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = it.Close() }()
	var out []types.Node
	for ; it.Valid() && len(out) < limit; it.Next() {
		n, err := it.Value()
		if err != nil {
			return nil, false, err
		}
		out = append(out, n)
	}
	return out, it.Valid(), nil
}

// GetNetworkPower returns the index: the network's power (ugfl) and its breakdown.
func (k Keeper) GetNetworkPower(ctx context.Context) (types.NetworkPower, error) {
	np, err := k.NetworkPower.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return types.NetworkPower{}, nil
	}
	return np, err
}

// RebalancePending reports whether an ended epoch is still being rebalanced (node powers
// and GFL balances are moving).
func (k Keeper) RebalancePending(ctx context.Context) (bool, error) {
	st, err := k.Rebalance.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		return false, nil
	}
	return len(st.Pending) > 0, err
}
