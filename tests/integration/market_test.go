package integration

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
)

const udps = "udps"

// marketApp: a client and three providers with one bonded A100 node each; short windows;
// PoCP challenges out of the way.
func marketApp(t testing.TB, edit func(p *markettypes.Params)) (*apptest.App, map[string]uint64) {
	return marketAppN(t, 3, edit)
}

// marketAppN is marketApp with n providers p1..pn.
func marketAppN(t testing.TB, n int, edit func(p *markettypes.Params)) (*apptest.App, map[string]uint64) {
	return marketAppLate(t, n, n, edit)
}

// marketAppLate has n provider accounts of which only the first registered have a node;
// registerLate gives the others theirs later.
func marketAppLate(t testing.TB, n, registered int, edit func(p *markettypes.Params), opts ...apptest.Option) (*apptest.App, map[string]uint64) {
	names := []string{"client"}
	for i := 1; i <= n; i++ {
		names = append(names, fmt.Sprintf("p%d", i))
	}
	a := apptest.New(t, append([]apptest.Option{apptest.WithAccounts(names...), apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() { g.Params.ChallengeIntervalBlocks = 1_000_000 })
		var m markettypes.GenesisState
		e.Edit(markettypes.ModuleName, &m, func() {
			m.Params.ChallengeWindowBlocks = 5
			m.Params.AuctionWindowBlocks = 6
			// these tests' tasks (10 minutes) are billed in one 10-minute unit, so that a
			// settled task is paid its price + tip; TestWiredTaskPaidForTimeUsed bills by
			// the minute
			m.Params.BillingGranularity = 10 * time.Minute
			if edit != nil {
				edit(&m.Params)
			}
		})
	})}, opts...)...)
	nodes := map[string]uint64{}
	for _, p := range names[1 : 1+registered] {
		nodes[p] = bondAndRegister(t, a, p, 1)
	}
	return a, nodes
}

// registerLate bonds and registers the nodes of providers created by marketAppLate.
func registerLate(t testing.TB, a *apptest.App, nodes map[string]uint64, names ...string) {
	t.Helper()
	for _, n := range names {
		nodes[n] = bondAndRegister(t, a, n, 1)
	}
}

// gemmJob is a 1-GPU BUILTIN gemm job of n tasks with a 10-minute max duration.
func gemmJob(a *apptest.App, tasks uint32, mode markettypes.AllocationMode) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin:   markettypes.BuiltinArgs{GemmN: 256, GemmR: 1},
		TaskCount: tasks, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin(udps, 5_000_000), MaxDuration: 10 * time.Minute,
		Deadline: a.BlockTime().Add(24 * time.Hour), PriorityTip: sdk.NewInt64Coin(udps, 100_000), Mode: mode,
		VerificationBudget: sdk.NewInt64Coin(udps, 0),
	}
}

func submit(t testing.TB, a *apptest.App, spec markettypes.JobSpec) uint64 {
	t.Helper()
	res := a.MustDeliver("client", &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: spec})
	return submittedJob(t, res.Data)
}

func jobTasks(t testing.TB, a *apptest.App, job uint64) []markettypes.Task {
	t.Helper()
	res, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: job})
	require.NoError(t, err)
	return res.Tasks
}

func getJob(t testing.TB, a *apptest.App, id uint64) markettypes.Job {
	t.Helper()
	j, err := a.MarketKeeper.GetJob(a.Ctx(), id)
	require.NoError(t, err)
	return j
}

// providerOf maps a node id back to its account name.
func providerOf(nodes map[string]uint64, node uint64) string {
	for name, id := range nodes {
		if id == node {
			return name
		}
	}
	return ""
}

// run plays the provider's side of a task: ack, commit, reveal, each in its own block.
func run(t testing.TB, a *apptest.App, nodes map[string]uint64, task markettypes.Task) {
	t.Helper()
	name := providerOf(nodes, task.NodeId)
	addr := a.Account(name)
	a.MustDeliver(name, &markettypes.MsgAckTask{Provider: addr.String(), TaskId: task.Id})
	root := sha256.Sum256([]byte("result of task"))
	salt := []byte("0123456789abcdef")
	a.MustDeliver(name, &markettypes.MsgCommitResult{Provider: addr.String(), TaskId: task.Id, Commitment: markettypes.Commitment(root[:], salt, addr.Address)})
	a.MustDeliver(name, &markettypes.MsgRevealResult{Provider: addr.String(), TaskId: task.Id, ResultRoot: root[:], Salt: salt,
		OutputUri: "https://" + name + ".example.com/out/" + string(rune('a'+task.Index)), Usage: markettypes.Usage{GpuSeconds: 3}})
}

type ledger struct{ client, pool, fees, escrow sdkmath.Int }

func readLedger(a *apptest.App) ledger {
	return ledger{
		client: a.Balance(a.Account("client").Address, udps),
		pool:   a.ModuleBalance(dpstypes.ModuleName, udps),
		// x/distribution sweeps the fee collector every block: count both.
		fees:   a.ModuleBalance(authtypes.FeeCollectorName, udps).Add(a.ModuleBalance(distrtypes.ModuleName, udps)),
		escrow: a.ModuleBalance(markettypes.ModuleName, udps),
	}
}

// A job's whole life under ASSIGN: escrowed at submission, assigned in the same block,
// acked, committed, revealed, settled after the challenge window; the provider gets price
// + tip - take, the take splits exactly between the reward pool and the fee collector,
// the owner gets back everything else, and the escrow ends empty.
func TestAssignJobLifeBalances(t *testing.T) {
	a, nodes := marketApp(t, nil)
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	before := readLedger(a)
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job := submit(t, a, spec)

	budget := spec.Budget()
	require.Equal(t, budget, readLedger(a).escrow, "the whole budget is escrowed")
	tasks := jobTasks(t, a, job)
	require.Len(t, tasks, 1)
	task := tasks[0]
	require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status, "assigned in the block of the submission")
	// quote: 1 DPS per GPU-hour x 1 GPU x 10 minutes = 166,666.7 -> 166,667 udps
	require.Equal(t, sdkmath.NewInt(166_667), task.Price)
	name := providerOf(nodes, task.NodeId)
	provBefore := a.Balance(a.Account(name).Address, udps)
	a.AssertInvariants()

	run(t, a, nodes, task)
	a.AssertInvariants()
	a.NextBlocks(int(p.ChallengeWindowBlocks))
	task, err = a.MarketKeeper.GetTask(a.Ctx(), task.Id)
	require.NoError(t, err)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, task.Status)
	require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, job).Status)

	gross := task.Price.Add(spec.PriorityTip.Amount)       // 266,667
	take := gross.MulRaw(int64(p.TakeRatePpm)).QuoRaw(1e6) // 13,333
	pool := take.MulRaw(int64(p.TakePoolSharePpm)).QuoRaw(1e6)
	after := readLedger(a)
	require.Equal(t, before.client.Sub(gross), after.client, "the owner pays price + tip, nothing more")
	require.Equal(t, provBefore.Add(gross).Sub(take), a.Balance(a.Account(name).Address, udps))
	require.Equal(t, before.pool.Add(pool), after.pool)
	require.Equal(t, before.fees.Add(take.Sub(pool)), after.fees)
	require.True(t, after.escrow.IsZero())
	a.AssertInvariants()

	// the provider's exposure was released and its work recorded
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account(name).Address)
	require.NoError(t, err)
	require.True(t, c.Exposure.IsZero())
	hist, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).JobHistory(a.Ctx(), &markettypes.QueryJobHistoryRequest{JobId: job})
	require.NoError(t, err)
	var events []string
	for _, e := range hist.Entries {
		events = append(events, e.Event)
	}
	require.Equal(t, []string{"JobSubmitted", "TaskAssigned", "TaskRunning", "TaskCommitted", "TaskRevealed", "TaskSettled", "JobCompleted"}, events)
}

func bid(t testing.TB, a *apptest.App, name string, node, job uint64, price int64) {
	t.Helper()
	a.MustDeliver(name, &markettypes.MsgPlaceBid{Provider: a.Account(name).String(), JobId: job, NodeId: node, Price: sdkmath.NewInt(price), Quantity: 1})
}

// A job's whole life under AUCTION: three bids for two tasks; the two cheapest win and
// both are paid the uniform clearing price of the first losing bid; the loser's deposit
// returns at the close, the winners' at their ack; balances exact to the udps.
func TestAuctionJobLifeBalances(t *testing.T) {
	a, nodes := marketApp(t, nil)
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	before := readLedger(a)
	provBefore := map[string]sdkmath.Int{}
	for _, n := range []string{"p1", "p2", "p3"} {
		provBefore[n] = a.Balance(a.Account(n).Address, udps)
	}
	spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_AUCTION)
	job := submit(t, a, spec)
	require.Equal(t, markettypes.JOB_STATUS_BIDDING, getJob(t, a, job).Status)

	bid(t, a, "p1", nodes["p1"], job, 200_000)
	bid(t, a, "p2", nodes["p2"], job, 150_000)
	bid(t, a, "p3", nodes["p3"], job, 300_000)
	deposit := p.BidDeposit.Amount
	require.Equal(t, provBefore["p3"].Sub(deposit), a.Balance(a.Account("p3").Address, udps), "the deposit is locked")
	// a second bid of the same node, and a bid above the max price, are refused
	r := a.Deliver("p1", &markettypes.MsgPlaceBid{Provider: a.Account("p1").String(), JobId: job, NodeId: nodes["p1"], Price: sdkmath.NewInt(1), Quantity: 1})
	require.Equal(t, markettypes.ErrDuplicateBid.ABCICode(), r.Code)
	a.AssertInvariants()

	for getJob(t, a, job).Status == markettypes.JOB_STATUS_BIDDING {
		a.NextBlock()
	}
	j := getJob(t, a, job)
	// the clearing price is in effective terms (price / reputation factor): every new node
	// scores initial_score 0.5, so the first losing bid of 300,000 clears at 600,000, and
	// each winner is paid it times its own factor, 300,000
	score := reputationtypes.DefaultParams().InitialScore
	require.Equal(t, sdkmath.LegacyNewDec(300_000).Quo(score).TruncateInt(), j.ClearingPrice, "the first losing bid sets the price")
	require.Equal(t, provBefore["p3"], a.Balance(a.Account("p3").Address, udps), "the loser's deposit is back")
	tasks := jobTasks(t, a, job)
	won := map[string]bool{}
	for _, task := range tasks {
		require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status)
		require.Equal(t, sdkmath.NewInt(300_000), task.Price, "every winner is paid the clearing price")
		won[providerOf(nodes, task.NodeId)] = true
	}
	require.Equal(t, map[string]bool{"p1": true, "p2": true}, won)
	for _, task := range tasks {
		run(t, a, nodes, task)
	}
	a.NextBlocks(int(p.ChallengeWindowBlocks))
	require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, job).Status)

	gross := sdkmath.NewInt(300_000).Add(spec.PriorityTip.Amount)
	take := gross.MulRaw(int64(p.TakeRatePpm)).QuoRaw(1e6)
	pool := take.MulRaw(int64(p.TakePoolSharePpm)).QuoRaw(1e6)
	for _, n := range []string{"p1", "p2"} {
		require.Equal(t, provBefore[n].Add(gross).Sub(take), a.Balance(a.Account(n).Address, udps), n)
	}
	after := readLedger(a)
	require.Equal(t, before.client.Sub(gross.MulRaw(2)), after.client)
	require.Equal(t, before.pool.Add(pool.MulRaw(2)), after.pool)
	require.Equal(t, before.fees.Add(take.Sub(pool).MulRaw(2)), after.fees)
	require.True(t, after.escrow.IsZero())
	a.AssertInvariants()
}

// A provider that stops heartbeating loses its running task: it is slashed (burned), and the task goes to another node with its last checkpoint; that node
// finishes it and is paid. After max_reassignments a task fails and is refunded.
func TestReassignmentOnLapsedHeartbeat(t *testing.T) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.HeartbeatTimeoutBlocks = 4; p.MaxReassignments = 1 })
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job := submit(t, a, spec)
	task := jobTasks(t, a, job)[0]
	first, price := providerOf(nodes, task.NodeId), task.Price
	addr := a.Account(first)
	a.MustDeliver(first, &markettypes.MsgAckTask{Provider: addr.String(), TaskId: task.Id})
	a.MustDeliver(first, &markettypes.MsgHeartbeat{Provider: addr.String(), NodeId: task.NodeId})
	ckpt := "1111111111111111111111111111111111111111111111111111111111111111"
	a.MustDeliver(first, &markettypes.MsgCheckpoint{Provider: addr.String(), TaskId: task.Id, Sha256: ckpt, Uri: "https://" + first + ".example.com/ckpt/1"})
	collBefore, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), addr.Address)
	require.NoError(t, err)
	clientBefore := a.Balance(a.Account("client").Address, udps)

	// the worker dies: no more heartbeats
	for {
		a.NextBlock()
		got, err := a.MarketKeeper.GetTask(a.Ctx(), task.Id)
		require.NoError(t, err)
		if got.NodeId != task.NodeId {
			task = got
			break
		}
	}
	require.Equal(t, uint32(1), task.Reassignments)
	require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status, "reassigned in the block it lapsed")
	require.NotEqual(t, first, providerOf(nodes, task.NodeId))
	require.Equal(t, ckpt, task.Checkpoint.Sha256, "the next node receives the checkpoint")
	require.Contains(t, task.ExcludedNodes, nodes[first])

	collAfter, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), addr.Address)
	require.NoError(t, err)
	slashed := jobSlash(p, collBefore.Bonded, p.AbandonSlashPpm, price.Add(spec.PriorityTip.Amount))
	require.True(t, slashed.IsPositive())
	require.Equal(t, collBefore.Bonded.Sub(slashed), collAfter.Bonded, "the first provider is slashed abandon_slash_ppm, at most 2x the task's value")
	require.Equal(t, clientBefore, a.Balance(a.Account("client").Address, udps),
		"the slash is burned: a job can make its provider abandon it, so its owner gains nothing from that")
	require.True(t, collAfter.Exposure.IsZero(), "the lapsed task no longer weighs on the first provider")
	a.AssertInvariants()

	// the second node never acks: the second lapse exceeds max_reassignments = 1
	for {
		a.NextBlock()
		got, err := a.MarketKeeper.GetTask(a.Ctx(), task.Id)
		require.NoError(t, err)
		if got.Status != markettypes.TASK_STATUS_ASSIGNED {
			task = got
			break
		}
	}
	require.Equal(t, markettypes.TASK_STATUS_FAILED, task.Status)
	require.Equal(t, markettypes.JOB_STATUS_FAILED, getJob(t, a, job).Status)
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "the failed task's escrow is refunded")
	a.AssertInvariants()
}

// Cancelling: unstarted tasks are refunded at once, a running one is paid pro rata of its
// max duration, a committed one finishes and is paid; the escrow ends empty.
func TestCancelJob(t *testing.T) {
	a, nodes := marketApp(t, nil)
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	spec := gemmJob(a, 4, markettypes.ALLOCATION_MODE_ASSIGN) // 3 nodes: one task waits
	job := submit(t, a, spec)
	clientStart := a.Balance(a.Account("client").Address, udps)
	byStatus := func() map[markettypes.TaskStatus][]markettypes.Task {
		m := map[markettypes.TaskStatus][]markettypes.Task{}
		for _, task := range jobTasks(t, a, job) {
			m[task.Status] = append(m[task.Status], task)
		}
		return m
	}
	assigned := byStatus()[markettypes.TASK_STATUS_ASSIGNED]
	require.Len(t, assigned, 3)
	require.Len(t, byStatus()[markettypes.TASK_STATUS_PENDING], 1)
	running, committed := assigned[0], assigned[1]
	for _, task := range []markettypes.Task{running, committed} {
		n := providerOf(nodes, task.NodeId)
		a.MustDeliver(n, &markettypes.MsgAckTask{Provider: a.Account(n).String(), TaskId: task.Id})
	}
	cn := providerOf(nodes, committed.NodeId)
	root := sha256.Sum256([]byte("r"))
	salt := []byte("salt-salt-salt-salt")
	a.MustDeliver(cn, &markettypes.MsgCommitResult{Provider: a.Account(cn).String(), TaskId: committed.Id, Commitment: markettypes.Commitment(root[:], salt, a.Account(cn).Address)})
	running, _ = a.MarketKeeper.GetTask(a.Ctx(), running.Id)

	// only the owner cancels
	r := a.Deliver("p1", &markettypes.MsgCancelJob{Owner: a.Account("p1").String(), JobId: job})
	require.Equal(t, markettypes.ErrNotOwner.ABCICode(), r.Code)
	a.MustDeliver("client", &markettypes.MsgCancelJob{Owner: a.Account("client").String(), JobId: job})
	require.Equal(t, markettypes.JOB_STATUS_CANCELLED, getJob(t, a, job).Status)
	st := byStatus()
	require.Len(t, st[markettypes.TASK_STATUS_CANCELLED], 3)
	require.Len(t, st[markettypes.TASK_STATUS_COMMITTED], 1)

	// the running task: acked 3 blocks (3 s) before the cancel, max duration 600 s
	rt, _ := a.MarketKeeper.GetTask(a.Ctx(), running.Id)
	gross := running.Price.Add(spec.PriorityTip.Amount)
	elapsed := a.BlockTime().Sub(running.StartedTime)
	owed := gross.MulRaw(int64(elapsed)).QuoRaw(int64(spec.MaxDuration))
	require.Equal(t, owed, rt.Paid)
	a.AssertInvariants()

	// the committed task reveals and settles normally; then the job ends, escrow empty
	a.MustDeliver(cn, &markettypes.MsgRevealResult{Provider: a.Account(cn).String(), TaskId: committed.Id, ResultRoot: root[:], Salt: salt, OutputUri: "https://x.example.com/o"})
	a.NextBlocks(int(p.ChallengeWindowBlocks))
	ct, _ := a.MarketKeeper.GetTask(a.Ctx(), committed.Id)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, ct.Status)
	j := getJob(t, a, job)
	require.NotZero(t, j.FinishedHeight)
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero())
	paid := owed.Add(ct.Price.Add(spec.PriorityTip.Amount))
	require.Equal(t, clientStart.Add(spec.Budget()).Sub(paid), a.Balance(a.Account("client").Address, udps), "the owner pays exactly the work done")
	a.AssertInvariants()
}

// On the wired app, billed by the minute: a 10-minute task acked, then committed 2.5
// minutes later, costs its owner 3 minutes of its price (166,667 x 3/10 = 50,000 udps)
// plus its tip, exactly; the provider gets that less the take; the escrow ends empty and
// the invariants hold.
func TestWiredTaskPaidForTimeUsed(t *testing.T) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.BillingGranularity = time.Minute })
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	before := readLedger(a)
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job := submit(t, a, spec)
	task := jobTasks(t, a, job)[0]
	require.Equal(t, sdkmath.NewInt(166_667), task.Price)
	name := providerOf(nodes, task.NodeId)
	addr := a.Account(name)
	provBefore := a.Balance(addr.Address, udps)

	a.MustDeliver(name, &markettypes.MsgAckTask{Provider: addr.String(), TaskId: task.Id})
	a.BlockInterval = 150 * time.Second
	root, salt := sha256.Sum256([]byte("result of task")), []byte("0123456789abcdef")
	a.MustDeliver(name, &markettypes.MsgCommitResult{Provider: addr.String(), TaskId: task.Id, Commitment: markettypes.Commitment(root[:], salt, addr.Address)})
	a.BlockInterval = time.Second
	a.MustDeliver(name, &markettypes.MsgRevealResult{Provider: addr.String(), TaskId: task.Id, ResultRoot: root[:], Salt: salt,
		OutputUri: "https://" + name + ".example.com/out/a", Usage: markettypes.Usage{GpuSeconds: 150}})
	ran := jobTasks(t, a, job)[0]
	require.Equal(t, 150*time.Second, ran.CommitTime.Sub(ran.StartedTime))
	a.NextBlocks(int(p.ChallengeWindowBlocks) + 1)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, jobTasks(t, a, job)[0].Status)

	gross := sdkmath.NewInt(50_000).Add(spec.PriorityTip.Amount)
	take := gross.MulRaw(int64(p.TakeRatePpm)).QuoRaw(1e6)
	after := readLedger(a)
	require.Equal(t, before.client.Sub(gross).String(), after.client.String(), "the owner pays 3 minutes of 10 and the tip")
	require.Equal(t, provBefore.Add(gross).Sub(take).String(), a.Balance(addr.Address, udps).String())
	require.True(t, after.escrow.IsZero())
	a.AssertInvariants()
}
