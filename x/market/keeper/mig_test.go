package keeper_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// migCard puts card i of the node in MIG mode with the given instances' slices (of 7),
// each with 40960/7 MiB a slice, rounded down.
func migCard(i int, slices ...uint32) func(n *gfltypes.Node) {
	return func(n *gfltypes.Node) {
		g := &n.Gpus[i]
		g.MigSlices = 7
		for k, s := range slices {
			g.MigInstances = append(g.MigInstances, gfltypes.MigInstance{
				Uuid: fmt.Sprintf("MIG-%d-%d-%d", n.Id, i, k), Profile: fmt.Sprintf("%dg.%dgb", s, 5*s), MemoryMib: 5851 * uint64(s), Slices: s,
			})
		}
	}
}

// sharedSpec is gemmSpec of a job whose tasks may run on MIG instances (shared_gpu_ok).
func (f *fixture) sharedSpec(tasks uint32) types.JobSpec {
	spec := f.gemmSpec(tasks)
	spec.Requirements.SharedGpuOk = true
	return spec
}

func both(edits ...func(n *gfltypes.Node)) func(n *gfltypes.Node) {
	return func(n *gfltypes.Node) {
		for _, e := range edits {
			e(n)
		}
	}
}

// A card in MIG mode with 7 one-slice instances takes 7 one-GPU tasks that may share, at
// once, each on an instance of its own at a seventh of the GPU's price; a job that may not
// share never lands on an instance: it takes the node's whole GPU and waits for it, with
// the seven instances free.
func TestMIGCardTakesSevenSlicedTasks(t *testing.T) {
	f := newFixture(t, nil)
	node := f.addNode(f.operator("p1"), 2, migCard(0, 1, 1, 1, 1, 1, 1, 1))
	slot := f.slot(node)
	require.Len(t, slot.Devices, 8, "7 instances of card 0, card 1 whole")
	require.Equal(t, uint32(8), slot.Gpus)

	whole := f.gemmSpec(2)
	wholeJob := f.submit(whole)
	f.blocks(1)
	tasks := f.tasks(wholeJob)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, tasks[0].Status)
	require.Equal(t, []uint32{7}, tasks[0].Devices, "the whole GPU (card 1)")
	require.Equal(t, quote10m, tasks[0].Price, "a whole GPU's price")
	require.Equal(t, types.TASK_STATUS_PENDING, tasks[1].Status, "no second whole GPU; the instances are not for it")

	shared := f.gemmSpec(7)
	shared.Requirements.SharedGpuOk = true
	sharedJob := f.submit(shared)
	f.blocks(1)
	seen := map[uint32]bool{}
	for _, task := range f.tasks(sharedJob) {
		require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status, "task %d: the 7 at once", task.Id)
		require.Len(t, task.Devices, 1)
		d := task.Devices[0]
		require.Less(t, d, uint32(7), "an instance of card 0")
		require.False(t, seen[d], "device %d given twice", d)
		seen[d] = true
		// a seventh of 1 DPS/GPU-h for 10 minutes, rounded up
		require.Equal(t, sdkmath.NewInt(23_810), task.Price)
	}
	require.Equal(t, types.TASK_STATUS_PENDING, f.tasks(wholeJob)[1].Status)
	s := f.slot(node)
	require.Equal(t, uint32(8), s.GpusUsed)
	for i := range s.Devices {
		require.True(t, s.DeviceUsed(i), "device %d", i)
	}
	f.assertInvariants()

	// the whole GPU's task ends: the waiting one takes it, never an instance
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: sharedJob})
	require.NoError(t, err)
	require.Equal(t, uint32(1), f.slot(node).GpusUsed)
	f.blocks(2)
	require.Equal(t, types.TASK_STATUS_PENDING, f.tasks(wholeJob)[1].Status, "7 free instances, no whole GPU")
	f.assertInvariants()
}

// A two-GPU task that may share gets two instances of different cards; two of one card
// only with multi_slice_ok; without shared_gpu_ok two whole GPUs or nothing.
func TestMIGTaskSpansCards(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("p1"), 3, both(migCard(0, 3, 2, 2), migCard(1, 3, 4)))
	// devices: card 0: 0 (3 slices), 1 (2), 2 (2); card 1: 3 (3), 4 (4); card 2 whole: 5
	spec := f.gemmSpec(1)
	spec.Requirements.GpuCount, spec.Requirements.SharedGpuOk = 2, true
	a := f.submit(spec)
	spec.Requirements.MultiSliceOk = true
	b := f.submit(spec)
	spec.Requirements.SharedGpuOk, spec.Requirements.MultiSliceOk = false, false
	c := f.submit(spec)
	f.blocks(1)
	require.Equal(t, []uint32{0, 3}, f.tasks(a)[0].Devices, "an instance of each card")
	require.Equal(t, []uint32{1, 2}, f.tasks(b)[0].Devices, "two instances of card 0")
	require.Equal(t, types.TASK_STATUS_PENDING, f.tasks(c)[0].Status, "one whole GPU only")
	// a: 3/7 + 3/7 of a GPU; b: 2/7 + 2/7
	require.Equal(t, sdkmath.NewInt(142_858), f.tasks(a)[0].Price)
	require.Equal(t, sdkmath.NewInt(95_239), f.tasks(b)[0].Price)
	f.assertInvariants()
}

// A node with MIG cannot bid for, or join a pool of, work it has no devices for.
func TestMIGBidNeedsFittingDevices(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("p1")
	node := f.addNode(op, 1, migCard(0, 1, 1, 1, 1, 1, 1, 1))
	spec := f.gemmSpec(1)
	spec.Mode = types.ALLOCATION_MODE_AUCTION
	whole := f.submit(spec)
	spec.Requirements.SharedGpuOk = true
	shared := f.submit(spec)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: op, JobId: whole, NodeId: node, Price: sdkmath.NewInt(1_000_000), Quantity: 1})
	require.ErrorIs(t, err, types.ErrNodeNotEligible)
	require.ErrorContains(t, err, "whole GPUs unless shared_gpu_ok")
	_, err = f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: op, JobId: shared, NodeId: node, Price: sdkmath.NewInt(1_000_000), Quantity: 1})
	require.NoError(t, err)
	f.blocks(int(f.params().AuctionWindowBlocks) + 1)
	task := f.tasks(shared)[0]
	require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	require.Equal(t, []uint32{0}, task.Devices)
	f.assertInvariants()
}

// The slot invariant catches a device held by two tasks, and a task on an instance it may
// not use.
func TestMIGInvariantCatchesDoubleBooking(t *testing.T) {
	f := newFixture(t, nil)
	node := f.addNode(f.operator("p1"), 1, migCard(0, 1, 1, 1, 1, 1, 1, 1))
	job := f.submit(f.sharedSpec(2))
	f.blocks(1)
	tasks := f.tasks(job)
	require.Equal(t, []uint32{0}, tasks[0].Devices)
	require.Equal(t, []uint32{1}, tasks[1].Devices)
	f.assertInvariants()
	t1 := tasks[1]
	t1.Devices = []uint32{0}
	require.NoError(t, f.k.Tasks.Set(f.ctx, t1.Id, t1))
	msg, broken := f.k.SlotsInvariant(f.ctx)
	require.True(t, broken)
	require.Contains(t, msg, "another task's")
	require.Contains(t, msg, fmt.Sprintf("node %d: device 1 in use true, held by a task false", node))
}

// A provider that carves a card into 7 one-slice instances and runs 7 tasks on them has
// done one card's work, and is reported to x/dps for one card's: a task's verified work is
// its devices' share of the node's power. Before, each slice counted as a whole GPU and
// the 7 tasks reported 7 GPUs' GFLOP-seconds (7x the rewards' weight of an honest card).
func TestAttackMIGSlicesInflateVerifiedWork(t *testing.T) {
	run := func(t *testing.T, mig bool) (total sdkmath.Int, tasks int) {
		f := newFixture(t, nil)
		var edit func(n *gfltypes.Node)
		spec := f.gemmSpec(1)
		if mig {
			edit = migCard(0, 1, 1, 1, 1, 1, 1, 1)
			spec = f.sharedSpec(7)
		}
		f.addNode(f.operator("p1"), 1, edit)
		job := f.submit(spec)
		f.blocks(1)
		all := f.tasks(job)
		for _, task := range all {
			require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
			f.ack(task)
		}
		f.next(time.Minute) // a minute's run, in one block
		for _, task := range all {
			f.commit(task)
		}
		f.blocks(1)
		for _, task := range all {
			f.reveal(task)
		}
		f.blocks(int(f.params().ChallengeWindowBlocks) + 2)
		total = sdkmath.ZeroInt()
		for _, w := range f.hooks.work {
			total = total.Add(w.GflopSeconds)
		}
		f.assertInvariants()
		return total, len(f.hooks.work)
	}
	card, n := run(t, false)
	require.Equal(t, 1, n)
	require.True(t, card.IsPositive(), "a whole card's minute of verified work")
	slices, n := run(t, true)
	require.Equal(t, 7, n, "7 tasks settled")
	require.True(t, slices.LTE(card), "7 slices of a card report %s GFLOP-s, the whole card %s", slices, card)
	require.True(t, slices.MulRaw(100).GTE(card.MulRaw(99)), "and about as much: %s vs %s", slices, card)
}

// threeCards: card 0 and card 1 in MIG mode as a 3-slice and a 4-slice instance, card 2
// whole. Devices: 0 (card 0, 3 slices), 1 (card 0, 4), 2 (card 1, 3), 3 (card 1, 4), 4
// (card 2 whole).
var threeCards = both(migCard(0, 3, 4), migCard(1, 3, 4))

// runningOnMIG is a node of threeCards with two running tasks: one that may share on
// device 0, one on the whole card 2 (device 4).
func runningOnMIG(t *testing.T) (f *fixture, node uint64, shared, whole types.Task) {
	f = newFixture(t, nil)
	node = f.addNode(f.operator("p1"), 3, threeCards)
	a := f.submit(f.sharedSpec(1))
	b := f.submit(f.gemmSpec(1))
	f.blocks(1)
	shared, whole = f.tasks(a)[0], f.tasks(b)[0]
	require.Equal(t, []uint32{0}, shared.Devices)
	require.Equal(t, []uint32{4}, whole.Devices)
	require.Equal(t, uint32(360), shared.DeviceShare, "3/7 of a GPU, in 840ths")
	require.Equal(t, uint32(types.DeviceShareDen), whole.DeviceShare)
	f.ack(shared)
	f.ack(whole)
	return f, node, f.task(shared.Id), f.task(whole.Id)
}

// pinned is what the node's worker pins a task to: the UUIDs of its devices.
func (f *fixture) pinned(task types.Task) []string {
	f.t.Helper()
	uuids, err := types.DeviceUUIDs(f.gfl.nodes[task.NodeId], task.Devices)
	require.NoError(f.t, err)
	return uuids
}

// A card of a node with MIG fails under its running tasks, on other cards: the change is
// taken at once, the tasks' devices renumbered to the same devices (the worker pins the
// same UUIDs), and the lost card's devices are given no task. Before, any change of a MIG
// node's devices waited for a moment without tasks in flight, which a busy node may never
// have, while the scheduler went on giving the lost card's devices tasks, each given back
// and slashed.
func TestMIGNodeLosesACardUnderRunningTasks(t *testing.T) {
	f, node, shared, whole := runningOnMIG(t)
	pins := [][]string{f.pinned(shared), f.pinned(whole)}
	require.NoError(t, f.changeNode(node, func(n *gfltypes.Node) { n.Gpus = slices.Delete(n.Gpus, 1, 2) }))

	shared, whole = f.task(shared.Id), f.task(whole.Id)
	require.Equal(t, []uint32{0}, shared.Devices)
	require.Equal(t, []uint32{2}, whole.Devices, "card 2 is the third device now")
	require.Equal(t, pins, [][]string{f.pinned(shared), f.pinned(whole)}, "the same devices")
	s := f.slot(node)
	require.Len(t, s.Devices, 3)
	require.Equal(t, uint32(2), s.GpusUsed)
	require.Equal(t, []bool{true, false, true}, []bool{s.DeviceUsed(0), s.DeviceUsed(1), s.DeviceUsed(2)})
	f.assertInvariants()

	// two more tasks that may share: one takes the free 4-slice instance of card 0, the
	// other waits (before the change it would have taken card 1's)
	more := f.submit(f.sharedSpec(2))
	f.blocks(1)
	tasks := f.tasks(more)
	require.Equal(t, []uint32{1}, tasks[0].Devices)
	require.Equal(t, types.TASK_STATUS_PENDING, tasks[1].Status)
	f.assertInvariants()

	// the card comes back: taken too (once the new task runs), its devices free
	f.ack(tasks[0])
	require.NoError(t, f.changeNode(node, func(n *gfltypes.Node) { n.Gpus = a100(node, n.Operator, 3, threeCards).Gpus }))
	f.blocks(1)
	require.Equal(t, []uint32{2}, f.task(tasks[1].Id).Devices, "card 1's 3-slice instance")
	require.Equal(t, []uint32{4}, f.task(whole.Id).Devices)
	require.Equal(t, pins[1], f.pinned(f.task(whole.Id)))
	f.assertInvariants()
}

// A change of a MIG node's inventory under running tasks that would take away or alter a
// device one of them holds is refused, changing nothing; so is one while a task assigned
// and not yet started holds devices (its devices cannot be found without a walk of every
// assigned task): it is taken once the task runs.
func TestMIGNodeKeepsTheDevicesItsTasksHold(t *testing.T) {
	f, node, shared, _ := runningOnMIG(t)
	for _, c := range []struct {
		name string
		edit func(n *gfltypes.Node)
		want string
	}{
		{"card 0 lost", func(n *gfltypes.Node) { n.Gpus = n.Gpus[1:] }, fmt.Sprintf("task %d runs on its device 0, which the change takes away or alters", shared.Id)},
		{"card 2 into MIG mode", migCard(2, 7), "its device 4"},
		{"instance resized", func(n *gfltypes.Node) {
			n.Gpus[0].MigInstances[0].Slices, n.Gpus[0].MigInstances[0].MemoryMib = 2, 11702
		}, "its device 0"},
		{"instance moved to another card", func(n *gfltypes.Node) {
			n.Gpus[1].MigInstances[0].Uuid, n.Gpus[0].MigInstances[0].Uuid = n.Gpus[0].MigInstances[0].Uuid, n.Gpus[1].MigInstances[0].Uuid
		}, "its device 0"},
		{"out of MIG mode", func(n *gfltypes.Node) {
			for i := range n.Gpus {
				n.Gpus[i].MigInstances, n.Gpus[i].MigSlices = nil, 0
			}
		}, "its device 0"},
	} {
		before := f.snapshot()
		err := f.changeNode(node, c.edit)
		require.ErrorIs(t, err, types.ErrNodeBusy, c.name)
		require.ErrorContains(t, err, c.want, c.name)
		f.requireUnchanged(before)
	}

}

// A task assigned to a MIG node and not started holds devices the chain cannot find
// without a walk of every assigned task: a change that would move them waits for it to
// run; one that keeps their index (a card lost after them) is taken.
func TestMIGNodeChangeUnderATaskNotStarted(t *testing.T) {
	f := newFixture(t, nil)
	node := f.addNode(f.operator("p1"), 3, threeCards)
	whole := f.submit(f.gemmSpec(1))
	shared := f.submit(f.sharedSpec(1))
	f.blocks(1)
	w, sh := f.tasks(whole)[0], f.tasks(shared)[0]
	require.Equal(t, []uint32{4}, w.Devices)
	require.Equal(t, []uint32{0}, sh.Devices)

	before := f.snapshot()
	lose1 := func(n *gfltypes.Node) { n.Gpus = slices.Delete(n.Gpus, 1, 2) }
	err := f.changeNode(node, lose1)
	require.ErrorIs(t, err, types.ErrNodeBusy)
	require.ErrorContains(t, err, "its device 4 is held by a task assigned and not yet started, whose devices the change would move")
	f.requireUnchanged(before)

	f.ack(w) // running: found, and renumbered; the task on device 0 keeps its index
	require.NoError(t, f.changeNode(node, lose1))
	require.Equal(t, []uint32{2}, f.task(w.Id).Devices)
	require.Equal(t, []uint32{0}, f.task(sh.Id).Devices)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, f.task(sh.Id).Status)
	s := f.slot(node)
	require.Equal(t, []bool{true, false, true}, []bool{s.DeviceUsed(0), s.DeviceUsed(1), s.DeviceUsed(2)})
	f.assertInvariants()
	f.ack(sh)
	f.assertInvariants()
}

// A MIG node whose only card in MIG mode fails, under a task on a whole card, becomes a
// node without MIG at once: the task's devices are forgotten (its worker has pinned its
// GPU; the node's GPUs are counted), and its share stays a whole GPU's. While that task
// is not started, and while a task runs on the lost card's instances, it waits.
func TestMIGNodeLeavesMIGModeUnderATaskOnAWholeCard(t *testing.T) {
	f := newFixture(t, nil)
	node := f.addNode(f.operator("p1"), 3, migCard(0, 3, 4))
	onInstance := f.tasks(f.submit(f.sharedSpec(1)))[0]
	job := f.submit(f.gemmSpec(1))
	f.blocks(1)
	onInstance, task := f.task(onInstance.Id), f.tasks(job)[0]
	require.Equal(t, []uint32{0}, onInstance.Devices)
	require.Equal(t, []uint32{2}, task.Devices, "card 1, whole")
	f.ack(onInstance)
	lose0 := func(n *gfltypes.Node) { n.Gpus = n.Gpus[1:] }
	before := f.snapshot()
	err := f.changeNode(node, lose0)
	require.ErrorIs(t, err, types.ErrNodeBusy)
	require.ErrorContains(t, err, fmt.Sprintf("task %d runs on its device 0", onInstance.Id))
	f.requireUnchanged(before)
	_, err = f.ms.ReleaseTask(f.ctx, &types.MsgReleaseTask{Provider: onInstance.Provider, TaskId: onInstance.Id, Reason: "its GPU is gone"})
	require.NoError(t, err)

	err = f.changeNode(node, lose0)
	require.ErrorContains(t, err, "its device 2 is held by a task assigned and not yet started")
	f.ack(task)
	require.NoError(t, f.changeNode(node, lose0))
	task = f.task(task.Id)
	require.Empty(t, task.Devices)
	require.Equal(t, uint32(types.DeviceShareDen), task.DeviceShare)
	s := f.slot(node)
	require.Empty(t, s.Devices)
	require.Equal(t, uint32(2), s.Gpus)
	require.Equal(t, uint32(1), s.GpusUsed)
	f.assertInvariants()
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, gs.Validate(), "a genesis holds it")

	// cards going into MIG mode under it: refused (the chain does not know its GPU)
	before = f.snapshot()
	err = f.changeNode(node, migCard(1, 7))
	require.ErrorIs(t, err, types.ErrNodeBusy)
	require.ErrorContains(t, err, "cannot go into MIG mode under them")
	f.requireUnchanged(before)
}

// A provider runs a one-slice task on a MIG instance and, once it has revealed (its node
// free of tasks in flight), takes the card out of MIG mode so that the task's device
// index names a whole GPU: its settlement reported a whole GPU's verified work for a
// seventh of one (7x the rewards' weight). A task's share is fixed at its assignment
// (device_share).
func TestAttackMIGReshapeBeforeSettlementInflatesVerifiedWork(t *testing.T) {
	run := func(t *testing.T, reshape bool) sdkmath.Int {
		f := newFixture(t, nil)
		node := f.addNode(f.operator("p1"), 2, migCard(1, 1, 1, 1, 1, 1, 1, 1))
		job := f.submit(f.sharedSpec(1))
		f.blocks(1)
		task := f.tasks(job)[0]
		require.Equal(t, []uint32{1}, task.Devices, "a one-slice instance of card 1")
		f.ack(task)
		f.next(time.Minute)
		f.commit(task)
		f.blocks(1)
		f.reveal(task)
		if reshape {
			// card 1 whole, card 0 in MIG mode: device 1 is card 1's whole GPU now
			require.NoError(t, f.changeNode(node, func(n *gfltypes.Node) {
				n.Gpus[1].MigInstances, n.Gpus[1].MigSlices = nil, 0
				migCard(0, 7)(n)
			}))
			require.Zero(t, f.slot(node).Devices[1].Slices)
		}
		f.blocks(int(f.params().ChallengeWindowBlocks) + 2)
		require.Equal(t, types.TASK_STATUS_SETTLED, f.task(task.Id).Status)
		require.Len(t, f.hooks.work, 1)
		f.assertInvariants()
		return f.hooks.work[0].GflopSeconds
	}
	honest, reshaped := run(t, false), run(t, true)
	require.True(t, honest.IsPositive())
	require.Equal(t, honest.String(), reshaped.String(), "a seventh of a GPU's minute either way")
}
