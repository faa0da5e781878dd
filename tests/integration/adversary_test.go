package integration

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Adversaries against the market's block work, on the wired app. Each builds the largest
// legal load of its kind, then runs blocks with a normal client's job alongside and
// asserts, after every block: the market's EndBlock spent at most its budgets (gas on its
// own meters, queue_gas_per_block and assign_gas_per_block), the invariants hold; and at
// the end: the attack's work is done (in parts, over several blocks where it is big), its
// escrow is refunded, and the normal job was assigned, run and settled.

// budgetWatch reads the market's last EndBlock work and keeps the peaks. Spending at most
// the budget holds by construction (blockhook.Budget runs each unit on a meter holding
// what is left), so the check that matters is the other one: the EndBlock ran, and its
// work went through the metered budgets (requireMetered), not around them.
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

// requireMetered: the attack's work was charged to the budgets.
func (w *budgetWatch) requireMetered(t *testing.T) {
	t.Helper()
	require.Positive(t, w.peakQueue+w.peakAssign, "the block work went through the metered budgets")
}

// normalJob is a client's ordinary job running alongside an attack: submitted, assigned,
// run by its provider (one message per block, in the blocks the test checks) and settled.
type normalJob struct {
	id   uint64
	ran  bool
	salt []byte
	root [32]byte
}

func startNormal(t *testing.T, a *apptest.App) *normalJob {
	t.Helper()
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	spec.Requirements.Region = "" // any node
	return &normalJob{id: submit(t, a, spec), salt: []byte("0123456789abcdef"), root: sha256.Sum256([]byte("normal result"))}
}

// txs is what the provider sends in the next block given its task's status.
func (n *normalJob) txs(t *testing.T, a *apptest.App, nodes map[string]uint64) [][]byte {
	t.Helper()
	if n == nil {
		return nil
	}
	tk := jobTasks(t, a, n.id)[0]
	name := providerOf(nodes, tk.NodeId)
	if name == "" {
		return nil
	}
	addr := a.Account(name)
	var msg sdk.Msg
	switch {
	case tk.Status == markettypes.TASK_STATUS_ASSIGNED:
		msg = &markettypes.MsgAckTask{Provider: addr.String(), TaskId: tk.Id}
	case tk.Status == markettypes.TASK_STATUS_RUNNING:
		msg = &markettypes.MsgCommitResult{Provider: addr.String(), TaskId: tk.Id, Commitment: markettypes.Commitment(n.root[:], n.salt, addr.Address)}
	case tk.Status == markettypes.TASK_STATUS_COMMITTED && a.Height() > tk.CommitHeight:
		msg = &markettypes.MsgRevealResult{Provider: addr.String(), TaskId: tk.Id, ResultRoot: n.root[:], Salt: n.salt,
			OutputUri: "https://" + name + ".example.com/out/normal", Usage: markettypes.Usage{GpuSeconds: 3}}
		n.ran = true
	default:
		return nil
	}
	return [][]byte{a.SignTx(name, apptest.DefaultGas, msg)}
}

// settled: the normal job's task was paid.
func (n *normalJob) settled(t *testing.T, a *apptest.App) bool {
	t.Helper()
	return n != nil && jobTasks(t, a, n.id)[0].Status == markettypes.TASK_STATUS_SETTLED
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
			w.check(t, a)
		}
		a.NextBlock(normal.txs(t, a, nodes)...)
		w.check(t, a)
		if expiredAt == 0 && getJob(t, a, big).Status != markettypes.JOB_STATUS_ACTIVE {
			expiredAt = a.Height()
		}
		settled := normal.settled(t, a)
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
	w.requireMetered(t)
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
			w.check(t, a)
		}
		a.NextBlock(normal.txs(t, a, nodes)...)
		w.check(t, a)
		settled := normal.settled(t, a)
		done = settled && !a.BlockTime().Before(deadline) && allExpired()
	}
	require.True(t, done, "the thousand jobs expired (%v) and the normal job settled", allExpired())
	require.True(t, readLedger(a).escrow.IsZero(), "every escrow refunded")
	w.requireMetered(t)
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
	w.check(t, a)
	settled := false
	for i := 0; i < 60 && !settled; i++ {
		a.NextBlock(normal.txs(t, a, nodes)...)
		w.check(t, a)
		settled = normal.settled(t, a)
	}
	require.True(t, settled, "the normal job was assigned and settled")
	w.requireMetered(t)
	t.Logf("maximal job present: %d blocks, peak queue gas %d, peak assign gas %d", w.blocks, w.peakQueue, w.peakAssign)
}

// An auction with the most bids the params allow (max_bids_per_job from as many nodes)
// for the most tasks an AUCTION job may have: the close clears it within the budget,
// every task is assigned, the losers' deposits are refunded, and a normal job is served.
func TestAdversaryAuctionWithMaximumBids(t *testing.T) {
	const providers = 100
	a, nodes := marketAppN(t, providers, nil)
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	require.Equal(t, uint32(providers), p.MaxBidsPerJob)
	spec := gemmJob(a, p.MaxAuctionTasks, markettypes.ALLOCATION_MODE_AUCTION)
	spec.Requirements.Region = ""
	job := submit(t, a, spec)
	var txs [][]byte
	for i := 1; i <= providers; i++ {
		name := fmt.Sprintf("p%d", i)
		txs = append(txs, a.SignTx(name, apptest.DefaultGas, &markettypes.MsgPlaceBid{
			Provider: a.Account(name).String(), JobId: job, NodeId: nodes[name], Price: sdkmath.NewInt(100_000 + int64(i)), Quantity: 1,
		}))
	}
	res := a.NextBlock(txs...)
	for i, r := range res.TxResults {
		require.Zero(t, r.Code, "bid %d: %s", i, r.Log)
	}
	require.Len(t, getJob(t, a, job).Spec.Requirements.AllowedClasses, 0)

	var w budgetWatch
	normal := startNormal(t, a)
	w.check(t, a)
	settled := false
	for i := 0; i < 60 && (!settled || getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING); i++ {
		a.NextBlock(normal.txs(t, a, nodes)...)
		w.check(t, a)
		settled = normal.settled(t, a)
	}
	require.True(t, settled, "the normal job was served")
	require.Equal(t, markettypes.JOB_STATUS_ACTIVE, getJob(t, a, job).Status, "the auction closed")
	assigned := 0
	for _, tk := range jobTasks(t, a, job) {
		if tk.Status == markettypes.TASK_STATUS_ASSIGNED {
			assigned++
		}
	}
	require.Equal(t, int(p.MaxAuctionTasks), assigned, "every task went to a bidder")
	w.requireMetered(t)
	t.Logf("auction of %d tasks with %d bids: %d blocks, peak queue gas %d, peak assign gas %d",
		p.MaxAuctionTasks, providers, w.blocks, w.peakQueue, w.peakAssign)
}

// The node holding the most tasks a node can (max_gpus_per_node 1-GPU tasks, all running)
// stops its heartbeats: its lapse is processed in parts within the budget, every task is
// lapsed (reassigned or failed) with its exposure released, and a normal job is served.
func TestAdversaryNodeWithMostTasksLapses(t *testing.T) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.HeartbeatTimeoutBlocks = 4; p.MaxReassignments = 0 })
	gp, err := a.GFLKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	gpus := int(gp.MaxGpusPerNode)
	// p3 registers a second, big node in a region of its own
	big := "p3"
	op := a.Account(big).String()
	spec := a100(big+"-big", gpus)
	spec.Region = "big-region"
	a.MustDeliver(big,
		&sstypes.MsgBond{Provider: op, Amount: sdk.NewInt64Coin(udps, int64(gpus)*100_000_000)},
		&gfltypes.MsgRegisterNode{Operator: op, Spec: spec},
	)
	bigNode := nodesOfOperator(t, a, big)
	js := gemmJob(a, uint32(gpus), markettypes.ALLOCATION_MODE_ASSIGN)
	js.Requirements.Region = "big-region"
	job := submit(t, a, js)
	var acks []sdk.Msg
	for _, tk := range jobTasks(t, a, job) {
		require.Equal(t, bigNode, tk.NodeId)
		acks = append(acks, &markettypes.MsgAckTask{Provider: op, TaskId: tk.Id})
	}
	a.MustDeliver(big, acks...)
	for _, tk := range jobTasks(t, a, job) {
		require.Equal(t, markettypes.TASK_STATUS_RUNNING, tk.Status)
	}

	var w budgetWatch
	normal := startNormal(t, a)
	w.check(t, a)
	settled, lapsed := false, false
	for i := 0; i < 60 && (!settled || !lapsed); i++ {
		a.NextBlock(normal.txs(t, a, nodes)...)
		w.check(t, a)
		settled = normal.settled(t, a)
		lapsed = true
		for _, tk := range jobTasks(t, a, job) {
			lapsed = lapsed && tk.Status != markettypes.TASK_STATUS_RUNNING
		}
	}
	require.True(t, lapsed, "every task of the silent node lapsed")
	require.True(t, settled, "the normal job was served")
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account(big).Address)
	require.NoError(t, err)
	slot, err := a.MarketKeeper.Slots.Get(a.Ctx(), bigNode)
	require.NoError(t, err)
	require.Zero(t, slot.GpusUsed, "the node's GPUs are free")
	require.True(t, c.SlashedTotal.IsPositive(), "the abandon is slashed")
	w.requireMetered(t)
	t.Logf("a node with %d running tasks lapsed: %d blocks, peak queue gas %d, peak assign gas %d", gpus, w.blocks, w.peakQueue, w.peakAssign)
}

// nodesOfOperator is the operator's only node.
func nodesOfOperator(t *testing.T, a *apptest.App, name string) uint64 {
	t.Helper()
	ids := nodesOf(t, a, name)
	require.NotEmpty(t, ids)
	return ids[len(ids)-1]
}

// submittedJob reads the job id from a MsgSubmitJob tx's result data.
func submittedJob(t testing.TB, data []byte) uint64 {
	t.Helper()
	var md sdk.TxMsgData
	require.NoError(t, md.Unmarshal(data))
	require.Len(t, md.MsgResponses, 1)
	var r markettypes.MsgSubmitJobResponse
	require.NoError(t, r.Unmarshal(md.MsgResponses[0].Value))
	return r.JobId
}

// A job nobody can take parks as one group, whatever its size: once the scheduler has
// met it, the maximal legal job (5,000 task replicas) is examined once per
// assign_retry_max_blocks, and in every other block the scheduler spends what it spends
// in a quiet block. Parked task by task, it cost 100 examinations and their writes every
// block (about 6x a quiet block's FinalizeBlock).
func TestAttackHugeUnplaceableJobCostsOneExamination(t *testing.T) {
	const watched = 32
	var retryMax uint32
	perBlock := func(spec func(a *apptest.App) *markettypes.JobSpec) []uint64 {
		a, _ := marketApp(t, nil)
		p, err := a.MarketKeeper.GetParams(a.Ctx())
		require.NoError(t, err)
		retryMax = p.AssignRetryMaxBlocks
		if s := spec(a); s != nil {
			res := a.NextBlock(a.SignTx("client", uint64(a.ConsensusParamsMaxGas()), &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: *s}))
			require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
		}
		a.NextBlocks(10) // the scheduler meets it and its back-off reaches its cap
		var w budgetWatch
		var gas []uint64
		for range watched {
			a.NextBlock()
			w.check(t, a)
			gas = append(gas, a.MarketKeeper.LastBlockWork().AssignGas)
		}
		return gas
	}
	quiet := perBlock(func(*apptest.App) *markettypes.JobSpec { return nil })
	quietMax := uint64(0)
	for _, g := range quiet {
		quietMax = max(quietMax, g)
	}
	huge := perBlock(func(a *apptest.App) *markettypes.JobSpec { s := maximalJob(t, a); return &s })
	busy := 0
	for _, g := range huge {
		if g > quietMax {
			busy++
		}
	}
	t.Logf("scheduler gas per block: quiet at most %d; with the maximal job %v", quietMax, huge)
	require.LessOrEqual(t, busy, watched/int(retryMax)+1, "the maximal job is examined once per back-off period")
}

// TestAttackHugeJobSpecTaxesTheScheduler: the scheduler reads a job's spec at each
// examination, charged to the block's assign budget, and a spec's command, environment,
// inputs and task arguments (its program) are most of a large one: the maximal legal job
// (310,510 bytes of spec) cost 2,409,319 gas an examination against 568,081 for the same
// job without them, so a few hundred such jobs, examined once per back-off period each
// for their lifetime, kept every block's assign budget busy. A program of more than 1 KiB
// is stored apart since store version 11, and the examinations cost the same; the Job
// query still gives the spec whole.
func TestAttackHugeJobSpecTaxesTheScheduler(t *testing.T) {
	peak := map[bool]uint64{}
	for _, slim := range []bool{false, true} {
		a, _ := marketApp(t, nil)
		s := maximalJob(t, a)
		if slim {
			s.Command, s.Env, s.Inputs = []string{"run"}, nil, nil
			for i := range s.TaskArgs {
				s.TaskArgs[i].Args = nil
			}
		}
		res := a.NextBlock(a.SignTx("client", uint64(a.ConsensusParamsMaxGas()), &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: s}))
		require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
		next, _, err := a.MarketKeeper.PeekIDs(a.Ctx())
		require.NoError(t, err)
		job := next - 1
		for range 20 { // the scheduler meets it, and again after its back-off
			a.NextBlock()
			peak[slim] = max(peak[slim], a.MarketKeeper.LastBlockWork().AssignGas)
		}
		got, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: job})
		require.NoError(t, err)
		require.Equal(t, s, got.Job.Spec, "the Job query gives the spec whole")
		t.Logf("spec of %d bytes: an examination %d gas", s.Size(), peak[slim])
		a.AssertInvariants()
	}
	require.InDelta(t, peak[true], peak[false], 10_000, "an examination costs the same whatever the job's program")
}
