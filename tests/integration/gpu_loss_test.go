package integration

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	abci "github.com/cometbft/cometbft/abci/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// A GPU of a busy node fails (it fell off the bus, say): its provider's worker sends the
// node's spec without it. Before, x/gfl refused any change of a node's GPUs while it had
// a task in flight, so a node that was never idle kept its registered GPUs for good and
// the scheduler kept giving tasks to the card that was gone, which then ran on no GPU and
// failed on that machine. Now the change is taken while the tasks in flight keep enough
// GPUs: the node has one GPU fewer at once, its collateral lock follows, and the next job
// gets only the GPUs that are left. A change that the tasks in flight would not survive
// (fewer GPUs than they hold, another class, on a node with MIG a device a task holds) is
// still refused, and changes nothing; on a node with MIG, whose tasks the chain gave exact
// devices, a change that keeps them renumbers them, once they run.
func TestBusyNodeLosesAGPU(t *testing.T) {
	a, nodes := marketAppLate(t, 2, 0, nil)
	id := bondAndRegister(t, a, "p1", 4)
	nodes["p1"] = id
	op := a.Account("p1")
	first := submit(t, a, gemmJob(a, 3, markettypes.ALLOCATION_MODE_ASSIGN))
	for _, tk := range jobTasks(t, a, first) {
		require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, tk.Status, "task %d", tk.Id)
	}
	slot := func() markettypes.NodeSlot {
		s, err := a.MarketKeeper.Slots.Get(a.Ctx(), id)
		require.NoError(t, err)
		return s
	}
	locked := func() uint64 {
		c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), op.Address)
		require.NoError(t, err)
		return c.LockedGpus
	}
	require.Equal(t, uint32(3), slot().GpusUsed)
	require.Equal(t, uint64(4), locked())

	update := func(spec gfltypes.NodeSpec) (uint32, string) {
		r := a.Deliver("p1", &gfltypes.MsgUpdateNode{Operator: op.String(), NodeId: id, Spec: spec})
		return r.Code, r.Log
	}
	refused := func(spec gfltypes.NodeSpec, why string) {
		t.Helper()
		before := slot()
		code, log := update(spec)
		require.Equal(t, gfltypes.ErrNodeBusy.ABCICode(), code, log)
		require.Contains(t, log, why)
		require.Equal(t, before, slot(), "a refused change changes nothing")
		n, err := a.GFLKeeper.GetNode(a.Ctx(), id)
		require.NoError(t, err)
		require.Len(t, n.Gpus, 4)
		require.Equal(t, uint64(4), locked())
	}

	// GPU 3 is gone: three GPUs still cover the three tasks
	spec := a100("p1", 4)
	spec.Gpus = spec.Gpus[:3]
	// two GPUs would not, nor a class the tasks were not matched in
	refused(a100("p1", 2), "node 1 has 3 tasks in flight on 3 GPUs: the change leaves 2")
	h100 := a100("p1", 4)
	for i := range h100.Gpus {
		h100.Gpus[i].Model, h100.Gpus[i].MemoryMib, h100.Gpus[i].ComputeCapability = "NVIDIA H100 80GB HBM3", 81559, "9.0"
	}
	refused(h100, "its class cannot change")

	code, log := update(spec)
	require.Zero(t, code, log)
	s := slot()
	require.Equal(t, uint32(3), s.Gpus, "the gone card is out of the slot")
	require.Equal(t, uint32(3), s.GpusUsed, "the tasks in flight keep theirs")
	require.Equal(t, uint64(3), locked(), "one GPU's collateral unlocked")
	n, err := a.GFLKeeper.GetNode(a.Ctx(), id)
	require.NoError(t, err)
	require.Len(t, n.Gpus, 3)

	// the next job waits for a GPU that is there, where before it took the gone one
	second := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN))
	require.Equal(t, markettypes.TASK_STATUS_PENDING, jobTasks(t, a, second)[0].Status)
	for _, tk := range jobTasks(t, a, first) {
		run(t, a, nodes, tk)
	}
	a.NextBlock()
	tk := jobTasks(t, a, second)[0]
	require.NotEqual(t, markettypes.TASK_STATUS_PENDING, tk.Status, "assigned once a GPU freed")
	require.Equal(t, id, tk.NodeId)

	// the card comes back while the node is busy: taken too, locking its collateral again
	code, log = update(a100("p1", 4))
	require.Zero(t, code, log)
	require.Equal(t, uint32(4), slot().Gpus)
	require.Equal(t, uint64(4), locked())

	// a node with MIG: its tasks hold exact devices, which a new inventory renumbers when
	// it keeps them (by UUID, alike), once the tasks holding them run
	mig := a100("p2", 3)
	mig.Region = "us-east"
	for i, name := range []string{"a", "b"} {
		mig.Gpus[i].MigCapable, mig.Gpus[i].MigSlices = true, 7
		mig.Gpus[i].MigInstances = []gfltypes.MigInstance{{Uuid: "MIG-p2-" + name + "0", MemoryMib: 19968, Slices: 3}, {Uuid: "MIG-p2-" + name + "1", MemoryMib: 19968, Slices: 3}}
	}
	p2 := a.Account("p2")
	a.MustDeliver("p2", &sstypes.MsgBond{Provider: p2.String(), Amount: sdk.NewInt64Coin(udps, 300_000_000)},
		&gfltypes.MsgRegisterNode{Operator: p2.String(), Spec: mig})
	onMIG := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	onMIG.Requirements.Region = "us-east"
	third := submit(t, a, onMIG)
	migTask := jobTasks(t, a, third)[0]
	require.Equal(t, []uint32{4}, migTask.Devices, "the whole card 2")
	migNode := func() gfltypes.Node {
		n, err := a.GFLKeeper.GetNode(a.Ctx(), migTask.NodeId)
		require.NoError(t, err)
		return n
	}
	pinned, err := markettypes.DeviceUUIDs(migNode(), migTask.Devices)
	require.NoError(t, err)
	require.Equal(t, []string{mig.Gpus[2].Uuid}, pinned)
	updateMIG := func(edit func(s *gfltypes.NodeSpec)) *abci.ExecTxResult {
		spec := mig
		spec.Gpus = slices.Clone(mig.Gpus)
		edit(&spec)
		return a.Deliver("p2", &gfltypes.MsgUpdateNode{Operator: p2.String(), NodeId: migTask.NodeId, Spec: spec})
	}
	loseCard := func(i int) func(s *gfltypes.NodeSpec) {
		return func(s *gfltypes.NodeSpec) { s.Gpus = slices.Delete(s.Gpus, i, i+1) }
	}
	r := updateMIG(loseCard(0))
	require.Equal(t, gfltypes.ErrNodeBusy.ABCICode(), r.Code, r.Log)
	require.Contains(t, r.Log, "held by a task assigned and not yet started")
	a.MustDeliver("p2", &markettypes.MsgAckTask{Provider: p2.String(), TaskId: migTask.Id})
	r = updateMIG(loseCard(2))
	require.Equal(t, gfltypes.ErrNodeBusy.ABCICode(), r.Code, r.Log)
	require.Contains(t, r.Log, "runs on its device 4, which the change takes away or alters")
	require.Len(t, migNode().Gpus, 3)

	r = updateMIG(loseCard(0))
	require.Zero(t, r.Code, r.Log)
	migTask = jobTasks(t, a, third)[0]
	require.Equal(t, markettypes.TASK_STATUS_RUNNING, migTask.Status)
	require.Equal(t, []uint32{2}, migTask.Devices, "card 2 is device 2 now")
	again, err := markettypes.DeviceUUIDs(migNode(), migTask.Devices)
	require.NoError(t, err)
	require.Equal(t, pinned, again, "the worker pins the same GPU")
	ms, err := a.MarketKeeper.Slots.Get(a.Ctx(), migTask.NodeId)
	require.NoError(t, err)
	require.Len(t, ms.Devices, 3)
	require.True(t, ms.DeviceUsed(2))
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), p2.Address)
	require.NoError(t, err)
	require.Equal(t, uint64(2), c.LockedGpus, "the lost card's collateral unlocked")
	a.AssertInvariants()
}
