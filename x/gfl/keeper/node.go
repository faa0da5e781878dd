package keeper

import (
	"context"
	"fmt"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

// RegisterNode validates the spec, locks the operator's collateral for the node's GPUs and
// stores the node: ACTIVE under OPEN admission (first challenge at this block's end), PENDING
// under GOVERNED admission.
func (k Keeper) RegisterNode(ctx context.Context, op sdk.AccAddress, spec types.NodeSpec) (types.Node, error) {
	operator, err := k.addressString("operator", op)
	if err != nil {
		return types.Node{}, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return types.Node{}, err
	}
	class, err := spec.Validate(p)
	if err != nil {
		return types.Node{}, err
	}
	for _, u := range types.DeviceUUIDs(spec.Gpus) {
		if owner, err := k.GpuOwners.Get(ctx, u); err == nil {
			return types.Node{}, errorsmod.Wrapf(types.ErrDuplicateGpu, "GPU or MIG uuid %s is already registered by node %d", u, owner)
		} else if !errorsmod.IsOf(err, collections.ErrNotFound) {
			return types.Node{}, err
		}
	}
	if err := k.collateral.LockForNode(ctx, op, uint64(len(spec.Gpus))); err != nil {
		return types.Node{}, errorsmod.Wrapf(types.ErrInsufficientCollateral, "%d GPUs: %s", len(spec.Gpus), err)
	}
	id, err := k.NodeSeq.Next(ctx)
	if err != nil {
		return types.Node{}, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	node := types.Node{
		Id: id, Operator: operator, GpuClass: class, RegisteredHeight: sdkCtx.BlockHeight(),
		Status: types.NODE_STATUS_PENDING, Approved: p.Admission == types.ADMISSION_OPEN,
		AwaitingMeasurement: p.AwaitsMeasurement(class),
	}
	applySpec(&node, spec)
	if node.Approved {
		node.Status = types.NODE_STATUS_ACTIVE
		if err := k.scheduleChallenge(ctx, &node, sdkCtx.BlockHeight()); err != nil {
			return types.Node{}, err
		}
	}
	for _, u := range types.DeviceUUIDs(node.Gpus) {
		if err := k.GpuOwners.Set(ctx, u, id); err != nil {
			return types.Node{}, err
		}
	}
	if err := k.Nodes.Set(ctx, id, node); err != nil {
		return types.Node{}, err
	}
	if err := sdkCtx.EventManager().EmitTypedEvent(&types.EventNodeRegistered{
		NodeId: id, Operator: operator, GpuClass: class, Gpus: uint32(len(node.Gpus)), Status: node.Status,
	}); err != nil {
		return types.Node{}, err
	}
	if err := k.gflHooks().AfterNodeChanged(ctx, node); err != nil {
		return types.Node{}, err
	}
	return node, nil
}

func applySpec(n *types.Node, s types.NodeSpec) {
	n.Gpus = slices.Clone(s.Gpus)
	n.Region = s.Region
	n.Endpoint = s.Endpoint
	n.Workloads = slices.Clone(s.Workloads)
	n.Runtimes = types.NodeRuntimes(s)
	peak := n.HighestAsk()
	n.AskPerGpuHour = s.AskPerGpuHour
	n.PeakAsk = sdkmath.MaxInt(peak, s.AskPerGpuHour.Amount)
	n.ClaimedGflops = s.ClaimedGflops
	n.DiskMibPerGpu = s.DiskMibPerGpu
}

// ownedNode returns a node after checking that signer is its operator.
func (k Keeper) ownedNode(ctx context.Context, op sdk.AccAddress, id uint64) (types.Node, error) {
	signer, err := k.addressString("operator", op)
	if err != nil {
		return types.Node{}, err
	}
	node, err := k.GetNode(ctx, id)
	if err != nil {
		return node, err
	}
	if node.Operator != signer {
		return node, errorsmod.Wrapf(types.ErrNotOperator, "node %d belongs to %s, not %s", id, node.Operator, signer)
	}
	return node, nil
}

// holdsCollateralLock: pending, active and draining nodes hold their GPUs' collateral
// locked.
func holdsCollateralLock(s types.NodeStatus) bool {
	return s == types.NODE_STATUS_ACTIVE || s == types.NODE_STATUS_PENDING || s == types.NODE_STATUS_DRAINING
}

// UpdateNode replaces a node's spec. A change of inventory (GPUs or class) is put to the
// hooks first (x/market refuses one that the node's work in flight would not survive),
// re-locks collateral for the new GPU count and moves the node's power to its new class.
func (k Keeper) UpdateNode(ctx context.Context, op sdk.AccAddress, id uint64, spec types.NodeSpec) (types.Node, error) {
	node, err := k.ownedNode(ctx, op, id)
	if err != nil {
		return node, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return node, err
	}
	class, err := spec.Validate(p)
	if err != nil {
		return node, err
	}
	for _, u := range types.DeviceUUIDs(spec.Gpus) {
		owner, err := k.GpuOwners.Get(ctx, u)
		if err == nil && owner != id {
			return node, errorsmod.Wrapf(types.ErrDuplicateGpu, "GPU or MIG uuid %s is already registered by node %d", u, owner)
		} else if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
			return node, err
		}
	}
	claimedClass, awaiting := "", node.AwaitingMeasurement
	switch {
	case node.ClaimedClass != "":
		// A node the rebalance re-classed stays in the class it measured whatever it
		// claims now: an update cannot undo a measurement, and a new claim is measured at
		// the next rebalance (claiming another class each epoch buys no epoch in it).
		if class != node.GpuClass {
			claimedClass = class
		}
		class = node.GpuClass
	case class != node.GpuClass:
		// another class claimed: it takes jobs in it once PoCP shows the class's floor
		awaiting = p.AwaitsMeasurement(class)
	}
	inventoryChanged := class != node.GpuClass || !types.SameGPUs(node.Gpus, spec.Gpus)
	if inventoryChanged {
		next := node
		next.GpuClass, next.ClaimedClass, next.AwaitingMeasurement = class, claimedClass, awaiting
		applySpec(&next, spec)
		if err := k.gflHooks().BeforeNodeChange(ctx, node, &next); err != nil {
			return node, errorsmod.Wrapf(types.ErrNodeBusy, "node %d: %s", id, err)
		}
		if holdsCollateralLock(node.Status) {
			// Lock or unlock only the difference: one call, nothing to undo on failure.
			newGPUs, oldGPUs := uint64(len(spec.Gpus)), node.GPUCount()
			if newGPUs > oldGPUs {
				if err := k.collateral.LockForNode(ctx, op, newGPUs-oldGPUs); err != nil {
					return node, errorsmod.Wrapf(types.ErrInsufficientCollateral, "%d more GPUs: %s", newGPUs-oldGPUs, err)
				}
			} else if newGPUs < oldGPUs {
				if err := k.collateral.UnlockForNode(ctx, op, oldGPUs-newGPUs); err != nil {
					return node, err
				}
			}
		}
		for _, u := range types.DeviceUUIDs(node.Gpus) {
			if err := k.GpuOwners.Remove(ctx, u); err != nil {
				return node, err
			}
		}
		for _, u := range types.DeviceUUIDs(spec.Gpus) {
			if err := k.GpuOwners.Set(ctx, u, id); err != nil {
				return node, err
			}
		}
		if class != node.GpuClass && node.PowerGflops > 0 {
			if err := k.addClassPower(ctx, node.GpuClass, node.PowerGflops, false); err != nil {
				return node, err
			}
			if err := k.addClassPower(ctx, class, node.PowerGflops, true); err != nil {
				return node, err
			}
		}
	}
	node.GpuClass, node.ClaimedClass, node.AwaitingMeasurement = class, claimedClass, awaiting
	applySpec(&node, spec)
	if err := k.Nodes.Set(ctx, id, node); err != nil {
		return node, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventNodeUpdated{
		NodeId: id, GpuClass: class, Gpus: uint32(len(node.Gpus)),
	}); err != nil {
		return node, err
	}
	if err := k.gflHooks().AfterNodeChanged(ctx, node); err != nil {
		return types.Node{}, err
	}
	return node, nil
}

// DeactivateNode takes a node off the market: its power is burned at once and its
// collateral unlocked. A node with work in flight (a hook's veto, wrapping ErrNodeBusy) is
// refused, or with drain goes DRAINING: off the market at once (no new work, its power
// burned, no challenge) with its collateral still locked, and deactivated by NodeIdle when
// that work ends. Refused while a committed challenge awaits its reveal (deactivating must
// not dodge a wrong-answer slash); an issued but uncommitted challenge counts as missed.
// It returns the node's status after: INACTIVE or DRAINING.
func (k Keeper) DeactivateNode(ctx context.Context, op sdk.AccAddress, id uint64, drain bool) (types.NodeStatus, error) {
	node, err := k.ownedNode(ctx, op, id)
	if err != nil {
		return 0, err
	}
	if node.Status != types.NODE_STATUS_ACTIVE && node.Status != types.NODE_STATUS_PENDING {
		return 0, errorsmod.Wrapf(types.ErrInvalidNodeStatus, "node %d is %s", id, node.Status)
	}
	if node.OpenChallenge != 0 {
		c, err := k.Challenges.Get(ctx, node.OpenChallenge)
		if err != nil {
			return 0, err
		}
		if c.Status == types.CHALLENGE_STATUS_COMMITTED {
			return 0, errorsmod.Wrapf(types.ErrNodeBusy, "node %d: challenge %d awaits its reveal until height %d", id, c.Id, c.RevealDeadlineHeight)
		}
		if err := k.concludeChallenge(ctx, c, types.CHALLENGE_STATUS_MISSED, 0, "node deactivated"); err != nil {
			return 0, err
		}
		if node, err = k.GetNode(ctx, id); err != nil {
			return 0, err
		}
	}
	busy := k.gflHooks().BeforeNodeChange(ctx, node, nil)
	switch {
	case busy == nil:
	case !drain:
		return 0, errorsmod.Wrapf(types.ErrNodeBusy, "node %d: %s (drain takes it off the market now and deactivates it when that work ends)", id, busy)
	case !errorsmod.IsOf(busy, types.ErrNodeBusy):
		return 0, busy
	}
	if err := k.setNodePower(ctx, &node, 0); err != nil {
		return 0, err
	}
	if err := k.ChallengeQueue.Remove(ctx, collections.Join(node.NextChallengeHeight, id)); err != nil {
		return 0, err
	}
	node.NextChallengeHeight = 0
	if busy != nil {
		return types.NODE_STATUS_DRAINING, k.setStatus(ctx, node, types.NODE_STATUS_DRAINING)
	}
	return types.NODE_STATUS_INACTIVE, k.deactivate(ctx, node)
}

// deactivate ends a node's time on the market, its power and challenges already gone: its
// collateral is unlocked and its deletion scheduled node_retention_blocks ahead.
func (k Keeper) deactivate(ctx context.Context, node types.Node) error {
	op, err := k.addressCodec.StringToBytes(node.Operator)
	if err != nil {
		return err
	}
	if err := k.collateral.UnlockForNode(ctx, op, node.GPUCount()); err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.scheduleRetire(ctx, &node, sdk.UnwrapSDKContext(ctx).BlockHeight()+int64(p.NodeRetentionBlocks)); err != nil {
		return err
	}
	return k.setStatus(ctx, node, types.NODE_STATUS_INACTIVE)
}

// NodeIdle finishes the drain of a node whose work in flight ended: the module that vetoed
// its deactivation (x/market, when the node's last task in flight ends) calls it. A node
// not DRAINING, or that another hook still holds, stays as it is.
func (k Keeper) NodeIdle(ctx context.Context, id uint64) error {
	node, err := k.GetNode(ctx, id)
	if err != nil {
		return err
	}
	if node.Status != types.NODE_STATUS_DRAINING {
		return nil
	}
	if err := k.gflHooks().BeforeNodeChange(ctx, node, nil); errorsmod.IsOf(err, types.ErrNodeBusy) {
		return nil
	} else if err != nil {
		return err
	}
	return k.deactivate(ctx, node)
}

// ReactivateNode puts an inactive node back, locking its collateral again, or ends a
// node's drain (its collateral still locked): ACTIVE if it was ever approved, PENDING
// otherwise. Its power comes back with its next challenge, issued at once.
func (k Keeper) ReactivateNode(ctx context.Context, op sdk.AccAddress, id uint64) (types.NodeStatus, error) {
	node, err := k.ownedNode(ctx, op, id)
	if err != nil {
		return 0, err
	}
	switch node.Status {
	case types.NODE_STATUS_INACTIVE:
		if err := k.collateral.LockForNode(ctx, op, node.GPUCount()); err != nil {
			return 0, errorsmod.Wrapf(types.ErrInsufficientCollateral, "%d GPUs: %s", len(node.Gpus), err)
		}
		if err := k.unscheduleRetire(ctx, &node); err != nil {
			return 0, err
		}
	case types.NODE_STATUS_DRAINING:
	default:
		return 0, errorsmod.Wrapf(types.ErrInvalidNodeStatus, "node %d is %s, not inactive or draining", id, node.Status)
	}
	to := types.NODE_STATUS_PENDING
	if node.Approved {
		to = types.NODE_STATUS_ACTIVE
		if err := k.scheduleChallenge(ctx, &node, sdk.UnwrapSDKContext(ctx).BlockHeight()); err != nil {
			return 0, err
		}
	}
	return to, k.setStatus(ctx, node, to)
}

// ApproveNode admits a pending node (GOVERNED admission); the msg server lets only the
// authority call it.
func (k Keeper) ApproveNode(ctx context.Context, id uint64) error {
	node, err := k.GetNode(ctx, id)
	if err != nil {
		return err
	}
	if node.Status != types.NODE_STATUS_PENDING {
		return errorsmod.Wrapf(types.ErrInvalidNodeStatus, "node %d is %s, not pending", id, node.Status)
	}
	node.Approved = true
	if err := k.scheduleChallenge(ctx, &node, sdk.UnwrapSDKContext(ctx).BlockHeight()); err != nil {
		return err
	}
	return k.setStatus(ctx, node, types.NODE_STATUS_ACTIVE)
}

func (k Keeper) setStatus(ctx context.Context, node types.Node, to types.NodeStatus) error {
	from := node.Status
	node.Status = to
	if err := k.Nodes.Set(ctx, node.Id, node); err != nil {
		return err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventNodeStatusChanged{
		NodeId: node.Id, From: from, To: to,
	}); err != nil {
		return err
	}
	return k.gflHooks().AfterNodeChanged(ctx, node)
}

// scheduleChallenge sets the node's next challenge height and queues it, taking its
// previous entry out of the queue, so that the queue holds exactly one entry per node
// with a next challenge (what genesis rebuilds it from). The caller saves the node.
func (k Keeper) scheduleChallenge(ctx context.Context, node *types.Node, height int64) error {
	if prev := node.NextChallengeHeight; prev != 0 && prev != height {
		if err := k.ChallengeQueue.Remove(ctx, collections.Join(prev, node.Id)); err != nil {
			return err
		}
	}
	node.NextChallengeHeight = height
	return k.ChallengeQueue.Set(ctx, collections.Join(height, node.Id))
}

// setNodePower sets a node's GFL index and keeps the ledger exact: the operator's ugfl is
// minted or burned by the difference, and the class and network totals follow. The
// caller saves the node.
func (k Keeper) setNodePower(ctx context.Context, node *types.Node, power uint64) error {
	old := node.PowerGflops
	if old == power {
		return nil
	}
	op, err := k.operatorAddr("operator", node.Operator)
	if err != nil {
		return err
	}
	np, err := k.NetworkPower.Get(ctx)
	if err != nil {
		return err
	}
	// The only moves of ugfl x/bank lets through (types.SendRestriction).
	ctx = types.WithLedgerMove(ctx)
	if power > old {
		delta := sdk.NewCoins(sdk.NewCoin(types.Denom, sdkmath.NewIntFromUint64(power-old)))
		if err := k.bankKeeper.MintCoins(ctx, types.ModuleName, delta); err != nil {
			return err
		}
		if err := k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, op, delta); err != nil {
			return err
		}
		np.TotalGflops += power - old
		if err := k.addClassPower(ctx, node.GpuClass, power-old, true); err != nil {
			return err
		}
	} else {
		delta := sdk.NewCoins(sdk.NewCoin(types.Denom, sdkmath.NewIntFromUint64(old-power)))
		if err := k.bankKeeper.SendCoinsFromAccountToModule(ctx, op, types.ModuleName, delta); err != nil {
			return errorsmod.Wrapf(err, "burning %s from operator %s", delta, node.Operator)
		}
		if err := k.bankKeeper.BurnCoins(ctx, types.ModuleName, delta); err != nil {
			return err
		}
		np.TotalGflops -= old - power
		if err := k.addClassPower(ctx, node.GpuClass, old-power, false); err != nil {
			return err
		}
	}
	switch {
	case old == 0:
		np.Nodes++
	case power == 0:
		np.Nodes--
	}
	node.PowerGflops = power
	return k.NetworkPower.Set(ctx, np)
}

func (k Keeper) addClassPower(ctx context.Context, class string, amount uint64, add bool) error {
	cur, err := k.ClassPower.Get(ctx, class)
	if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	if add {
		cur += amount
	} else {
		if amount > cur {
			return fmt.Errorf("gfl: class %s power %d below %d: the ledger is out of step", class, cur, amount)
		}
		cur -= amount
	}
	if cur == 0 {
		return k.ClassPower.Remove(ctx, class)
	}
	return k.ClassPower.Set(ctx, class, cur)
}
