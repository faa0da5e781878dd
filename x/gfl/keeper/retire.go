package keeper

import (
	"context"
	"errors"
	"fmt"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

// Nodes gone for good. A node deactivated node_retention_blocks ago is deleted with what
// the modules keep about it: its record, its GPUs' ownership (they may be registered
// again), its unrebalanced statistics here; its slot in x/market; its counters and
// history in x/reputation, which keeps a low score as its operator's standing. A node
// reactivated before then is not deleted. A node with unsettled work (x/market vetoes)
// is looked at again one retention later: nothing it is owed or owes is dropped.

// scheduleRetire queues an inactive node's deletion at height (the caller saves it).
func (k Keeper) scheduleRetire(ctx context.Context, node *types.Node, height int64) error {
	if err := k.unscheduleRetire(ctx, node); err != nil {
		return err
	}
	node.RetireHeight = height
	return k.NodeRetireAt.Set(ctx, collections.Join(height, node.Id))
}

// unscheduleRetire drops a node's queued deletion, if any (the caller saves it).
func (k Keeper) unscheduleRetire(ctx context.Context, node *types.Node) error {
	if node.RetireHeight == 0 {
		return nil
	}
	if err := k.NodeRetireAt.Remove(ctx, collections.Join(node.RetireHeight, node.Id)); err != nil {
		return err
	}
	node.RetireHeight = 0
	return nil
}

// retireNode deletes a node whose retire height has come, or puts its deletion off one
// retention while x/market vetoes it.
func (k Keeper) retireNode(ctx sdk.Context, p types.Params, id uint64, height int64) error {
	node, err := k.Nodes.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return k.NodeRetireAt.Remove(ctx, collections.Join(height, id))
	} else if err != nil {
		return err
	}
	if node.Status != types.NODE_STATUS_INACTIVE || node.RetireHeight != height {
		// a stale entry (never left by the keeper; kept as a guard)
		return k.NodeRetireAt.Remove(ctx, collections.Join(height, id))
	}
	if veto := k.gflHooks().BeforeNodeDelete(ctx, node); veto != nil {
		if err := k.scheduleRetire(ctx, &node, ctx.BlockHeight()+int64(p.NodeRetentionBlocks)); err != nil {
			return err
		}
		if err := k.Nodes.Set(ctx, id, node); err != nil {
			return err
		}
		return ctx.EventManager().EmitTypedEvent(&types.EventNodeRetirePutOff{
			NodeId: id, Operator: node.Operator, Reason: veto.Error(), RetireHeight: node.RetireHeight,
		})
	}
	return k.deleteNode(ctx, node)
}

// deleteNode removes an inactive node and everything x/gfl keeps about it.
func (k Keeper) deleteNode(ctx sdk.Context, node types.Node) error {
	if node.Status != types.NODE_STATUS_INACTIVE || node.OpenChallenge != 0 || node.PowerGflops != 0 {
		return fmt.Errorf("gfl: delete node %d: %s, challenge %d, power %d", node.Id, node.Status, node.OpenChallenge, node.PowerGflops)
	}
	if err := k.NodeRetireAt.Remove(ctx, collections.Join(node.RetireHeight, node.Id)); err != nil {
		return err
	}
	for _, u := range types.DeviceUUIDs(node.Gpus) {
		owner, err := k.GpuOwners.Get(ctx, u)
		if err == nil && owner == node.Id {
			if err := k.GpuOwners.Remove(ctx, u); err != nil {
				return err
			}
		} else if err != nil && !errors.Is(err, collections.ErrNotFound) {
			return err
		}
	}
	stats, err := k.Stats.Iterate(ctx, collections.NewPrefixedPairRange[uint64, uint64](node.Id))
	if err != nil {
		return err
	}
	keys, err := stats.Keys()
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := k.Stats.Remove(ctx, key); err != nil {
			return err
		}
	}
	if err := k.Nodes.Remove(ctx, node.Id); err != nil {
		return err
	}
	if err := k.gflHooks().AfterNodeDeleted(ctx, node); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventNodeDeleted{NodeId: node.Id, Operator: node.Operator, Gpus: uint32(len(node.Gpus))})
}
