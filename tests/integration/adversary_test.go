package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Adversaries against the market's block work, on the wired app. Each builds the largest
// legal load of its kind, then runs blocks with a normal client's job alongside and
// asserts, after every block: the market's EndBlock spent at most its budgets (gas on its
// own meters, queue_gas_per_block and assign_gas_per_block), the invariants hold; and at
// the end: the attack's work is done (in parts, over several blocks where it is big), its
// escrow is refunded, and the normal job was assigned, run and settled.

// budgetWatch checks the market's last EndBlock against its budgets and keeps the peaks.
type budgetWatch struct {
	peakQueue, peakAssign uint64
	blocks, spentBlocks   int
}

func (w *budgetWatch) check(t *testing.T, a *apptest.App) {
	t.Helper()
	bw := a.MarketKeeper.LastBlockWork()
	require.Equal(t, a.Height(), bw.Height, "the market ran its EndBlock")
	require.LessOrEqual(t, bw.QueueGas, bw.QueueLimit, "due work within queue_gas_per_block")
	require.LessOrEqual(t, bw.AssignGas, bw.AssignLimit, "scheduling within assign_gas_per_block")
	w.peakQueue, w.peakAssign = max(w.peakQueue, bw.QueueGas), max(w.peakAssign, bw.AssignGas)
	w.blocks++
	if bw.QueueGas*10 >= bw.QueueLimit*9 {
		w.spentBlocks++
	}
	a.AssertInvariants()
}

// normalJob is a client's ordinary job running alongside an attack: submitted, assigned,
// run by its provider and settled.
type normalJob struct {
	id   uint64
	task markettypes.Task
	ran  bool
}

func startNormal(t *testing.T, a *apptest.App) *normalJob {
	t.Helper()
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	spec.Requirements.Region = "" // any node
	return &normalJob{id: submit(t, a, spec)}
}

// submittedJob reads the job id from a MsgSubmitJob tx's result data.
func submittedJob(t *testing.T, data []byte) uint64 {
	t.Helper()
	var md sdk.TxMsgData
	require.NoError(t, md.Unmarshal(data))
	require.Len(t, md.MsgResponses, 1)
	var r markettypes.MsgSubmitJobResponse
	require.NoError(t, r.Unmarshal(md.MsgResponses[0].Value))
	return r.JobId
}

// step runs the provider's side once its task is assigned; done once settled.
func (n *normalJob) step(t *testing.T, a *apptest.App, nodes map[string]uint64) bool {
	t.Helper()
	tk := jobTasks(t, a, n.id)[0]
	if !n.ran && tk.Status == markettypes.TASK_STATUS_ASSIGNED {
		run(t, a, nodes, tk)
		n.ran = true
	}
	return tk.Status == markettypes.TASK_STATUS_SETTLED
}

// unplaceableJob asks for a region no node is in: its tasks stay pending until the
// deadline expires them.
func unplaceableJob(a *apptest.App, tasks, replicas uint32, deadline time.Time) markettypes.JobSpec {
	s := gemmJob(a, tasks, markettypes.ALLOCATION_MODE_ASSIGN)
	s.Replicas = replicas
	s.Requirements.Region = "nowhere"
	s.MaxDuration = time.Minute
	s.Deadline = deadline
	s.MaxPricePerTask = sdk.NewInt64Coin(udps, 1_000)
	s.PriorityTip = sdk.NewInt64Coin(udps, 0)
	return s
}

// A job with the most tasks the params allow (1,000 x 5 replicas) expiring at once: the
// sweep expires it in parts over several blocks within the budget, the escrow is
// refunded, and a normal job is served meanwhile.
func TestAdversaryThousandsOfTasksExpireAtOnce(t *testing.T) {
	a, nodes := marketApp(t, nil)
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	before := readLedger(a)
	deadline := a.BlockTime().Add(2 * time.Minute)
	spec := unplaceableJob(a, p.MaxTasksPerJob, p.MaxReplicas, deadline)
	res := a.NextBlock(a.SignTx("client", uint64(a.ConsensusParamsMaxGas()), &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: spec}))
	require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
	big := submittedJob(t, res.TxResults[0].Data)
	require.Equal(t, uint64(5000), spec.TotalTasks())

	var w budgetWatch
	var normal *normalJob
	expiredAt := int64(0)
	for i := 0; i < 400; i++ {
		if normal == nil && !a.BlockTime().Before(deadline.Add(-5*time.Second)) {
			normal = startNormal(t, a)
		}
		a.NextBlock()
		w.check(t, a)
		if expiredAt == 0 && getJob(t, a, big).Status != markettypes.JOB_STATUS_ACTIVE {
			expiredAt = a.Height()
		}
		settled := normal != nil && normal.step(t, a, nodes)
		if expiredAt != 0 && settled {
			break
		}
	}
	require.NotZero(t, expiredAt, "the big job expired")
	require.Equal(t, markettypes.JOB_STATUS_FAILED, getJob(t, a, big).Status, "every task expired")
	require.True(t, getJob(t, a, big).Escrow.IsZero(), "its escrow refunded")
	require.NotNil(t, normal)
	require.True(t, normal.ran, "the normal job was served")
	require.True(t, readLedger(a).escrow.IsZero())
	require.True(t, before.client.GT(readLedger(a).client), "the client paid only the normal job")
	t.Logf("5,000 tasks expired by height %d; %d blocks watched, %d with the queue budget spent; peak queue gas %d, peak assign gas %d",
		expiredAt, w.blocks, w.spentBlocks, w.peakQueue, w.peakAssign)
}

// A thousand one-task jobs sharing one deadline: they expire over blocks within the
// budget, every escrow refunded, and a normal job is served meanwhile.
func TestAdversaryThousandJobsShareADeadline(t *testing.T) {
	a, nodes := marketApp(t, nil)
	deadline := a.BlockTime().Add(2 * time.Minute)
	client := a.Account("client").String()
	for range 10 {
		msgs := make([]sdk.Msg, 100)
		for i := range msgs {
			msgs[i] = &markettypes.MsgSubmitJob{Owner: client, Spec: unplaceableJob(a, 1, 1, deadline)}
		}
		res := a.NextBlock(a.SignTx("client", 100_000_000, msgs...))
		require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
	}
	var w budgetWatch
	normal := (*normalJob)(nil)
	allExpired := func() bool {
		for id := uint64(1); id <= 1000; id++ {
			if getJob(t, a, id).Status == markettypes.JOB_STATUS_ACTIVE {
				return false
			}
		}
		return true
	}
	done := false
	for i := 0; i < 400 && !done; i++ {
		if normal == nil && !a.BlockTime().Before(deadline.Add(-5*time.Second)) {
			normal = startNormal(t, a)
		}
		a.NextBlock()
		w.check(t, a)
		settled := normal != nil && normal.step(t, a, nodes)
		done = settled && !a.BlockTime().Before(deadline) && allExpired()
	}
	if !done && normal != nil {
		tk := jobTasks(t, a, normal.id)[0]
		t.Logf("normal task: %s node %d reason %q; height %d", tk.Status, tk.NodeId, tk.Reason, a.Height())
	}
	require.True(t, done, "the thousand jobs expired (%v) and the normal job settled", allExpired())
	require.True(t, readLedger(a).escrow.IsZero(), "every escrow refunded")
	t.Logf("1,000 jobs expired; %d blocks watched, %d with the queue budget spent; peak queue gas %d, peak assign gas %d",
		w.blocks, w.spentBlocks, w.peakQueue, w.peakAssign)
}

// The maximal legal job (every list at its bound, 5,000 task replicas, EXACT) waiting in
// the scheduler, unplaceable at its price: every block's scheduling stays within the
// budget and a normal job submitted after it is still assigned and settled.
func TestAdversaryMaximalLegalJobPresent(t *testing.T) {
	a, nodes := marketApp(t, nil)
	spec := maximalJob(t, a)
	res := a.NextBlock(a.SignTx("client", uint64(a.ConsensusParamsMaxGas()), &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: spec}))
	require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
	var w budgetWatch
	normal := startNormal(t, a)
	settled := false
	for i := 0; i < 60 && !settled; i++ {
		a.NextBlock()
		w.check(t, a)
		settled = normal.step(t, a, nodes)
	}
	require.True(t, settled, "the normal job was assigned and settled")
	t.Logf("maximal job present: %d blocks, peak queue gas %d, peak assign gas %d", w.blocks, w.peakQueue, w.peakAssign)
}
