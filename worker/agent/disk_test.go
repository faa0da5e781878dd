package agent_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/config"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A job that names its disk (requirements.disk_mib_per_gpu) runs only on nodes that offer
// that much (node.disk_mib_per_gpu, registered with the node), and is held to what it
// named, not to the market's task_disk_mib_per_gpu: here it names 1 GiB a GPU where the
// market's default is 100 GiB, and writes 1.25 GiB. p1 and p3 offer 2 GiB a GPU, p2
// offers none. The task goes to p1 or p3, never p2; each stops it at 1 GiB and reports
// FAILURE_REASON_DISK, the second report confirms the first, and nobody is slashed. With
// the param's limit the run would have held its 1.25 GiB and slept on past the test.
func TestJobNamesItsDiskAndRunsWhereOffered(t *testing.T) {
	a := appWithProviders(t, "p1", "p2", "p3")
	var mu sync.Mutex
	offer := func(c *config.Config) { c.Node.DiskMiBPerGPU = 2 << 10 }
	w1, w2, w3 := newWorker(t, &mu, a, "p1", offer), newWorker(t, &mu, a, "p2", nil), newWorker(t, &mu, a, "p3", offer)
	require.Equal(t, uint64(2<<10), w1.agent.Node().DiskMibPerGpu, "registered with the node")
	require.Zero(t, w2.agent.Node().DiskMibPerGpu)

	spec := processSpec(a, `i=0; while [ $i -lt 20 ]; do dd if=/dev/zero of="$FLOPS_OUTPUT_DIR/fill.$i" bs=1M count=64 2>/dev/null; i=$((i+1)); done; sleep 90`)
	spec.Requirements.DiskMibPerGpu = markettypes.MinTaskDiskMiBPerGPU
	j := job(t, a, spec)
	q := markettypesQuery(a)
	require.True(t, failsWithinAMinute(t, a, j.Id, w1, w2, w3), "the job failed on both offering machines within a minute")
	task, err := q.Task(a.Ctx(), &markettypes.QueryTaskRequest{TaskId: 1})
	require.NoError(t, err)
	fs := task.Task.Failures
	require.Len(t, fs, 2)
	offering := map[string]bool{a.Account("p1").String(): true, a.Account("p3").String(): true}
	require.NotEqual(t, fs[0].Provider, fs[1].Provider)
	for _, f := range fs {
		require.True(t, offering[f.Provider], "run by a node that offers the disk, not %s", f.Provider)
		require.Equal(t, markettypes.FAILURE_STATUS_CONFIRMED, f.Status)
		require.Equal(t, markettypes.FAILURE_REASON_DISK, f.Reason)
		require.Contains(t, f.Detail, "more than 1073741824 bytes of disk", "the job's own limit")
	}
	ss := sstypes.NewQueryClient(a.QueryConn())
	for _, p := range []string{"p1", "p2", "p3"} {
		require.Zero(t, slashCount(t, a, ss, a.Account(p).Address), p)
	}

	// a job that names more than any node offers waits; the worker that offers none is
	// never given it
	spec.Requirements.DiskMibPerGpu = 3 << 10
	more := job(t, a, spec)
	for range 5 {
		tick(t, a, w1, w2, w3)
	}
	tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: more.Id})
	require.NoError(t, err)
	require.Len(t, tasks.Tasks, 1)
	require.Equal(t, markettypes.TASK_STATUS_PENDING, tasks.Tasks[0].Status)
	a.AssertInvariants()
}
