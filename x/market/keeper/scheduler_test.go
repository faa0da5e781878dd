package keeper_test

import (
	"slices"
	"strings"

	"cosmossdk.io/collections"

	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

func setGPUs(edit func(g *gfltypes.GpuInfo)) func(n *gfltypes.Node) {
	return func(n *gfltypes.Node) {
		for i := range n.Gpus {
			edit(&n.Gpus[i])
		}
	}
}

// The scheduler never gives a task to a node that fails one of the design's filters; the
// task waits in the queue while that node is the only one, and goes to the first node
// that passes them all as soon as one appears. Each case makes one node fail one filter.
func TestSchedulerNeverAssignsToIneligibleNode(t *testing.T) {
	cases := []struct {
		name     string
		params   func(p *types.Params)
		job      func(s *types.JobSpec)
		badGPUs  int // default 8
		bad      func(n *gfltypes.Node)
		goodGPUs int // default 8
		good     func(n *gfltypes.Node)
		ownerBad bool // the bad node is operated by the job's owner
		setup    func(f *fixture, bad uint64, badOp string)
	}{
		{name: "jailed operator", setup: func(f *fixture, _ uint64, op string) { f.coll.jail(op) }},
		{name: "inactive node", bad: func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_INACTIVE }},
		{name: "node pending approval", bad: func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_PENDING }},
		{
			name: "class not allowed",
			job:  func(s *types.JobSpec) { s.Requirements.AllowedClasses = []string{"H100-80GB"} },
			good: func(n *gfltypes.Node) {
				n.GpuClass = "H100-80GB"
				setGPUs(func(g *gfltypes.GpuInfo) {
					g.Model, g.MemoryMib, g.ComputeCapability = "NVIDIA H100 80GB HBM3", 81559, "9.0"
				})(n)
			},
		},
		{
			name: "memory",
			job:  func(s *types.JobSpec) { s.Requirements.MinMemoryMib = 80_000 },
			good: setGPUs(func(g *gfltypes.GpuInfo) { g.MemoryMib = 81920 }),
		},
		{
			// the smallest GPU counts: a task may be pinned to any of them
			name: "one GPU below the memory",
			job:  func(s *types.JobSpec) { s.Requirements.MinMemoryMib = 40_000 },
			bad:  func(n *gfltypes.Node) { n.Gpus[3].MemoryMib = 24576 },
		},
		{
			name: "compute capability",
			job:  func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "9.0" },
			good: setGPUs(func(g *gfltypes.GpuInfo) { g.ComputeCapability = "9.0" }),
		},
		{
			// "9.0" > "10.0" as strings; as versions it is below
			name: "compute capability compared as numbers",
			job:  func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "10.0" },
			bad:  setGPUs(func(g *gfltypes.GpuInfo) { g.ComputeCapability = "9.0" }),
			good: setGPUs(func(g *gfltypes.GpuInfo) { g.ComputeCapability = "12.0" }),
		},
		{
			name: "minor compute capability",
			job:  func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "8.6" },
			good: setGPUs(func(g *gfltypes.GpuInfo) { g.ComputeCapability = "8.9" }),
		},
		{
			name: "region",
			job:  func(s *types.JobSpec) { s.Requirements.Region = "us-east" },
			good: func(n *gfltypes.Node) { n.Region = "us-east" },
		},
		{
			// a job that names its disk: a node that offers none
			name: "disk not offered",
			job:  func(s *types.JobSpec) { s.Requirements.DiskMibPerGpu = 200 << 10 },
			good: func(n *gfltypes.Node) { n.DiskMibPerGpu = 200 << 10 },
		},
		{
			name: "disk offered one MiB short",
			job:  func(s *types.JobSpec) { s.Requirements.DiskMibPerGpu = 200 << 10 },
			bad:  func(n *gfltypes.Node) { n.DiskMibPerGpu = 200<<10 - 1 },
			good: func(n *gfltypes.Node) { n.DiskMibPerGpu = 16 << 20 },
		},
		{
			name: "tensor cores on one GPU missing",
			job:  func(s *types.JobSpec) { s.Requirements.TensorCores = true },
			bad:  func(n *gfltypes.Node) { n.Gpus[5].TensorCores = false },
		},
		{
			name: "workload not accepted",
			job:  func(s *types.JobSpec) { s.Workload = gfltypes.WORKLOAD_CLASS_INFERENCE },
			good: func(n *gfltypes.Node) { n.Workloads = []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_INFERENCE} },
		},
		{
			// 100 DPS per GPU-hour x 10 minutes = 16.7 DPS > 5 DPS
			name: "quote above the max price",
			bad:  func(n *gfltypes.Node) { n.AskPerGpuHour = sdk.NewInt64Coin(udps, 100_000_000) },
		},
		{
			// the default node quotes 166,667 udps; the job pays at most one udps less
			name: "quote one udps above the max price",
			job:  func(s *types.JobSpec) { s.MaxPricePerTask = sdk.NewCoin(udps, quote10m.SubRaw(1)) },
			good: func(n *gfltypes.Node) { n.AskPerGpuHour = sdk.NewInt64Coin(udps, 999_990) },
		},
		{name: "operated by the job's owner", ownerBad: true},
		{name: "reputation not eligible", setup: func(f *fixture, bad uint64, _ string) { f.rep.ineligible[bad] = true }},
		{
			// a task reserves (price + tip) x result_penalty_multiple; one udps short
			name: "collateral does not cover the exposure",
			setup: func(f *fixture, _ uint64, op string) {
				f.coll.bond(op, quote10m.AddRaw(100_000).MulRaw(int64(f.params().ResultPenaltyMultiple)).SubRaw(1))
			},
		},
		{
			name:    "fewer GPUs than the task needs",
			job:     func(s *types.JobSpec) { s.Requirements.GpuCount = 2 },
			badGPUs: 1,
		},
		{
			// theta = 50%: 5 of 8 GPUs would load the node to 62.5%; 5 of 16 is 31%
			name:     "over the load threshold",
			params:   func(p *types.Params) { p.LoadThresholdPpm = 500_000 },
			job:      func(s *types.JobSpec) { s.Requirements.GpuCount = 5 },
			goodGPUs: 16,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.params)
			badOp := f.operator("bad")
			if tc.ownerBad {
				badOp = f.client
				f.coll.bond(badOp, sdkmath.NewInt(1_000_000_000_000))
			}
			badGPUs := tc.badGPUs
			if badGPUs == 0 {
				badGPUs = 8
			}
			bad := f.addNode(badOp, badGPUs, tc.bad)
			if tc.setup != nil {
				tc.setup(f, bad, badOp)
			}
			spec := f.gemmSpec(1)
			if tc.job != nil {
				tc.job(&spec)
			}
			id := f.submit(spec)
			f.blocks(3)
			task := f.tasks(id)[0]
			require.Equal(t, types.TASK_STATUS_PENDING, task.Status, "the task waits")
			require.True(t, f.queued(task.Id), "in the queue")
			require.Zero(t, f.slot(bad).GpusUsed)
			require.True(t, f.coll.exp(badOp).IsZero())
			f.assertInvariants()

			goodGPUs := tc.goodGPUs
			if goodGPUs == 0 {
				goodGPUs = 8
			}
			good := f.addNode(f.operator("good"), goodGPUs, tc.good)
			task = f.untilAssigned(task.Id)
			require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
			require.Equal(t, good, task.NodeId)
			require.False(t, f.queued(task.Id))
			f.assertInvariants()
		})
	}
}

// theta = 50%: a node of 8 GPUs takes 4 single-GPU tasks and no more; the others wait
// until one of its tasks commits and frees a GPU.
func TestSchedulerLoadThreshold(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.LoadThresholdPpm = 500_000 })
	node := f.addNode(f.operator("p1"), 8, nil)
	var jobs []uint64
	for range 6 {
		jobs = append(jobs, f.submit(f.gemmSpec(1)))
	}
	f.blocks(2)
	var assigned []types.Task
	for _, id := range jobs {
		if task := f.tasks(id)[0]; task.Status == types.TASK_STATUS_ASSIGNED {
			assigned = append(assigned, task)
		}
	}
	require.Len(t, assigned, 4)
	require.Equal(t, uint32(4), f.slot(node).GpusUsed)
	f.ack(assigned[0])
	f.blocks(1)
	f.commit(assigned[0])
	f.blocks(1)
	require.Equal(t, uint32(4), f.slot(node).GpusUsed, "the freed GPU went to a waiting task")
	waiting := 0
	for _, id := range jobs {
		if f.tasks(id)[0].Status == types.TASK_STATUS_PENDING {
			waiting++
		}
	}
	require.Equal(t, 1, waiting)
	f.assertInvariants()
}

// A node whose GPUs are all in use takes nothing more until a task commits.
func TestSchedulerFullNodeWaits(t *testing.T) {
	f := newFixture(t, nil)
	node := f.addNode(f.operator("p1"), 2, nil)
	spec := f.gemmSpec(3)
	id := f.submit(spec)
	f.blocks(2)
	tasks := f.tasks(id)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, tasks[0].Status)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, tasks[1].Status)
	require.Equal(t, types.TASK_STATUS_PENDING, tasks[2].Status)
	require.Equal(t, uint32(2), f.slot(node).GpusUsed)
	f.ack(tasks[0])
	f.blocks(1)
	f.commit(tasks[0])
	f.blocks(1)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, f.task(tasks[2].Id).Status)
	f.assertInvariants()
}

// A node that lost a task never gets it back, even when it is the only node and idle; a
// new node does.
func TestSchedulerNeverReturnsTaskToNodeThatLostIt(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.AckTimeoutBlocks = 2 })
	task := f.assignedTask("p1")
	loser := task.NodeId
	f.blocks(10)
	task = f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_PENDING, task.Status)
	require.Equal(t, []uint64{loser}, task.ExcludedNodes)
	require.Zero(t, f.slot(loser).GpusUsed, "the loser is idle")
	second := f.addNode(f.operator("p2"), 8, func(n *gfltypes.Node) { n.Region = "p1" })
	task = f.untilAssigned(task.Id)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	require.Equal(t, second, task.NodeId)
	require.Equal(t, uint32(1), task.Reassignments)
	f.assertInvariants()
}

// A shard's replicas run on distinct nodes: with one node, one replica runs and the
// others wait for more nodes.
func TestSchedulerReplicasOnDistinctNodes(t *testing.T) {
	f := newFixture(t, nil)
	first := f.addNode(f.operator("p1"), 8, nil)
	spec := f.gemmSpec(2)
	spec.Replicas = 3
	id := f.submit(spec)
	f.blocks(2)
	count := func(status types.TaskStatus) int {
		n := 0
		for _, task := range f.tasks(id) {
			if task.Status == status {
				n++
			}
		}
		return n
	}
	require.Equal(t, 2, count(types.TASK_STATUS_ASSIGNED), "one replica of each shard")
	require.Equal(t, uint32(2), f.slot(first).GpusUsed)
	waitFor := func(n int) {
		for range f.params().AssignRetryMaxBlocks + 1 {
			if count(types.TASK_STATUS_ASSIGNED) == n {
				break
			}
			f.blocks(1)
		}
		require.Equal(t, n, count(types.TASK_STATUS_ASSIGNED))
	}
	f.addNode(f.operator("p2"), 8, nil)
	waitFor(4)
	f.addNode(f.operator("p3"), 8, nil)
	waitFor(6)
	// every shard's replicas are on three distinct nodes
	byShard := map[uint32]map[uint64]bool{}
	for _, task := range f.tasks(id) {
		if byShard[task.Index] == nil {
			byShard[task.Index] = map[uint64]bool{}
		}
		byShard[task.Index][task.NodeId] = true
	}
	for shard, nodes := range byShard {
		require.Len(t, nodes, 3, "shard %d", shard)
	}
	f.assertInvariants()
}

// A task that cannot be placed before its deadline minus its duration expires at the
// scheduler's first look after that point (it looks again at most assign_retry_max_blocks
// after a failed try), not at the job's deadline, and its reservation returns to the owner.
func TestSchedulerExpiresTaskWhoseDeadlineCannotBeMet(t *testing.T) {
	f := newFixture(t, nil)
	spec := f.gemmSpec(1)
	start := f.ctx.BlockTime()
	spec.Deadline = start.Add(spec.MaxDuration + 30*time.Second)
	id := f.submit(spec)
	task := f.tasks(id)[0]
	for f.task(task.Id).Status == types.TASK_STATUS_PENDING {
		require.True(t, f.ctx.BlockTime().Before(spec.Deadline), "expired before the job's deadline")
		f.next(10 * time.Second)
	}
	// the first block whose time + 10 minutes is past the deadline is at +40 s; the task is
	// looked at again at most assign_retry_max_blocks blocks (of 10 s) after its last try
	// (here: tries at +0, +10, +30, then +70)
	expired := f.ctx.BlockTime().Add(-10 * time.Second)
	require.False(t, expired.Before(start.Add(40*time.Second)), "not before the deadline can no longer be met")
	require.False(t, expired.After(start.Add(40*time.Second+time.Duration(f.params().AssignRetryMaxBlocks)*10*time.Second)), "expired at %s", expired)
	require.Equal(t, start.Add(70*time.Second), expired)
	task = f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_EXPIRED, task.Status)
	require.False(t, f.queued(task.Id))
	job := f.job(id)
	require.Equal(t, types.JOB_STATUS_FAILED, job.Status)
	require.True(t, job.Escrow.IsZero())
	require.Equal(t, clientFunds, f.balance(f.client), "refunded in full")
	require.True(t, f.escrow().IsZero())
	f.assertInvariants()
}

// Each block the scheduler examines at most max_assign_per_block tasks (replicas of all
// jobs together); the rest are assigned in later blocks.
func TestSchedulerAssignsAtMostMaxPerBlock(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxAssignPerBlock = 3 })
	f.addNodes(10)
	jobs := []uint64{f.submit(f.gemmSpec(7)), f.submit(f.gemmSpec(1)), f.submit(f.gemmSpec(1)), f.submit(f.gemmSpec(1))}
	assigned := func() int {
		n := 0
		for _, id := range jobs {
			for _, task := range f.tasks(id) {
				if task.Status == types.TASK_STATUS_ASSIGNED {
					n++
				}
			}
		}
		return n
	}
	for _, want := range []int{3, 6, 9, 10, 10} {
		f.blocks(1)
		require.Equal(t, want, assigned())
	}
	f.assertInvariants()
}

// The queue is ordered by tip (higher first), then deadline (earlier first), then age
// (older first): with one assignment per block, jobs are assigned in that order whatever
// order they were submitted in.
func TestSchedulerPriorityOrder(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxAssignPerBlock = 1 })
	f.addNodes(5)
	job := func(tip int64, deadline time.Duration) uint64 {
		s := f.gemmSpec(1)
		s.PriorityTip = sdk.NewInt64Coin(udps, tip)
		s.Deadline = f.ctx.BlockTime().Add(deadline)
		return f.submit(s)
	}
	a := job(0, 24*time.Hour)
	b := job(0, 12*time.Hour)
	c := job(500_000, 24*time.Hour)
	d := job(500_000, 24*time.Hour)
	e := job(100_000, time.Hour)
	want := []uint64{c, d, e, b, a}
	for i, id := range want {
		f.blocks(1)
		require.Equalf(t, types.TASK_STATUS_ASSIGNED, f.tasks(id)[0].Status, "block %d: job %d", i, id)
		for _, later := range want[i+1:] {
			require.Equalf(t, types.TASK_STATUS_PENDING, f.tasks(later)[0].Status, "block %d: job %d waits", i, later)
		}
	}
}

// DESIGN.md section 8: a submitted ASSIGN job is assigned within 2 blocks of inclusion.
// Tasks at the head of the queue that no node can take must not hold back the ones behind
// them: here max_assign_per_block tasks with a higher tip ask for hardware nobody has.
func TestSchedulerUnplaceableTasksDoNotStarveQueue(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxAssignPerBlock = 2 })
	f.addNode(f.operator("p1"), 8, nil)
	blocker := f.unplaceable()
	blocker.TaskCount = 2
	blocker.PriorityTip = sdk.NewInt64Coin(udps, 1_000_000)
	blocker.Deadline = f.ctx.BlockTime().Add(30 * 24 * time.Hour)
	f.submitAs(f.client, blocker)
	id := f.submit(f.gemmSpec(1))
	f.blocks(2)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, f.tasks(id)[0].Status)
}

// Load spreading: 200 nodes of 8 GPUs, single-GPU jobs arriving at random (one block in
// four quiet) and running a random 300 to 900 blocks, so that about 450 run at once once
// the system is warm (a mean load of 2.25 GPUs a node). Each assignment is replayed
// (DrawForTest) to count how often the two drawn candidates tie; the replay must pick the
// node the scheduler picks.
//
// Bound: the scheduler draws its two candidates from the least-loaded eligible nodes of
// the index (idle ones first, then by increasing load), not from all nodes, so it does at
// least as well as power of two choices over random nodes, whose maximum exceeds the mean
// by ln ln n / ln 2 + O(1), about 2.4 GPUs for n = 200. We assert max <= mean + 3 GPUs at
// every sampled block once the mean is at least 1.
func TestSchedulerLoadSpread(t *testing.T) {
	const nodes = 200
	blocks, warm := 2500, 1000
	if testing.Short() {
		blocks, warm = 1000, 600
	}
	f := newFixture(t, func(p *types.Params) {
		p.MaxAssignPerBlock = 1
		p.HeartbeatTimeoutBlocks = 1_000_000
		p.ChallengeWindowBlocks = 5
	})
	f.commitEvery = 4
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range nodes {
		id := f.addNode(f.operator(fmt.Sprint("p", i)), 8, nil)
		// distinct reputation scores in [0.5, 1): load ties are broken by reputation
		f.rep.scores[id] = sdkmath.LegacyNewDecWithPrec(int64(500+rng.IntN(500)), 3)
	}
	type running struct {
		task   types.Task
		commit int64 // height of its commitment
	}
	var inFlight []running
	var revealNext []types.Task
	var assignments, tiesOnLoad, tiesOnBoth int
	var worstRatio, warmWorst, warmSum, warmMean float64
	var worstGap, warmSamples int
	for i := range blocks {
		h := f.ctx.BlockHeight()
		for _, task := range revealNext {
			f.reveal(task)
		}
		revealNext = revealNext[:0]
		kept := inFlight[:0]
		for _, r := range inFlight {
			if r.commit == h {
				f.commit(r.task)
				revealNext = append(revealNext, r.task)
			} else {
				kept = append(kept, r)
			}
		}
		inFlight = kept
		var draw keeper.Draw
		var submitted uint64
		if rng.IntN(4) != 0 {
			spec := f.gemmSpec(1)
			spec.MaxDuration = 20 * time.Minute
			job := f.submit(spec)
			submitted = f.tasks(job)[0].Id
			var ok bool
			var err error
			draw, ok, err = f.k.DrawForTest(f.ctx, submitted)
			require.NoError(t, err)
			require.True(t, ok)
		}
		f.blocks(1)
		if submitted != 0 {
			task := f.task(submitted)
			require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
			require.Equal(t, draw.Winner.NodeId, task.NodeId, "DrawForTest replays pickNode")
			assignments++
			if keeper.LoadPPM(draw.A.GpusUsed, draw.A.Gpus) == keeper.LoadPPM(draw.B.GpusUsed, draw.B.Gpus) {
				tiesOnLoad++
				if draw.ScoreA.Equal(draw.ScoreB) {
					tiesOnBoth++
				}
			}
			f.ack(task)
			inFlight = append(inFlight, running{task: f.task(task.Id), commit: f.ctx.BlockHeight() + int64(300+rng.IntN(601))})
		}
		if i%5 != 0 {
			continue
		}
		var used, maxUsed, minUsed uint32
		minUsed = 1 << 31
		for id := uint64(1); id <= nodes; id++ {
			u := f.slot(id).GpusUsed
			used += u
			maxUsed = max(maxUsed, u)
			minUsed = min(minUsed, u)
		}
		mean := float64(used) / nodes
		if mean < 1 {
			continue
		}
		require.LessOrEqualf(t, float64(maxUsed), mean+3, "height %d: max load %d, mean %.2f", h, maxUsed, mean)
		ratio := float64(maxUsed) / mean
		worstRatio = max(worstRatio, ratio)
		if i >= warm {
			warmWorst = max(warmWorst, ratio)
			warmSum += ratio
			warmMean += mean
			warmSamples++
			worstGap = max(worstGap, int(maxUsed-minUsed))
		}
	}
	require.NotZero(t, warmSamples)
	t.Logf("load spread, %d nodes x 8 GPUs, %d blocks, %d assignments: once warm (mean load %.2f GPUs), max/mean worst %.3f, average %.3f, max-min worst %d GPUs; worst max/mean at any mean >= 1: %.3f",
		nodes, blocks, assignments, warmMean/float64(warmSamples), warmWorst, warmSum/float64(warmSamples), worstGap, worstRatio)
	t.Logf("ties: the two drawn candidates had equal load in %d of %d draws (%.1f%%); equal load and equal reputation in %d",
		tiesOnLoad, assignments, 100*float64(tiesOnLoad)/float64(assignments), tiesOnBoth)
	f.assertInvariants()
}

// A task no node can take parks its group (the job's tasks of its role) with a growing
// back-off (1, 2, 4, ... blocks, at most assign_retry_max_blocks) instead of being
// examined every block; when a node appears it is retried and assigned, even while a
// bigger unplaceable job with a higher tip is parked too.
func TestSchedulerParkedTaskRetried(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxAssignPerBlock = 4 })
	waiting := f.submit(f.gemmSpec(1)) // no node yet
	task := f.tasks(waiting)[0]
	f.blocks(1)
	g := collections.Join(waiting, int32(types.TASK_ROLE_PRIMARY))
	r, err := f.k.Groups.Get(f.ctx, g)
	require.NoError(t, err)
	require.NotZero(t, r.K3(), "parked")
	require.Equal(t, uint32(1), r.K4(), "parked after one failed try")
	f.blocks(6)
	r, err = f.k.Groups.Get(f.ctx, g)
	require.NoError(t, err)
	require.Equal(t, uint32(3), r.K4(), "tried at +1, +2 and +4 blocks: the back-off doubles")
	require.True(t, f.queued(task.Id), "the task waits in its parked group")

	blocker := f.unplaceable()
	blocker.TaskCount = 40
	blocker.PriorityTip = sdk.NewInt64Coin(udps, 1_000_000)
	blocker.Deadline = f.ctx.BlockTime().Add(30 * 24 * time.Hour)
	f.submitAs(f.client, blocker)
	f.addNode(f.operator("p1"), 8, nil)
	limit := 2*int(f.params().AssignRetryMaxBlocks) + 40/3 + 2
	for i := 0; i < limit && f.task(task.Id).Status == types.TASK_STATUS_PENDING; i++ {
		f.blocks(1)
	}
	require.Equal(t, types.TASK_STATUS_ASSIGNED, f.task(task.Id).Status, "assigned within %d blocks", limit)
	require.False(t, f.queued(task.Id))
	f.assertInvariants()
}

// Parked groups whose retry falls due in one block come back to the queue one budgeted
// item each: sixteen unplaceable jobs with 256 KB of task_args (each spec read ~0.8M gas)
// parked in the same block, so due together, under the smallest assign budget (10M gas),
// used to be requeued in a single item that ran out of gas with the whole budget to
// itself, which failed EndBlock (a chain halt). Now as many are requeued and examined as
// the budget allows, the rest in the next blocks.
func TestAttackParkedBigJobsStallScheduler(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.AssignGasPerBlock = 10_000_000 })
	big := func() types.JobSpec {
		s := f.unplaceable()
		s.Runtime, s.Image, s.Builtin, s.Command = types.RUNTIME_PROCESS, "", types.BuiltinArgs{}, []string{"run"}
		s.TaskCount = 4
		for range s.TaskCount {
			var ta types.TaskArgs
			for range types.MaxArgs {
				ta.Args = append(ta.Args, strings.Repeat("a", 1000))
			}
			s.TaskArgs = append(s.TaskArgs, ta)
		}
		return s
	}
	var ids []uint64
	for range 16 {
		id := f.submit(big())
		require.NoError(t, f.k.ParkGroupForTest(f.ctx, id)) // all due at the next height
		ids = append(ids, id)
	}
	for range 3 * int(f.params().AssignRetryMaxBlocks) {
		f.blocks(1) // EndBlock must not fail
	}
	for _, id := range ids {
		g, err := f.k.Groups.Get(f.ctx, collections.Join(id, int32(types.TASK_ROLE_PRIMARY)))
		require.NoError(t, err)
		require.GreaterOrEqual(t, g.K4(), uint32(2), "job %d's group was examined again after its park", id)
	}
	f.assertInvariants()
}

// A node that does not accept PROCESS is never given a PROCESS job: the scheduler places
// every task on the node that does (and parks the job when none does), an auction bid
// and a pool join from the other are refused; the other node still gets BUILTIN work.
func TestNodeWithoutProcessNeverRunsAProcessJob(t *testing.T) {
	f := newFixture(t, nil)
	builtinOnly := func(n *gfltypes.Node) {
		n.Runtimes = []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN, gfltypes.RUNTIME_CONTAINER}
	}
	safe := f.addNode(f.operator("safe"), 8, builtinOnly)
	open := f.addNode(f.operator("open"), 8, nil)
	process := func(tasks uint32) types.JobSpec {
		s := f.gemmSpec(tasks)
		s.Runtime, s.Image, s.Builtin, s.Command = types.RUNTIME_PROCESS, "", types.BuiltinArgs{}, []string{"run"}
		return s
	}

	id := f.submit(process(6))
	f.blocks(1)
	for _, task := range f.tasks(id) {
		require.Equal(t, open, task.NodeId, "task %d", task.Id)
	}
	gemm := f.submit(f.gemmSpec(12))
	f.blocks(1)
	used := map[uint64]bool{}
	for _, task := range f.tasks(gemm) {
		used[task.NodeId] = true
	}
	require.True(t, used[safe], "the BUILTIN-only node runs BUILTIN work")

	// with the PROCESS node gone, a PROCESS job waits rather than go to the other
	f.updateNode(open, func(n *gfltypes.Node) { n.Status = gfltypes.NODE_STATUS_INACTIVE })
	parked := f.submit(process(1))
	f.blocks(3)
	for _, task := range f.tasks(parked) {
		require.Equal(t, types.TASK_STATUS_PENDING, task.Status)
		require.Zero(t, task.NodeId)
	}

	auction := process(1)
	auction.Mode = types.ALLOCATION_MODE_AUCTION
	aid := f.submit(auction)
	_, err := f.ms.PlaceBid(f.ctx, &types.MsgPlaceBid{Provider: f.operator("safe"), JobId: aid, NodeId: safe, Price: sdkmath.NewInt(100_000), Quantity: 1})
	require.ErrorIs(t, err, types.ErrNodeNotEligible)

	res, err := f.ms.CreatePool(f.ctx, &types.MsgCreatePool{Owner: f.client, Spec: types.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: types.RUNTIME_PROCESS, Command: []string{"serve"},
		Verification: types.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
		Budget: sdk.NewInt64Coin(udps, 10_000_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
	}})
	require.NoError(t, err)
	_, err = f.ms.JoinPool(f.ctx, &types.MsgJoinPool{Provider: f.operator("safe"), PoolId: res.PoolId, NodeId: safe})
	require.ErrorIs(t, err, types.ErrNodeNotEligible)
	f.assertInvariants()
}

// The pace of assignment follows the work budget, not a count: with the default cap
// (max_assign_per_block 10,000, far above what a block's budget buys), a block assigns
// what assign_gas_per_block pays for, and twice the budget assigns twice as many.
func TestSchedulerPaceFollowsTheWorkBudget(t *testing.T) {
	perBlock := func(budget uint64) (int, keeper.BlockWork) {
		f := newFixture(t, func(p *types.Params) { p.AssignGasPerBlock = budget })
		require.Equal(t, types.DefaultParams().MaxAssignPerBlock, f.params().MaxAssignPerBlock)
		f.addNodes(400)
		var jobs []uint64
		for range 400 {
			jobs = append(jobs, f.submit(f.gemmSpec(1)))
		}
		f.blocks(1)
		n := 0
		for _, id := range jobs {
			if f.tasks(id)[0].Status == types.TASK_STATUS_ASSIGNED {
				n++
			}
		}
		f.assertInvariants()
		return n, f.k.LastBlockWork()
	}
	n1, w1 := perBlock(10_000_000)
	n2, w2 := perBlock(20_000_000)
	t.Logf("10M gas: %d assignments (%d gas used); 20M gas: %d (%d gas used)", n1, w1.AssignGas, n2, w2.AssignGas)
	require.LessOrEqual(t, w1.AssignGas, w1.AssignLimit)
	require.LessOrEqual(t, w2.AssignGas, w2.AssignLimit)
	require.Greater(t, n1, 50, "a 10M budget buys more than 50 assignments")
	require.Less(t, n2, 400, "the budget, not the queue, ends the block")
	require.InEpsilon(t, 2*n1, n2, 0.1, "twice the budget, twice the assignments (within 10 percent: the block's fixed work)")
}

// The tasks parked alone keep a quarter of the work budget however long the queue ahead
// of them: a flood of queued groups that would spend the whole budget does not keep a
// parked task's retry waiting.
func TestSchedulerParkedAloneKeepTheirShareOfTheBudget(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.AssignGasPerBlock = 10_000_000 })
	f.addNodes(400)
	parked := f.submit(f.gemmSpec(1))
	task := f.tasks(parked)[0]
	require.NoError(t, f.k.ParkAloneForTest(f.ctx, task.Id))
	flood := f.gemmSpec(1)
	flood.PriorityTip = sdk.NewInt64Coin(udps, 1_000) // ahead of it in the queue
	var jobs []uint64
	for range 400 {
		jobs = append(jobs, f.submit(flood))
	}
	f.blocks(1)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, f.task(task.Id).Status, "the parked task's retry ran in its block")
	n := 0
	for _, id := range jobs {
		if f.tasks(id)[0].Status == types.TASK_STATUS_ASSIGNED {
			n++
		}
	}
	require.Greater(t, n, 50, "the groups had the rest of the budget")
	require.Less(t, n, 400)
	f.assertInvariants()
}

// The last free GPUs of a busy network are found: when sampling spends its scan without
// finding an eligible node (they are rarer than one in scheduler_max_scan), the walk of
// the load-ordered index finds one. Before, the walk shared the spent scan and never ran:
// with 1,000 one-GPU nodes and 1,000 jobs, the last tasks found no node by sampling
// (a 64-sample miss of the one free node in 1,000 is 94% likely) and backed off, parked,
// for blocks while a node stood free.
func TestSchedulerFindsTheLastFreeNodes(t *testing.T) {
	f := newFixture(t, nil)
	const n = 1000
	require.Less(t, int(f.params().SchedulerMaxScan), n/10, "free nodes end rarer than one in the scan")
	for i := range n {
		f.addNode(f.operator(fmt.Sprint("p", i)), 1, nil)
	}
	var jobs []uint64
	for range n {
		jobs = append(jobs, f.submit(f.gemmSpec(1)))
	}
	f.blocks(1)
	open := 0
	for _, id := range jobs {
		if f.tasks(id)[0].Status != types.TASK_STATUS_ASSIGNED {
			open++
		}
	}
	require.Zero(t, open, "every task assigned in its block: %d of %d wait while as many GPUs are free", open, n)
	f.assertInvariants()
}

// An assignment that fails in the middle (here the provider's collateral refuses the
// exposure it said it could take) fails alone: the scheduler examines the queue in
// batches, one budget unit per batch, and a batch with a failure in it is dropped and its
// examinations run again one unit each; the failing task goes to the block-hook retries
// (out of the queue, nothing of it written) and every other task of the batch is
// assigned in the same block.
func TestSchedulerAssignmentFailureInABatchFailsAlone(t *testing.T) {
	f := newFixture(t, nil)
	var broken string
	for i := range 60 {
		op := f.operator(fmt.Sprint("p", i))
		f.addNode(op, 1, nil)
		if i == 7 {
			broken = op
			f.coll.broken[key(op)] = true
		}
	}
	var jobs []uint64
	for range 50 {
		jobs = append(jobs, f.submit(f.gemmSpec(1)))
	}
	f.blocks(1)
	assigned, failed := 0, 0
	for _, id := range jobs {
		task := f.tasks(id)[0]
		attempts, err := f.k.AssignAttempts(f.ctx, task.Id)
		require.NoError(t, err)
		switch task.Status {
		case types.TASK_STATUS_ASSIGNED:
			require.NotEqual(t, broken, task.Provider, "task %d", task.Id)
			require.Zero(t, attempts)
			assigned++
		case types.TASK_STATUS_PENDING:
			require.Equal(t, uint32(1), attempts, "task %d: pending, its one failed assignment with the retries", task.Id)
			require.False(t, f.queued(task.Id), "task %d: the retries own it, not the queue", task.Id)
			failed++
		default:
			t.Fatalf("task %d is %s", task.Id, task.Status)
		}
	}
	t.Logf("%d assigned, %d failed on the broken provider's node", assigned, failed)
	require.Positive(t, failed, "the broken node was drawn (test setup: raise the job count if not)")
	require.Equal(t, len(jobs), assigned+failed, "every other task assigned in the block")
	require.Zero(t, f.coll.exp(broken).Int64(), "nothing of a failed assignment written")
	f.assertInvariants()
}

// A class that fits scheduler_max_scan is examined in a random order until two members
// are eligible, not member by member to the end: the draw's pool is two, each member is
// in the drawn pair as often as the others (2 in 10 here, within four standard
// deviations of the binomial over 1,000 draws), and a task that only one member of 40
// can take still finds it.
func TestSmallClassDrawIsUniformAndStopsAtTwo(t *testing.T) {
	f := newFixture(t, nil)
	var nodes []uint64
	for i := range 10 {
		nodes = append(nodes, f.addNode(f.operator(fmt.Sprint("small", i)), 8, nil))
	}
	const draws = 1000
	inPair := map[uint64]int{}
	for range draws {
		job := f.submit(f.gemmSpec(1))
		d, ok, err := f.k.DrawForTest(f.ctx, f.tasks(job)[0].Id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 2, d.Candidates, "two eligible members are enough")
		require.NotEqual(t, d.A.NodeId, d.B.NodeId)
		inPair[d.A.NodeId]++
		inPair[d.B.NodeId]++
	}
	// each node is in a pair with probability 2/10
	mean, sd := draws*0.2, math.Sqrt(draws*0.2*0.8)
	for _, id := range nodes {
		require.InDelta(t, mean, float64(inPair[id]), 4*sd, "node %d in %d of %d pairs", id, inPair[id], draws)
	}

	// one member of 40 can take an 8-GPU task: every draw finds it
	g := newFixture(t, nil)
	var big uint64
	for i := range 40 {
		gpus := 4
		if i == 23 {
			gpus = 8
		}
		id := g.addNode(g.operator(fmt.Sprint("rare", i)), gpus, nil)
		if gpus == 8 {
			big = id
		}
	}
	for range 20 {
		spec := g.gemmSpec(1)
		spec.Requirements.GpuCount = 8
		job := g.submit(spec)
		d, ok, err := g.k.DrawForTest(g.ctx, g.tasks(job)[0].Id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 1, d.Candidates)
		require.Equal(t, big, d.Winner.NodeId)
	}
}

// TestDrawAsksOnlyTheKeptCandidatesCollateral: the drawn pair is compared before its
// collateral is asked about, and only the better one must show it. Ten idle nodes of
// operators with no collateral score 2 and win every comparison; ten of operators with
// collateral score 1. Every draw keeps a node with collateral, drawn against another
// (the short ones are dropped as they win), each of the ten as often as the others; and
// each draw asks the collateral of the operators with some once: the kept node's, never
// the loser's (before, every candidate's collateral was read).
func TestDrawAsksOnlyTheKeptCandidatesCollateral(t *testing.T) {
	f := newFixture(t, nil)
	short, covered := map[uint64]bool{}, map[uint64]bool{}
	var coveredOps []string
	for i := range 10 {
		op := f.operator(fmt.Sprint("short", i))
		f.coll.bond(op, sdkmath.ZeroInt())
		id := f.addNode(op, 8, nil)
		f.rep.scores[id] = sdkmath.LegacyNewDec(2)
		short[id] = true
		op = f.operator(fmt.Sprint("covered", i))
		coveredOps = append(coveredOps, op)
		covered[f.addNode(op, 8, nil)] = true
	}
	asked := func() int {
		n := 0
		for _, op := range coveredOps {
			n += f.coll.asked[key(op)]
		}
		return n
	}
	const draws = 500
	kept := map[uint64]int{}
	for range draws {
		job := f.submit(f.gemmSpec(1))
		before := asked()
		d, ok, err := f.k.DrawForTest(f.ctx, f.tasks(job)[0].Id)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, covered[d.Winner.NodeId], "node %d kept: its operator has no collateral", d.Winner.NodeId)
		require.True(t, covered[d.A.NodeId] && covered[d.B.NodeId], "the pair compared last is %d and %d", d.A.NodeId, d.B.NodeId)
		require.Equal(t, 1, asked()-before, "the collateral of the kept node only")
		kept[d.Winner.NodeId]++
	}
	mean, sd := draws*0.1, math.Sqrt(draws*0.1*0.9)
	for id := range covered {
		require.InDelta(t, mean, float64(kept[id]), 4*sd, "node %d kept %d times of %d", id, kept[id], draws)
	}
	for id := range short {
		require.Zero(t, kept[id])
	}
}

// TestClassesOfKeepsTheOrderAndTheSpec: the scheduler draws from a job's allowed classes
// that have nodes, in the job's order; the list it narrows is the job's own (no copy while
// no class is dropped), so narrowing must leave the job's spec as it was.
func TestClassesOfKeepsTheOrderAndTheSpec(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("a"), 8, nil) // A100-40GB
	f.addNode(f.operator("h"), 8, func(n *gfltypes.Node) { n.GpuClass = "H100-80GB" })
	for _, c := range []struct {
		allowed, want []string
	}{
		{[]string{"H100-80GB", "A100-40GB"}, []string{"H100-80GB", "A100-40GB"}},
		{[]string{"L4-24GB", "H100-80GB", "T4-16GB", "A100-40GB"}, []string{"H100-80GB", "A100-40GB"}},
		{[]string{"A100-40GB", "L4-24GB", "H100-80GB"}, []string{"A100-40GB", "H100-80GB"}},
		{[]string{"L4-24GB"}, []string{}},
		{nil, []string{"A100-40GB", "H100-80GB"}}, // every class of the table, in its order
	} {
		spec := f.gemmSpec(1)
		spec.Requirements.AllowedClasses = slices.Clone(c.allowed)
		job := f.submit(spec)
		got, allowed, err := f.k.ClassesForTest(f.ctx, job)
		require.NoError(t, err)
		require.Equal(t, c.allowed, allowed, "the job's allowed classes unchanged")
		if c.allowed == nil {
			require.ElementsMatch(t, c.want, got, "no class named")
		} else {
			require.Equal(t, c.want, append([]string{}, got...), "allowed %v", c.allowed)
		}
	}
}
