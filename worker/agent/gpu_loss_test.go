//go:build cgo

package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/worker/gpu/gpumock"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// A card of a busy 8-GPU machine is lost (NVML answers NVML_ERROR_GPU_IS_LOST for it from
// then on) while two tasks are in flight on the node. The worker reads its GPUs again with
// its node, and the chain takes the node's spec without the card while the tasks are still
// in flight, so a job of six tasks that comes next gets five GPUs of the seven left, its
// sixth task waiting for one of them. Before, the worker read its GPUs at its start only,
// and the chain kept the eight GPUs of a node with work in flight: all six were placed,
// one on the card that was gone. Every task here ran on a card that was there, once, and
// every one was settled.
func TestWorkerTakesALostGPUOffTheChain(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorker(t, s)
	nodeID := w.agent.Node().Id
	require.Len(t, w.agent.Node().Gpus, 8)
	lost, _ := s.Dev(7).GetUUID()

	seen := filepath.Join(t.TempDir(), "seen")
	q := markettypesQuery(a)
	tasksOf := func(id uint64) []markettypes.Task { return tasksOfJob(t, a, id) }
	// The tests drive the worker block by block and it runs tasks in line, so the first
	// job's two tasks are kept in flight by not letting it act until its next tick, where
	// it reads its GPUs again (and its node) before it acks them.
	first := job(t, a, seenJob(a, seen, "first", 2))
	for range 10 {
		a.NextBlock()
	}
	loseCard(s, 7, 0)
	tick(t, a, w)
	a.NextBlock() // the update's block, if the worker's tick sent it last
	n, err := gfltypes.NewQueryClient(a.QueryConn()).Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: nodeID})
	require.NoError(t, err)
	require.Len(t, n.Node.Gpus, 7, "the lost card is off the chain")
	slot, err := q.NodeSlot(a.Ctx(), &markettypes.QueryNodeSlotRequest{NodeId: nodeID})
	require.NoError(t, err)
	require.Equal(t, uint32(2), slot.Slot.GpusUsed, "taken while the first job's tasks were in flight")
	for _, tk := range tasksOf(first.Id) {
		require.Equal(t, nodeID, tk.NodeId)
	}

	second := job(t, a, seenJob(a, seen, "second", 6))
	pending := 0
	for _, tk := range tasksOf(second.Id) {
		if tk.Status == markettypes.TASK_STATUS_PENDING {
			pending++
		}
	}
	require.Equal(t, 1, pending, "seven GPUs, two busy: five of the six tasks placed")
	untilCompleted(t, a, 120, w, first.Id, second.Id)
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 8, "each task ran once")
	for _, line := range lines {
		_, dev, _ := strings.Cut(line, " ")
		require.True(t, strings.HasPrefix(dev, "GPU-"), "a task ran without a GPU: %q", line)
		require.NotEqual(t, lost, dev, "a task ran on the lost GPU")
	}
	a.AssertInvariants()
}

// A card fails between two of the worker's reads of its node (every 10 blocks). The
// worker reads its GPUs at every block, so the node's spec without the card is on the
// chain a block later, and the scheduler gives the card no task after that. Before, the
// GPUs were read with the node: for up to 10 blocks the chain went on giving the card
// tasks, each of which then failed on the machine and was given back, its provider
// slashed abandon_slash_ppm of its bond each time.
func TestWorkerTakesALostGPUOffTheChainAtTheNextBlock(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorker(t, s)
	nodeID := w.agent.Node().Id
	gpus := func() int { return nodeGPUs(t, a, nodeID) }
	tick(t, a, w) // the worker has read its node: its next read is 10 blocks away
	require.Equal(t, 8, gpus())
	loseCard(s, 7, 0)
	tick(t, a, w)
	a.NextBlock() // the update's block
	require.Equal(t, 7, gpus(), "the lost card is off the chain a block after it failed")
	a.AssertInvariants()
}

// The worker's update of its node's spec after a card was lost does not reach the chain
// (the node it talks to is down for a moment). It is sent again at the next block.
// Before, the worker had recorded the new GPUs and never sent them again: the
// chain kept the lost card, and gave it tasks, until the worker restarted.
func TestWorkerSendsAFailedGPUUpdateAgain(t *testing.T) {
	s := gpumock.NewDGX()
	failed := 0
	a, w := dgxWorkerWith(t, s, workerWith{fail: func(msgs []sdk.Msg) error {
		if _, ok := msgs[0].(*gfltypes.MsgUpdateNode); ok && failed == 0 {
			failed++
			return errors.New("rpc error: code = Unavailable desc = connection refused")
		}
		return nil
	}}, nil)
	nodeID := w.agent.Node().Id
	gpus := func() int { return nodeGPUs(t, a, nodeID) }
	tick(t, a, w)
	loseCard(s, 7, 0)
	tick(t, a, w)
	require.Equal(t, 1, failed, "the update was sent and failed")
	require.Equal(t, 8, gpus())
	tick(t, a, w)
	a.NextBlock() // the update's block
	require.Equal(t, 7, gpus(), "sent again")
	a.AssertInvariants()
}

// A card of an idle 8-GPU machine fails after the chain gave the node a task of eight
// GPUs and before the worker started it. The worker reads its GPUs again (first at each
// tick) and has seven; the chain keeps the node's eight while the
// task holds them. The worker never runs the task on the seven cards: it gives it back at
// once (MsgReleaseTask, slashed as an abandoned task, as the ack's lapse would be), and
// the node's spec without the card lands at its next read. Before, the worker ran it on
// the seven cards that were free: the client paid for eight GPUs and had its job run on
// seven (on a machine whose other cards were busy, on none).
func TestWorkerRunsNoTaskShortOfItsGPUs(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorker(t, s)
	nodeID := w.agent.Node().Id
	seen := filepath.Join(t.TempDir(), "seen")
	spec := seenJob(a, seen, "eight", 1)
	spec.Requirements.GpuCount = 8
	spec.MaxPricePerTask = sdk.NewInt64Coin("udps", 100_000_000)
	j := job(t, a, spec)
	task := func() markettypes.Task { return tasksOfJob(t, a, j.Id)[0] }
	require.Equal(t, nodeID, task().NodeId)
	for range 10 { // the worker's next read of its node comes with its next tick
		a.NextBlock()
	}
	loseCard(s, 7, 0)
	tick(t, a, w)
	gpus := func() int { return nodeGPUs(t, a, nodeID) }
	require.Equal(t, 8, gpus(), "refused under the task")
	got := task()
	require.Equal(t, markettypes.TASK_STATUS_PENDING, got.Status, "given back")
	require.Contains(t, got.ExcludedNodes, nodeID)
	require.NoFileExists(t, seen, "the task ran short of its GPUs")
	requireGivenBack(t, a, "p1", j.Id, "its GPUs are not on the machine: it needs 8 GPUs and the machine has 7")

	// the worker reads its node again at once after a release, and sends the spec the
	// chain refused under the task: it lands at the next tick, not nodeRefreshBlocks later
	until(t, a, 2, "the node's seven GPUs on the chain", func() bool { return gpus() == 7 }, w)
	require.NoFileExists(t, seen, "the task ran here")
	a.AssertInvariants()
}

// The same with a task already running (acked; here by hand, as a worker that stopped
// before running it would have): the worker, back with seven cards, gives it back at once
// instead of heartbeating a task it cannot run until its run deadline.
func TestWorkerGivesBackARunningTaskShortOfItsGPUs(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorker(t, s)
	spec := seenJob(a, filepath.Join(t.TempDir(), "seen"), "eight", 1)
	spec.Requirements.GpuCount = 8
	spec.MaxPricePerTask = sdk.NewInt64Coin("udps", 100_000_000)
	j := job(t, a, spec)
	a.MustDeliver("p1", &markettypes.MsgAckTask{Provider: a.Account("p1").String(), TaskId: j.FirstTaskId})
	require.Equal(t, markettypes.TASK_STATUS_RUNNING, tasksOfJob(t, a, j.Id)[0].Status)
	for range 10 {
		a.NextBlock()
	}
	loseCard(s, 7, 0)
	tick(t, a, w)
	got := tasksOfJob(t, a, j.Id)[0]
	require.Equal(t, markettypes.TASK_STATUS_PENDING, got.Status, "given back")
	require.Contains(t, got.ExcludedNodes, w.agent.Node().Id)
	requireGivenBack(t, a, "p1", j.Id, "its GPUs are not on the machine: it needs 8 GPUs and the machine has 7")
	a.AssertInvariants()
}

// A card fails under a task whose run hangs on it (a CUDA call that never returns, here a
// sleep). At its next read of its GPUs the worker stops the run and gives the task back,
// which goes to another node. Before, the run hung until its max_duration (ten minutes
// here), the task heartbeated as running all the while.
func TestWorkerStopsTheRunsOnALostGPU(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorkerWith(t, s, workerWith{beside: true}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	w.agent.RunBeside(&g)
	t.Cleanup(func() { cancel(); _ = g.Wait() })
	step := func() {
		w.mu.Lock()
		a.NextBlock()
		h, bt := a.Height(), a.BlockTime()
		w.mu.Unlock()
		require.NoError(t, w.agent.Tick(ctx, h, bt))
	}
	started := filepath.Join(t.TempDir(), "started")
	spec := seenJob(a, started, "hang", 1)
	spec.Command = []string{"sh", "-c", `echo "$CUDA_VISIBLE_DEVICES" > "$SEEN"; exec sleep 600`}
	var j markettypes.Job
	w.mu.Lock()
	j = job(t, a, spec)
	w.mu.Unlock()
	card0, _ := s.Dev(0).GetUUID()
	// the card the task is given (the machine's first) fails as it starts, after the
	// tick's read of the machine's GPUs
	loseCard(s, 0, 1)
	step()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(started)
		return err == nil && strings.TrimSpace(string(b)) == card0
	}, 10*time.Second, 20*time.Millisecond, "the run started on card 0")
	task := func() markettypes.Task {
		w.mu.Lock()
		defer w.mu.Unlock()
		return tasksOfJob(t, a, j.Id)[0]
	}
	for i := 0; task().Status != markettypes.TASK_STATUS_PENDING; i++ {
		require.Less(t, i, 15, "the task given back within the worker's next read of its GPUs")
		step()
		for deadline := time.Now().Add(time.Second); task().Status != markettypes.TASK_STATUS_PENDING && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Contains(t, tasksOfJob(t, a, j.Id)[0].ExcludedNodes, w.agent.Node().Id)
	requireGivenBack(t, a, "p1", j.Id, "a GPU of the run is gone from the machine")
	a.AssertInvariants()
}

// requireGivenBack: the provider named gave its task of the job back (MsgReleaseTask,
// why in the job's last history entry) and was slashed once, as for an abandoned task.
func requireGivenBack(t *testing.T, a *apptest.App, provider string, job uint64, why string) {
	t.Helper()
	hist, err := markettypesQuery(a).JobHistory(a.Ctx(), &markettypes.QueryJobHistoryRequest{JobId: job})
	require.NoError(t, err)
	require.Contains(t, hist.Entries[len(hist.Entries)-1].Detail, "released by its provider: "+why)
	slashes, err := sstypes.NewQueryClient(a.QueryConn()).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account(provider).String()})
	require.NoError(t, err)
	require.Len(t, slashes.Slashes, 1)
	require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, slashes.Slashes[0].Reason)
}

// A card fails under a task that runs on it, and the job's command exits non-zero. The
// failure is the machine's, not the job's: the worker gives the task back (a lapse's
// slash) instead of reporting that the job failed, which another node's result would
// refute (a refuted report is slashed as a wrong result). Before, it reported the exit.
func TestWorkerGivesBackATaskWhoseGPUWasLostUnderIt(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorker(t, s)
	nodeID := w.agent.Node().Id
	spec := seenJob(a, filepath.Join(t.TempDir(), "seen"), "lost", 1)
	spec.Command = []string{"sh", "-c", "echo 'CUDA error: unspecified launch failure' >&2; exit 3"}
	j := job(t, a, spec)
	require.Equal(t, nodeID, tasksOfJob(t, a, j.Id)[0].NodeId)
	// the card the task is given (the machine's first) is lost under the run, after the
	// tick's read of the machine's GPUs
	loseCard(s, 0, 1)
	tick(t, a, w)
	got := tasksOfJob(t, a, j.Id)[0]
	require.Equal(t, markettypes.TASK_STATUS_PENDING, got.Status, "given back")
	require.Empty(t, got.Failures, "no failure reported")
	require.Contains(t, got.ExcludedNodes, nodeID)
	requireGivenBack(t, a, "p1", j.Id, "a GPU of the run is gone from the machine")
	a.AssertInvariants()
}

// A MIG node's card fails while a task holds a device of another card: the change lands
// at the next block, under the task (its device keeps its index), and the devices after
// the lost card are numbered one card lower. The next task the chain gives device 7,
// which is now card 2, runs on card 2. Before, the worker went on mapping device indices
// on the node as it read it before the update (up to 10 blocks old), so the task ran on
// card 1, the card that was gone.
func TestWorkerMapsDevicesOnTheNodeItJustUpdated(t *testing.T) {
	s, _ := dgxCard0InSevenSlices(t)
	a, w := dgxWorker(t, s)
	nodeID := w.agent.Node().Id
	card1, _ := s.Dev(1).GetUUID()
	card2, _ := s.Dev(2).GetUUID()
	gpus := func() int { return nodeGPUs(t, a, nodeID) }

	seen := filepath.Join(t.TempDir(), "seen")
	shared := seenJob(a, seen, "first", 1)
	shared.Requirements.SharedGpuOk = true // a MIG instance of card 0
	first := job(t, a, shared)
	require.Less(t, tasksOfJob(t, a, first.Id)[0].Devices[0], uint32(7))
	for range 10 { // the worker's next read of its node comes with its next tick
		a.NextBlock()
	}
	loseCard(s, 1, 0)
	tick(t, a, w)
	require.Equal(t, 7, gpus(), "taken under the task")
	untilCompleted(t, a, 40, w, first.Id)

	second := job(t, a, seenJob(a, seen, "second", 1)) // a whole GPU
	require.Equal(t, []uint32{7}, tasksOfJob(t, a, second.Id)[0].Devices, "the first whole GPU: card 2 now")
	untilCompleted(t, a, 40, w, second.Id)
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	require.Contains(t, string(b), "second "+card2+"\n")
	require.NotContains(t, string(b), card1)
	a.AssertInvariants()
}

// A MIG node's card fails under a task assigned to it and not started: the chain refuses
// the node's spec without the card until the task is given back (the worker does so at
// once: its GPU is gone), and the worker sends the spec again at the next block, where
// it lands. Before, it was sent again only at the worker's reads of its node (every 10
// blocks), and the chain refused any change of a MIG node's devices while a task was in
// flight: a node whose tasks follow each other closely could pass every such block busy,
// and the chain went on giving the lost card's devices tasks, each given back and
// slashed.
func TestWorkerSendsARefusedMIGUpdateAtEachBlock(t *testing.T) {
	s, _ := dgxCard0InSevenSlices(t)
	a, w := dgxWorker(t, s)
	nodeID := w.agent.Node().Id
	gpus := func() int { return nodeGPUs(t, a, nodeID) }
	updates := func() int { // the MsgUpdateNode the worker sent
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		for _, u := range *w.sent {
			if u == sdk.MsgTypeURL(&gfltypes.MsgUpdateNode{}) {
				n++
			}
		}
		return n
	}
	first := job(t, a, seenJob(a, filepath.Join(t.TempDir(), "seen"), "first", 1))
	require.Equal(t, []uint32{7}, tasksOfJob(t, a, first.Id)[0].Devices, "a whole GPU: card 1")
	for range 10 { // the worker's next read of its node comes with its next tick
		a.NextBlock()
	}
	loseCard(s, 1, 0)
	tick(t, a, w) // reads its node, and its GPUs: the update is refused, the task given back
	require.Equal(t, 8, gpus(), "refused under the task not given back yet")
	require.Equal(t, 1, updates())
	tick(t, a, w) // its next read of its node is 10 blocks away
	require.Equal(t, 2, updates(), "sent again at the next block")
	require.Equal(t, 7, gpus(), "landed once the task was given back")
	requireGivenBack(t, a, "p1", first.Id, "its GPUs are not on the machine")
	tick(t, a, w)
	require.Equal(t, 2, updates(), "not sent again once landed")
	a.AssertInvariants()
}

// devicesSeen is a PoCP solver (the Go solver's answers) that records the GPUs each
// challenge was given to spread over.
type devicesSeen struct {
	wpocp.Solver
	mu   sync.Mutex
	seen [][]string
}

func (d *devicesSeen) Solve(ctx context.Context, c gflpocp.Challenge) ([]int32, error) {
	d.mu.Lock()
	d.seen = append(d.seen, wpocp.DevicesOf(ctx))
	d.mu.Unlock()
	return d.Solver.Solve(ctx, c)
}

// A card lost while the node's tasks hold every GPU: the chain refuses the node's spec
// without it (eight GPUs held, seven left), so the node keeps eight GPUs on the chain
// meanwhile. The PoCP challenge answered then is spread over the seven cards there:
// before, the worker gave its solver every GPU of the registered node, the lost card
// included, on which an external solver's program fails.
func TestWorkerAnswersChallengesOnTheGPUsItHas(t *testing.T) {
	s := gpumock.NewDGX()
	solver := &devicesSeen{Solver: wpocp.NewGoSolver(1)}
	a, w := dgxWorkerWith(t, s, workerWith{solver: solver}, nil)
	nodeID := w.agent.Node().Id
	lost, _ := s.Dev(7).GetUUID()
	gq := gfltypes.NewQueryClient(a.QueryConn())
	first := job(t, a, seenJob(a, filepath.Join(t.TempDir(), "seen"), "first", 8))
	for range 10 {
		a.NextBlock()
	}
	loseCard(s, 7, 0)
	solver.mu.Lock()
	solver.seen = nil
	solver.mu.Unlock()
	tick(t, a, w)
	n, err := gq.Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: nodeID})
	require.NoError(t, err)
	require.Len(t, n.Node.Gpus, 8, "refused: the tasks hold eight")
	until(t, a, 60, "a challenge answered", func() bool {
		solver.mu.Lock()
		defer solver.mu.Unlock()
		return len(solver.seen) > 0
	}, w)
	solver.mu.Lock()
	got := solver.seen[0]
	solver.mu.Unlock()
	require.Len(t, got, 7)
	require.NotContains(t, got, lost)
	untilCompleted(t, a, 80, w, first.Id)
}

// A worker bid on an auction of a task that needs all eight of its GPUs; a card is lost
// before the close. The chain takes the node's seven GPUs, and a winner whose node no
// longer fits the job forfeits its deposit at the close: the worker withdraws that bid at
// once (the auction is not full, so the bid is not binding), and its deposit comes back.
// Before, the bid stood.
func TestWorkerWithdrawsBidsItsNodeNoLongerFits(t *testing.T) {
	s := gpumock.NewDGX()
	a, w := dgxWorkerWith(t, s, workerWith{}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	nodeID := w.agent.Node().Id
	spec := gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION)
	spec.TaskCount, spec.Requirements.GpuCount = 1, 8
	spec.MaxPricePerTask = sdk.NewInt64Coin("udps", 100_000_000)
	j := job(t, a, spec)
	until(t, a, 10, "a bid on the auction", func() bool { return bidsOn(t, a, j.Id) > 0 }, w)

	loseCard(s, 7, 0)
	gq := gfltypes.NewQueryClient(a.QueryConn())
	until(t, a, 20, "the node has seven GPUs and its bid is withdrawn", func() bool {
		n, err := gq.Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: nodeID})
		require.NoError(t, err)
		return len(n.Node.Gpus) == 7 && bidsOn(t, a, j.Id) == 0
	}, w)
	a.AssertInvariants()
}

// loseCard has card i answer NVML's memory query reads more times, then report itself
// lost (NVML_ERROR_GPU_IS_LOST) for good: with reads > 0, a card that fails after the
// worker read it.
func loseCard(s *gpumock.DGX, i, reads int) {
	dev := s.Dev(i)
	was := dev.GetMemoryInfoFunc
	var mu sync.Mutex
	dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		mu.Lock()
		defer mu.Unlock()
		if reads > 0 {
			reads--
			return was()
		}
		return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST
	}
}

// nodeGPUs is how many GPUs the chain lists for the node.
func nodeGPUs(t *testing.T, a *apptest.App, nodeID uint64) int {
	t.Helper()
	n, err := gfltypes.NewQueryClient(a.QueryConn()).Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: nodeID})
	require.NoError(t, err)
	return len(n.Node.Gpus)
}
