package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// drainApp: p1's node of 2 GPUs runs a job of 2 tasks; p2 has no node yet.
func drainApp(t *testing.T) (*apptest.App, map[string]uint64, uint64, []markettypes.Task) {
	a, nodes := marketAppLate(t, 2, 0, nil)
	id := bondAndRegister(t, a, "p1", 2)
	nodes["p1"] = id
	job := submit(t, a, gemmJob(a, 2, markettypes.ALLOCATION_MODE_ASSIGN))
	tasks := jobTasks(t, a, job)
	for _, tk := range tasks {
		require.Equal(t, id, tk.NodeId)
	}
	return a, nodes, id, tasks
}

func drain(t *testing.T, a *apptest.App, name string, id uint64) gfltypes.NodeStatus {
	t.Helper()
	res := a.MustDeliver(name, &gfltypes.MsgDeactivateNode{Operator: a.Account(name).String(), NodeId: id, Drain: true})
	var md sdk.TxMsgData
	require.NoError(t, md.Unmarshal(res.Data))
	require.Len(t, md.MsgResponses, 1)
	var out gfltypes.MsgDeactivateNodeResponse
	require.NoError(t, out.Unmarshal(md.MsgResponses[0].Value))
	return out.Status
}

func gflNode(t *testing.T, a *apptest.App, id uint64) gfltypes.Node {
	t.Helper()
	n, err := a.GFLKeeper.GetNode(a.Ctx(), id)
	require.NoError(t, err)
	return n
}

func lockedGPUs(t *testing.T, a *apptest.App, name string) uint64 {
	t.Helper()
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account(name).Address)
	require.NoError(t, err)
	return c.LockedGpus
}

// A provider takes a busy node down for maintenance: a plain deactivation is refused while
// its tasks run, and a busy node may never be idle (the scheduler refills its GPUs). With
// drain the node leaves the market at once: no new task (the next job goes to another
// node), its power burned, collateral still locked under the tasks; the tasks it holds run
// to the end and are paid, and the last one's end deactivates it and unlocks its
// collateral.
func TestDrainBusyNodeFinishesItsTasksAndLeaves(t *testing.T) {
	a, nodes, id, tasks := drainApp(t)
	r := a.Deliver("p1", &gfltypes.MsgDeactivateNode{Operator: a.Account("p1").String(), NodeId: id})
	require.Equal(t, gfltypes.ErrNodeBusy.ABCICode(), r.Code, r.Log)
	require.Contains(t, r.Log, "2 tasks in flight")

	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, drain(t, a, "p1", id))
	n := gflNode(t, a, id)
	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, n.Status)
	require.Zero(t, n.PowerGflops)
	require.Equal(t, uint64(2), lockedGPUs(t, a, "p1"), "collateral locked under the tasks in flight")
	s, err := a.MarketKeeper.Slots.Get(a.Ctx(), id)
	require.NoError(t, err)
	require.False(t, s.Active, "out of the scheduling index")
	require.Equal(t, uint32(2), s.Tasks)
	a.AssertInvariants()

	// the first task ends; a new job goes to another node, never to the draining one
	run(t, a, nodes, tasks[0])
	a.NextBlock()
	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, gflNode(t, a, id).Status, "one task still in flight")
	next := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN))
	require.Equal(t, markettypes.TASK_STATUS_PENDING, jobTasks(t, a, next)[0].Status, "the draining node's free GPU takes nothing")
	registerLate(t, a, nodes, "p2")
	a.NextBlock()
	require.Equal(t, nodes["p2"], jobTasks(t, a, next)[0].NodeId)

	run(t, a, nodes, tasks[1])
	n = gflNode(t, a, id)
	require.Equal(t, gfltypes.NODE_STATUS_INACTIVE, n.Status, "deactivated with its last task's end")
	require.NotZero(t, n.RetireHeight)
	require.Zero(t, lockedGPUs(t, a, "p1"), "collateral unlocked")
	a.NextBlocks(10) // the challenge window
	for _, tk := range jobTasks(t, a, tasks[0].JobId) {
		require.Equal(t, markettypes.TASK_STATUS_SETTLED, task(t, a, tk.Id).Status, "task %d paid", tk.Id)
	}
	a.AssertInvariants()

	// back after the maintenance: reactivated, it waits for a challenge to earn power again
	res := a.MustDeliver("p1", &gfltypes.MsgReactivateNode{Operator: a.Account("p1").String(), NodeId: id})
	require.NotNil(t, res)
	require.Equal(t, gfltypes.NODE_STATUS_ACTIVE, gflNode(t, a, id).Status)
	require.Equal(t, uint64(2), lockedGPUs(t, a, "p1"))
	a.AssertInvariants()
}

// TestAttackDrainThenUnbondAndWalkAway: a provider drains its busy node, then tries to take
// its collateral out and abandon the tasks, so that their lapse finds nothing to slash. The
// drain keeps the node's collateral locked until its last task in flight ends: the unbond
// is refused, and the abandoned tasks' lapse slashes the bond; the lapse (the last task's
// end) then deactivates the node.
func TestAttackDrainThenUnbondAndWalkAway(t *testing.T) {
	a, _, id, tasks := drainApp(t)
	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, drain(t, a, "p1", id))
	bond := bonded(t, a, "p1")
	r := a.Deliver("p1", &sstypes.MsgUnbond{Provider: a.Account("p1").String(), Amount: sdk.NewCoin(udps, bond)})
	require.NotZero(t, r.Code, "all of a draining node's collateral unbonded: %s", r.Log)
	require.Equal(t, bond.String(), bonded(t, a, "p1").String())

	p, err := a.MarketKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	a.NextBlocks(int(p.AckTimeoutBlocks) + 1) // never acked: the provider walked away
	lost := bond.Sub(bonded(t, a, "p1"))
	require.True(t, lost.IsPositive(), "the abandoned tasks are slashed")
	for _, tk := range tasks {
		require.NotEqual(t, id, task(t, a, tk.Id).NodeId, "task %d left the node", tk.Id)
	}
	require.Equal(t, gfltypes.NODE_STATUS_INACTIVE, gflNode(t, a, id).Status, "deactivated once its tasks left")
	require.Zero(t, lockedGPUs(t, a, "p1"))
	a.AssertInvariants()
}

// TestAttackDrainToSkipChallengesKeepsNoPower: a node that drains (or drains and comes back)
// to get out of a PoCP challenge it would fail keeps no power: the drain burns it at once,
// a draining node earns none, and a reactivated one earns it again only through a
// challenge issued at its return.
func TestAttackDrainToSkipChallengesKeepsNoPower(t *testing.T) {
	a, _, id, _ := drainApp(t)
	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, drain(t, a, "p1", id))
	require.Zero(t, gflNode(t, a, id).PowerGflops)
	require.True(t, a.BankKeeper.GetBalance(a.Ctx(), a.Account("p1").Address, gfltypes.Denom).IsZero(), "no ugfl while draining")
	a.MustDeliver("p1", &gfltypes.MsgReactivateNode{Operator: a.Account("p1").String(), NodeId: id})
	n := gflNode(t, a, id)
	require.Equal(t, gfltypes.NODE_STATUS_ACTIVE, n.Status)
	require.Zero(t, n.PowerGflops)
	require.NotZero(t, n.OpenChallenge, "challenged in the block of its return")
	a.AssertInvariants()
}
