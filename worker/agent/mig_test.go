//go:build cgo

package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/gpu/gpumock"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// MIG on the chain, end to end: a worker on go-nvml's DGX A100 mock, GPU 0 in MIG mode
// with 7 one-slice instances and the other 7 whole, registers the instances as devices of
// their own. A job that may not share gets whole GPUs only: its 8th task waits with the 7
// instances free. A job of 7 tasks that may share takes the 7 instances at once. The
// worker runs each task on exactly the device the chain gave it (its
// CUDA_VISIBLE_DEVICES), every task is settled, and the slot invariant held throughout.
func TestWorkerRunsTasksOnTheMIGInstancesTheChainGave(t *testing.T) {
	s, migs := dgxCard0InSevenSlices(t)
	a, w := dgxWorker(t, s)
	node := w.agent.Node()
	require.Len(t, node.Gpus, 8)
	require.Len(t, node.Gpus[0].MigInstances, 7)
	require.Equal(t, uint32(7), node.Gpus[0].MigSlices)
	q := markettypesQuery(a)
	slot, err := q.NodeSlot(a.Ctx(), &markettypes.QueryNodeSlotRequest{NodeId: node.Id})
	require.NoError(t, err)
	require.Len(t, slot.Slot.Devices, 14, "7 instances and 7 whole GPUs")

	seen := filepath.Join(t.TempDir(), "seen")
	spec := func(tag string, tasks uint32, shared bool) markettypes.JobSpec {
		s := seenJob(a, seen, tag, tasks)
		s.Requirements.SharedGpuOk = shared
		return s
	}
	whole := job(t, a, spec("whole", 8, false))
	shared := job(t, a, spec("shared", 7, true))
	tasksOf := func(id uint64) []markettypes.Task { return tasksOfJob(t, a, id) }
	// both jobs are in: 7 whole GPUs and 7 instances taken, the 8th whole task waiting
	sharedDevices := map[uint32]bool{}
	for _, tk := range tasksOf(shared.Id) {
		require.NotEqual(t, markettypes.TASK_STATUS_PENDING, tk.Status, "task %d: the 7 at once", tk.Id)
		require.Len(t, tk.Devices, 1)
		require.Less(t, tk.Devices[0], uint32(7), "an instance of GPU 0")
		sharedDevices[tk.Devices[0]] = true
	}
	require.Len(t, sharedDevices, 7, "each on an instance of its own")
	pending := 0
	for _, tk := range tasksOf(whole.Id) {
		if tk.Status == markettypes.TASK_STATUS_PENDING {
			pending++
			continue
		}
		require.GreaterOrEqual(t, tk.Devices[0], uint32(7), "task %d on a whole GPU", tk.Id)
	}
	require.Equal(t, 1, pending, "no 8th whole GPU: it waits")

	untilCompleted(t, a, 80, w, whole.Id, shared.Id)
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	var migUUIDs []string
	for _, m := range migs {
		u, _ := m.GetUUID()
		migUUIDs = append(migUUIDs, u)
	}
	ran := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		tag, dev, _ := strings.Cut(line, " ")
		ran[tag] = append(ran[tag], dev)
	}
	require.Len(t, ran["whole"], 8)
	require.Len(t, ran["shared"], 7)
	for _, dev := range ran["whole"] {
		require.True(t, strings.HasPrefix(dev, "GPU-"), "a whole-GPU task ran on %q", dev)
	}
	slices.Sort(ran["shared"])
	slices.Sort(migUUIDs)
	require.Equal(t, migUUIDs, ran["shared"], "each shared task on the instance the chain gave it")
	for _, tk := range append(tasksOf(whole.Id), tasksOf(shared.Id)...) {
		require.Equal(t, markettypes.TASK_STATUS_SETTLED, tk.Status)
	}
	a.AssertInvariants()
}

// seenJob is a PROCESS job of tasks of one GPU each that append "TAG CUDA_VISIBLE_DEVICES"
// to the file seen, each line the devices a task ran on.
func seenJob(a *apptest.App, seen, tag string, tasks uint32) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS,
		Command:   []string{"sh", "-c", `echo "$TAG $CUDA_VISIBLE_DEVICES" >> "$SEEN"; echo ok > "$FLOPS_OUTPUT_DIR/out"`},
		Env:       []markettypes.EnvVar{{Name: "SEEN", Value: seen}, {Name: "TAG", Value: tag}},
		TaskCount: tasks, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		Requirements:    markettypes.Requirements{GpuCount: 1},
		MaxPricePerTask: sdk.NewInt64Coin("udps", 2_000_000), MaxDuration: 10 * time.Minute, Deadline: a.BlockTime().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin("udps", 0), Mode: markettypes.ALLOCATION_MODE_ASSIGN, VerificationBudget: sdk.NewInt64Coin("udps", 0),
	}
}

// tasksOfJob is a job's tasks, as the chain has them.
func tasksOfJob(t *testing.T, a *apptest.App, id uint64) []markettypes.Task {
	t.Helper()
	res, err := markettypesQuery(a).TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: id})
	require.NoError(t, err)
	return res.Tasks
}

// untilCompleted steps blocks, the workers acting, until every job named is completed.
func untilCompleted(t *testing.T, a *apptest.App, limit int, w *worker, jobs ...uint64) {
	t.Helper()
	until(t, a, limit, fmt.Sprintf("jobs %v completed", jobs), func() bool {
		for _, id := range jobs {
			res, err := markettypesQuery(a).Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: id})
			require.NoError(t, err)
			if res.Job.Status != markettypes.JOB_STATUS_COMPLETED {
				return false
			}
		}
		return true
	}, w)
}

// dgxWorker is an app with provider p1 and p1's worker on the DGX mock s (8 GPUs bonded).
// Every tx of the worker is a block of its own here: a tick acking or committing 14 tasks
// spans 15 blocks, so the ack window is wider than the default 20.
func dgxWorker(t *testing.T, s *gpumock.DGX) (*apptest.App, *worker) {
	t.Helper()
	return dgxWorkerWith(t, s, workerWith{}, nil)
}

// dgxWorkerWith is dgxWorker with what with gives, and the market's params edited (nil:
// as dgxWorker's).
func dgxWorkerWith(t *testing.T, s *gpumock.DGX, with workerWith, edit func(*markettypes.Params)) (*apptest.App, *worker) {
	t.Helper()
	inv, err := gpu.OpenLibrary(s, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = inv.Close() })
	a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) {
		m.AckTimeoutBlocks = 40
		if edit != nil {
			edit(m)
		}
	})
	var mu sync.Mutex
	w := newWorkerOn(t, &mu, a, "p1", t.TempDir(), inv, with, func(c *config.Config) {
		c.Node.MockGPUs = 0
		c.Bond.Amount = "900000000" // 8 GPUs
	})
	return a, w
}

// dgxCard0InSevenSlices is the DGX mock with GPU 0 in MIG mode, carved into 7 one-slice
// instances (returned in slot order), the other 7 GPUs whole.
func dgxCard0InSevenSlices(t *testing.T) (*gpumock.DGX, []*mock.Device) {
	t.Helper()
	s := gpumock.NewDGX()
	var one []gpumock.MIGSlice
	for range 7 {
		one = append(one, gpumock.MIGSlice{GIProfile: nvml.GPU_INSTANCE_PROFILE_1_SLICE})
	}
	migs, err := s.EnableMIGPacked(0, one...)
	require.NoError(t, err)
	return s, migs
}
