package keeper

import (
	"context"
	"fmt"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// GFLHooks returns the x/gfl hooks of the market: it keeps its node slots and scheduling
// index in step with the registry and refuses to let a node with work in flight be
// deactivated, or re-equipped in a way its tasks would not survive.
func (k Keeper) GFLHooks() gfltypes.GFLHooks { return gflHooks{k} }

type gflHooks struct{ k Keeper }

// BeforeNodeChange vetoes the deactivation of a node with tasks assigned, running or
// committed, and a change of its inventory that those tasks would not survive. A node
// without MIG devices, before and after, that keeps its class and at least as many GPUs
// as its tasks hold may change them while they run: the chain counts the GPUs a task
// holds, not which ones, so a card that failed (or was added) is taken at once instead
// of waiting for a moment without work, which a busy node may never have, while the
// scheduler kept giving tasks to the card that is gone. With MIG the chain gave each task
// exact devices, which a new inventory would renumber.
func (h gflHooks) BeforeNodeChange(ctx context.Context, n gfltypes.Node, next *gfltypes.Node) error {
	s, err := h.k.Slots.Get(ctx, n.Id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if s.Tasks == 0 {
		return nil
	}
	if next == nil {
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks in flight", n.Id, s.Tasks)
	}
	switch after := types.SlotFromNode(*next); {
	case next.GpuClass != n.GpuClass:
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks in flight: its class cannot change from %q to %q under them", n.Id, s.Tasks, n.GpuClass, next.GpuClass)
	case len(s.Devices) > 0 || len(after.Devices) > 0:
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks in flight on MIG devices the chain gave them: its GPUs cannot change under them", n.Id, s.Tasks)
	case after.Gpus < s.GpusUsed:
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks in flight on %d GPUs: the change leaves %d", n.Id, s.Tasks, s.GpusUsed, after.Gpus)
	}
	return nil
}

// AfterNodeChanged refreshes the node's slot, keeping its usage counters; a failure fails
// the node's change (x/gfl returns it).
func (h gflHooks) AfterNodeChanged(ctx context.Context, n gfltypes.Node) error {
	s := types.SlotFromNode(n)
	old, err := h.k.Slots.Get(ctx, n.Id)
	var oldp *types.NodeSlot
	switch {
	case err == nil:
		s.GpusUsed, s.Tasks, s.OpenTasks = old.GpusUsed, old.Tasks, old.OpenTasks
		if slices.Equal(s.Devices, old.Devices) {
			s.DevicesUsed = old.DevicesUsed
		} // else a change of MIG devices, refused while a task holds the node (BeforeNodeChange)
		oldp = &old
	case !errorsmod.IsOf(err, collections.ErrNotFound):
		return err
	}
	if err := h.k.setSlot(ctx, oldp, s); err != nil {
		return fmt.Errorf("market: slot of node %d: %w", n.Id, err)
	}
	return nil
}

// BeforeNodeDelete puts off the deletion of a node with tasks that are not final: their
// verification and settlement read the node.
func (h gflHooks) BeforeNodeDelete(ctx context.Context, n gfltypes.Node) error {
	s, err := h.k.Slots.Get(ctx, n.Id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if s.OpenTasks > 0 { // in-flight tasks (s.Tasks) are open too
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks not settled", n.Id, s.OpenTasks)
	}
	return nil
}

// AfterNodeDeleted drops the node's slot (an inactive node is in no scheduling index).
func (h gflHooks) AfterNodeDeleted(ctx context.Context, n gfltypes.Node) error {
	s, err := h.k.Slots.Get(ctx, n.Id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if s.Active || s.OpenTasks > 0 {
		return fmt.Errorf("market: delete slot of node %d: active %v, %d open tasks", n.Id, s.Active, s.OpenTasks)
	}
	return h.k.Slots.Remove(ctx, n.Id)
}

// AfterChallengeFinished implements gfltypes.GFLHooks.
func (gflHooks) AfterChallengeFinished(context.Context, gfltypes.Node, uint64, gfltypes.ChallengeStatus) error {
	return nil
}
