package keeper_test

import (
	"fmt"
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
	spec := f.gemmSpec(2)
	spec.Requirements.SharedGpuOk = true
	job := f.submit(spec)
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
			spec = f.gemmSpec(7)
			spec.Requirements.SharedGpuOk = true
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
