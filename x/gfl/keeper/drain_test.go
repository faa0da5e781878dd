package keeper_test

import (
	"errors"
	"testing"

	errorsmod "cosmossdk.io/errors"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

// A busy node drains: off the market at once (power burned, no challenge, no slot in the
// index), collateral kept locked while its tasks run, deactivated when the market says its
// last task ended; an idle node asked to drain is deactivated at once.
func TestDrainBusyNode(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	id := f.register(op, spec("a", 2))
	f.blocks(1)
	f.setPower(id, 500)
	require.Equal(t, uint64(2), f.coll.locked[op])

	f.hooks.veto = errorsmod.Wrap(types.ErrNodeBusy, "node has 2 tasks in flight")
	res, err := f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id, Drain: true})
	require.NoError(t, err)
	require.Equal(t, types.NODE_STATUS_DRAINING, res.Status)
	n := f.node(id)
	require.Equal(t, types.NODE_STATUS_DRAINING, n.Status)
	require.False(t, n.Schedulable(), "no new work")
	require.Zero(t, n.PowerGflops)
	require.True(t, f.bank.Balance(sdkAddr(op), types.Denom).IsZero(), "power burned at the drain's start")
	require.Zero(t, n.NextChallengeHeight)
	require.Zero(t, n.RetireHeight, "a draining node is not scheduled for deletion")
	require.Equal(t, uint64(2), f.coll.locked[op], "collateral stays locked under the tasks in flight")
	f.blocks(3)
	require.Zero(t, f.node(id).OpenChallenge, "a draining node is not challenged")

	_, err = f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id, Drain: true})
	require.ErrorIs(t, err, types.ErrInvalidNodeStatus, "already draining")

	// still busy: nothing happens
	require.NoError(t, f.k.NodeIdle(f.ctx, id))
	require.Equal(t, types.NODE_STATUS_DRAINING, f.node(id).Status)

	f.hooks.veto = nil
	require.NoError(t, f.k.NodeIdle(f.ctx, id))
	n = f.node(id)
	require.Equal(t, types.NODE_STATUS_INACTIVE, n.Status)
	require.Zero(t, f.coll.locked[op], "unlocked once idle")
	require.NotZero(t, n.RetireHeight, "its deletion scheduled as a deactivation's")
	require.NoError(t, f.k.NodeIdle(f.ctx, id), "an inactive node stays as it is")
	require.Equal(t, types.NODE_STATUS_INACTIVE, f.node(id).Status)
	msg, broken := f.k.SupplyInvariant(f.ctx)
	require.False(t, broken, msg)
	msg, broken = f.k.ChallengeQueueInvariant(f.ctx)
	require.False(t, broken, msg)

	// an idle node asked to drain is deactivated at once
	id2 := f.register(op, spec("b", 1))
	res, err = f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id2, Drain: true})
	require.NoError(t, err)
	require.Equal(t, types.NODE_STATUS_INACTIVE, res.Status)
	require.Zero(t, f.coll.locked[op])
}

// Reactivating a draining node puts it back on the market with its collateral as it was
// (locked once, not twice) and a challenge issued at once: its power comes back only with
// a passed challenge.
func TestReactivateDrainingNode(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	bob := f.operator("bob", 4)
	id := f.register(op, spec("a", 2))
	f.blocks(1)
	f.setPower(id, 500)
	f.hooks.veto = errorsmod.Wrap(types.ErrNodeBusy, "1 task in flight")
	_, err := f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id, Drain: true})
	require.NoError(t, err)

	_, err = f.ms.ReactivateNode(f.ctx, &types.MsgReactivateNode{Operator: bob, NodeId: id})
	require.ErrorIs(t, err, types.ErrNotOperator)
	res, err := f.ms.ReactivateNode(f.ctx, &types.MsgReactivateNode{Operator: op, NodeId: id})
	require.NoError(t, err)
	require.Equal(t, types.NODE_STATUS_ACTIVE, res.Status)
	n := f.node(id)
	require.Zero(t, n.PowerGflops, "no power back without a challenge")
	require.NotZero(t, n.NextChallengeHeight)
	require.Equal(t, uint64(2), f.coll.locked[op], "locked once")
	f.blocks(1)
	require.NotZero(t, f.node(id).OpenChallenge, "challenged at once")
	require.NoError(t, f.k.NodeIdle(f.ctx, id), "an active node's idle moment changes nothing")
	require.Equal(t, types.NODE_STATUS_ACTIVE, f.node(id).Status)
	msg, broken := f.k.ChallengeQueueInvariant(f.ctx)
	require.False(t, broken, msg)
}

// Drain is refused, changing nothing, while a committed challenge awaits its reveal (the
// drain must not dodge a wrong-answer slash) and when a hook vetoes for another reason than
// work in flight; without drain a busy node is refused as before.
func TestDrainRefusals(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	f.hooks.veto = errorsmod.Wrap(types.ErrNodeBusy, "1 task in flight")
	before := f.snapshot()
	err := f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.DeactivateNode(ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id})
		return err
	})
	require.ErrorIs(t, err, types.ErrNodeBusy)
	require.ErrorContains(t, err, "drain")
	f.requireUnchanged(before)

	f.hooks.veto = errors.New("store unreadable")
	err = f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.DeactivateNode(ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id, Drain: true})
		return err
	})
	require.ErrorContains(t, err, "store unreadable")
	f.requireUnchanged(before)

	f.hooks.veto = errorsmod.Wrap(types.ErrNodeBusy, "1 task in flight")
	cid := f.node(id).OpenChallenge
	f.next(3e9)
	_, err = f.ms.CommitChallenge(f.ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: cid, Root: make([]byte, 32)})
	require.NoError(t, err)
	before = f.snapshot()
	err = f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.DeactivateNode(ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id, Drain: true})
		return err
	})
	require.ErrorIs(t, err, types.ErrNodeBusy)
	require.ErrorContains(t, err, "awaits its reveal")
	f.requireUnchanged(before)
}
