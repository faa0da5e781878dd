package keeper

import (
	"context"
	"fmt"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/flopsnet/flops/internal/collkeys"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// GFLHooks returns the x/gfl hooks of the market: it keeps its node slots and scheduling
// index in step with the registry and refuses to let a node with work in flight be
// deactivated, or re-equipped in a way its tasks would not survive.
func (k Keeper) GFLHooks() gfltypes.GFLHooks { return gflHooks{k} }

type gflHooks struct{ k Keeper }

// BeforeNodeChange vetoes the deactivation of a node with tasks assigned, running or
// committed (x/gfl drains it instead when its operator asks: adjustSlot tells x/gfl when
// the last of them ends), and a change of its inventory that those tasks would not survive. A node that
// keeps its class may change its GPUs under tasks that hold none (committed: their work is
// done), and while tasks hold some:
//   - without MIG devices, before and after, when it keeps at least as many GPUs as its
//     tasks hold: the chain counts the GPUs a task holds, not which ones;
//   - with MIG devices before, when every device its tasks hold stays, alike
//     (renumberDevices): the chain gave each task exact devices, which the change
//     renumbers (or forgets, when no card is in MIG mode after and the tasks hold whole
//     cards).
//
// Cards going into MIG mode under tasks are refused: the chain does not know which GPUs
// those tasks run on. So a card that failed (or was added) is taken at once instead of
// waiting for a moment without work, which a busy node may never have, while the
// scheduler kept giving tasks to the card that is gone, each given back and slashed.
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
		// x/gfl's error: a drain waits for these tasks, and adjustSlot tells x/gfl
		// (NodeIdle) when the last one ends
		return errorsmod.Wrapf(gfltypes.ErrNodeBusy, "node %d has %d tasks in flight", n.Id, s.Tasks)
	}
	switch after := types.SlotFromNode(*next); {
	case next.GpuClass != n.GpuClass:
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks in flight: its class cannot change from %q to %q under them", n.Id, s.Tasks, n.GpuClass, next.GpuClass)
	case s.GpusUsed == 0:
		return nil
	case len(s.Devices) > 0:
		return h.k.renumberDevices(ctx, n, *next, s)
	case len(after.Devices) > 0:
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks on its GPUs: its cards cannot go into MIG mode under them (the chain does not know which GPUs they run on)", n.Id, s.Tasks)
	case after.Gpus < s.GpusUsed:
		return errorsmod.Wrapf(types.ErrNodeBusy, "node %d has %d tasks in flight on %d GPUs: the change leaves %d", n.Id, s.Tasks, s.GpusUsed, after.Gpus)
	}
	return nil
}

// renumberDevices moves the tasks holding devices of a node with MIG to its devices after
// a change of its inventory (next), and its slot with them, or refuses the change when a
// device one of them holds would go or change (DeviceRenumbering): a card lost under a
// task waits for that task to end or be given back. The devices of a running task are
// found through NodeRunning, at most one task a device. A task assigned and not yet
// acknowledged holds devices too, but only a walk of every assigned task on the chain
// would find it: its devices must keep their index (a card lost or added after them), or
// the change waits for it to start (its worker's next block) or go. With no card in MIG
// mode after, the tasks' devices are forgotten: the node's GPUs are counted, and its
// worker has pinned theirs. The change follows in the same transaction (x/gfl's
// UpdateNode), which a later failure reverts whole; AfterNodeChanged then finds the slot
// as it would write it.
func (k Keeper) renumberDevices(ctx context.Context, n, next gfltypes.Node, s types.NodeSlot) error {
	to := types.DeviceRenumbering(n, next)
	if len(to) != len(s.Devices) {
		return fmt.Errorf("market: node %d has %d devices, its slot %d", n.Id, len(to), len(s.Devices))
	}
	after := types.SlotFromNode(next)
	mig := len(after.Devices) > 0
	keys, err := collkeys.CollectKeys(ctx, k.NodeRunning, collections.NewPrefixedPairRange[uint64, uint64](n.Id), len(s.Devices)+1)
	if err != nil {
		return err
	}
	held := types.NodeSlot{Devices: s.Devices}      // what the running tasks hold, as numbered now
	moved := types.NodeSlot{Devices: after.Devices} // and after the change
	tasks := make([]types.Task, 0, len(keys))
	for _, key := range keys {
		t, err := k.Tasks.Get(ctx, key.K2())
		if err != nil {
			return err
		}
		bits, ok := held.MarkDevices(t.Devices, true)
		if !ok {
			return fmt.Errorf("market: task %d holds devices %v of node %d: one is unknown or another task's", t.Id, t.Devices, n.Id)
		}
		held.DevicesUsed = bits
		devices := make([]uint32, len(t.Devices))
		for i, d := range t.Devices {
			if to[d] < 0 {
				return errorsmod.Wrapf(types.ErrNodeBusy, "node %d: task %d runs on its device %d, which the change takes away or alters", n.Id, t.Id, d)
			}
			devices[i] = uint32(to[d])
		}
		if !mig {
			devices = nil
		} else if moved.DevicesUsed, ok = moved.MarkDevices(devices, true); !ok {
			return fmt.Errorf("market: node %d: task %d's devices %v renumbered to %v, one taken twice", n.Id, t.Id, t.Devices, devices)
		}
		t.Devices = devices
		tasks = append(tasks, t)
	}
	for i := range s.Devices {
		if !s.DeviceUsed(i) || held.DeviceUsed(i) {
			continue
		}
		if !mig || to[i] != i {
			return errorsmod.Wrapf(types.ErrNodeBusy, "node %d: its device %d is held by a task assigned and not yet started, whose devices the change would move: it can change once that task runs or goes", n.Id, i)
		}
		var ok bool
		if moved.DevicesUsed, ok = moved.MarkDevices([]uint32{uint32(i)}, true); !ok {
			return fmt.Errorf("market: node %d: device %d held twice after the change", n.Id, i)
		}
	}
	for _, t := range tasks {
		if err := k.Tasks.Set(ctx, t.Id, t); err != nil {
			return err
		}
	}
	after.GpusUsed, after.Tasks, after.OpenTasks, after.DevicesUsed = s.GpusUsed, s.Tasks, s.OpenTasks, moved.DevicesUsed
	return k.setSlot(ctx, &s, after)
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
		} // else new MIG devices, none held: BeforeNodeChange moved the held ones and the slot
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
