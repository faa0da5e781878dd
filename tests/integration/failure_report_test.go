package integration

import (
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sskeeper "github.com/flopsnet/flops/x/staking-slash/keeper"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// failureApp is marketApp billed by the minute, with a one-task gemm job submitted and
// assigned.
func failureApp(t *testing.T) (*apptest.App, map[string]uint64, markettypes.Params, uint64, markettypes.Task) {
	a, nodes := marketApp(t, func(p *markettypes.Params) { p.BillingGranularity = time.Minute })
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	job := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN))
	task := jobTasks(t, a, job)[0]
	require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, task.Status)
	return a, nodes, p, job, task
}

// reportAfter acks the task, lets ran pass, and reports it failed with exit code 2.
func reportAfter(t *testing.T, a *apptest.App, nodes map[string]uint64, task markettypes.Task, ran time.Duration) *markettypes.MsgReportFailureResponse {
	t.Helper()
	name := providerOf(nodes, task.NodeId)
	addr := a.Account(name)
	a.MustDeliver(name, &markettypes.MsgAckTask{Provider: addr.String(), TaskId: task.Id})
	a.BlockInterval = ran
	logs := sha256.Sum256([]byte("stderr: exit status 2"))
	res := a.MustDeliver(name, &markettypes.MsgReportFailure{Provider: addr.String(), TaskId: task.Id, Reason: markettypes.FAILURE_REASON_EXIT,
		ExitCode: 2, LogRoot: logs[:], Detail: "exit status 2"})
	a.BlockInterval = time.Second
	var md sdk.TxMsgData
	require.NoError(t, md.Unmarshal(res.Data))
	require.Len(t, md.MsgResponses, 1)
	var out markettypes.MsgReportFailureResponse
	require.NoError(t, out.Unmarshal(md.MsgResponses[0].Value))
	return &out
}

// reportedByP1 submits spec, whose one task p1's node (the only one registered) takes and
// reports failed, played by a driver; then the other providers get their nodes and the
// given behaviours (p1's: honest, unless given). It returns the driver, the job and the
// task.
func reportedByP1(t *testing.T, a *apptest.App, nodes map[string]uint64, spec markettypes.JobSpec, later map[string]behaviour) (*driver, uint64, markettypes.Task) {
	t.Helper()
	job := submit(t, a, spec)
	first := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], first.NodeId)
	names := []string{"p1"}
	for n := range later {
		if n != "p1" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	d := newDriver(t, a, names...)
	d.behaviours["p1"] = behaviour{fails: true}
	d.until(10, "p1 reported the failure", func() bool { return len(task(t, a, first.Id).Failures) == 1 })
	d.behaviours["p1"] = later["p1"]
	registerLate(t, a, nodes, names[1:]...)
	for n, b := range later {
		d.behaviours[n] = b
	}
	return d, job, first
}

// nextAssignment steps blocks until the task is assigned again.
func nextAssignment(t *testing.T, a *apptest.App, id uint64) markettypes.Task {
	t.Helper()
	for range 20 {
		a.NextBlock()
		if got := task(t, a, id); got.Status == markettypes.TASK_STATUS_ASSIGNED {
			return got
		}
	}
	t.Fatalf("task %d was not assigned again", id)
	return markettypes.Task{}
}

func bonds(t *testing.T, a *apptest.App, names ...string) map[string]sdkmath.Int {
	out := map[string]sdkmath.Int{}
	for _, n := range names {
		out[n] = bonded(t, a, n)
	}
	return out
}

// A job whose command exits non-zero on every node: the first provider reports it, the
// task runs on another operator's node, which reports it too. The job ends FAILED with
// the reason in its history, the owner pays exactly the confirmed time (the shorter run,
// 1 minute, at each provider's price), no provider is slashed and no slash reaches the
// owner.
func TestWiredJobFailingEverywhereEndsFailed(t *testing.T) {
	a, nodes, p, job, first := failureApp(t)
	before := readLedger(a)
	bondsBefore := bonds(t, a, "p1", "p2", "p3")
	res := reportAfter(t, a, nodes, first, 2*time.Minute)
	require.Equal(t, markettypes.FAILURE_STATUS_PENDING, res.Status)

	second := nextAssignment(t, a, first.Id)
	require.NotEqual(t, providerOf(nodes, first.NodeId), providerOf(nodes, second.NodeId))
	res = reportAfter(t, a, nodes, second, time.Minute)
	require.Equal(t, markettypes.FAILURE_STATUS_CONFIRMED, res.Status)

	require.Equal(t, markettypes.JOB_STATUS_FAILED, getJob(t, a, job).Status)
	got := task(t, a, first.Id)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, got.Status)
	charge := markettypes.TimePrice(first.Price, time.Minute, 10*time.Minute, p.BillingGranularity).
		Add(markettypes.TimePrice(second.Price, time.Minute, 10*time.Minute, p.BillingGranularity))
	after := readLedger(a)
	require.Equal(t, before.client.Add(got.Reserved).Sub(charge).String(), after.client.String(), "the owner pays exactly the confirmed time (its reservation came back less that)")
	require.True(t, after.escrow.IsZero())
	require.Equal(t, bondsBefore, bonds(t, a, "p1", "p2", "p3"), "no provider is slashed for the job's fault")
	hist, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).JobHistory(a.Ctx(), &markettypes.QueryJobHistoryRequest{JobId: job})
	require.NoError(t, err)
	var words []string
	for _, e := range hist.Entries {
		words = append(words, e.Event+": "+e.Detail)
	}
	require.Contains(t, strings.Join(words, "\n"), "exit code 2")
	require.Contains(t, strings.Join(words, "\n"), "JobFailed")
	a.AssertInvariants()
}

// A job that fails on one node only (a broken node, or a provider that would rather not
// run it and reports a failure): the task is reassigned and succeeds on another operator's
// node, its result audited for certain (it would refute the report) and confirmed. The
// report is refuted: its provider is slashed, the slash is burned (the owner gains
// nothing from it, so a client cannot farm slashes with a job that fails on some nodes),
// the owner is not charged for the failed run, and the refuting provider is paid its run.
func TestWiredAttackFalseFailureReportIsRefuted(t *testing.T) {
	a, nodes, p := sparedApp(t, 3)
	spec := committeeJob(a, p)
	// p1's job never failed: a lie
	d, job, first := reportedByP1(t, a, nodes, spec, map[string]behaviour{"p2": {}, "p3": {}})
	before := readLedger(a)
	liarBond := bonded(t, a, "p1")
	supply := a.BankKeeper.GetSupply(a.Ctx(), udps).Amount

	d.until(300, "job finished", jobDone(t, a, job))
	got := task(t, a, first.Id)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, got.Status)
	require.NotEqual(t, a.Account("p1").String(), got.Provider)
	require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, job).Status)
	audits := role(t, a, job, markettypes.TASK_ROLE_AUDIT)
	require.Len(t, audits, 1, "the result that would refute the report is audited")
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, audits[0].Status)
	require.Equal(t, markettypes.FAILURE_STATUS_REFUTED, got.Failures[0].Status)
	require.True(t, got.Failures[0].Paid.IsZero(), "a refuted report is not paid")
	slash := jobSlash(p, liarBond, 1e6, first.Price.Add(spec.PriorityTip.Amount))
	require.Equal(t, liarBond.Sub(slash).String(), bonded(t, a, "p1").String(), "slashed 2x the task's value")
	after := readLedger(a)
	require.Equal(t, before.client.Add(got.Reserved).Sub(got.Paid).Add(spec.VerificationBudget.Amount).Sub(audits[0].Paid).String(), after.client.String(),
		"the owner pays the run that produced the result and its audit, and no more")
	require.Equal(t, supply.Sub(slash).String(), a.BankKeeper.GetSupply(a.Ctx(), udps).Amount.String(), "the slash is burned")
	var reasons []sstypes.SlashReason
	for _, r := range slashes(t, a, "p1") {
		reasons = append(reasons, r.Reason)
	}
	require.Equal(t, []sstypes.SlashReason{sstypes.SLASH_REASON_FALSE_FAILURE}, reasons)
	a.AssertInvariants()
}

// TestWiredAttackMadeUpResultOnANoneJob: a NONE job fails on every machine; p1 reports it
// honestly, and the next node given the task makes up a result. Nothing verifies a NONE
// result, so it settles (the owner chose liveness only) and it refuted p1's report: p1
// was slashed for a false failure, max(abandon_slash_ppm, 2 x the task's value). Now the
// report ends UNCONFIRMED, slashed as an abandoned task, abandon_slash_ppm only.
func TestWiredAttackMadeUpResultOnANoneJob(t *testing.T) {
	a, nodes, p := sparedApp(t, 2)
	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN) // NONE
	// the task's value: 2x it is more than abandon_slash_ppm of p1's bond
	spec.PriorityTip = sdk.NewCoin(udps, bonded(t, a, "p1").MulRaw(int64(p.AbandonSlashPpm)).QuoRaw(1e6))
	d, job, first := reportedByP1(t, a, nodes, spec, map[string]behaviour{"p1": {fails: true}, "p2": {cheat: true}})
	bond := bonded(t, a, "p1")
	d.until(100, "job finished", jobDone(t, a, job))
	got := task(t, a, first.Id)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, got.Status)
	require.Equal(t, markettypes.FAILURE_STATUS_UNCONFIRMED, got.Failures[0].Status)
	slash := bond.MulRaw(int64(p.AbandonSlashPpm)).QuoRaw(1e6)
	require.Equal(t, bond.Sub(slash).String(), bonded(t, a, "p1").String(), "abandon_slash_ppm, not 2x the task's value")
	s := slashes(t, a, "p1")
	require.Len(t, s, 1)
	require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, s[0].Reason)
	a.AssertInvariants()
}

// TestWiredAttackOwnersNodeLapsesTheRerun: a client that also runs a node (p2, another
// account, 100 DPS bonded) has it lapse the rerun of its failing job, reported honestly
// by p1, which has ten times the bond. The report ends UNCONFIRMED. p1 was slashed
// abandon_slash_ppm of its whole bond, ten times what the lapse cost p2; now at most what
// it cost p2.
func TestWiredAttackOwnersNodeLapsesTheRerun(t *testing.T) {
	a, nodes := marketAppLate(t, 2, 1, func(p *markettypes.Params) { p.MaxReassignments = 0 })
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	a.MustDeliver("p1", &sstypes.MsgBond{Provider: a.Account("p1").String(), Amount: sdk.NewInt64Coin(udps, 900_000_000)})
	d, job, first := reportedByP1(t, a, nodes, committeeJob(a, p), map[string]behaviour{"p1": {fails: true}, "p2": {silent: true}})
	p1Bond, p2Bond := bonded(t, a, "p1"), bonded(t, a, "p2")
	require.Equal(t, p2Bond.MulRaw(10).String(), p1Bond.String())
	d.until(60, "job finished", jobDone(t, a, job))

	got := task(t, a, first.Id)
	require.True(t, got.Failures[0].Rerun)
	require.Equal(t, markettypes.FAILURE_STATUS_UNCONFIRMED, got.Failures[0].Status)
	p2Lost := p2Bond.Sub(bonded(t, a, "p2"))
	// p2's node asks what p1's does: the same price
	require.Equal(t, jobSlash(p, p2Bond, p.AbandonSlashPpm, first.Price.Add(getJob(t, a, job).Spec.PriorityTip.Amount)).String(), p2Lost.String(),
		"the lapse cost p2 abandon_slash_ppm, at most 2x the task's value")
	require.Equal(t, p2Lost.String(), got.Failures[0].RerunSlashed.String())
	p1Lost := p1Bond.Sub(bonded(t, a, "p1"))
	require.True(t, p1Lost.IsPositive(), "an unconfirmed report still costs")
	require.True(t, p1Lost.LTE(p2Lost), "p1 lost %s, at most the %s the lapse cost p2 (abandon_slash_ppm of its bond: %s)",
		p1Lost, p2Lost, p1Bond.MulRaw(int64(p.AbandonSlashPpm)).QuoRaw(1e6))
	s := slashes(t, a, "p1")
	require.Len(t, s, 1)
	require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, s[0].Reason)
	a.AssertInvariants()
}

// The exposure invariant reads both modules: a provider's exposure in x/staking-slash is
// what x/market holds for it. Exposure that nobody holds (it would lock collateral for
// good), or a held exposure released early (it would let a slash be dodged), breaks it.
func TestExposureInvariantMatchesTheMarket(t *testing.T) {
	a, nodes, _, _, first := failureApp(t)
	name := providerOf(nodes, first.NodeId)
	reportAfter(t, a, nodes, first, time.Minute) // a pending report holds 2x the value
	a.AssertInvariants()
	ctx := a.Ctx()
	require.NoError(t, a.StakingSlashKeeper.AddExposure(ctx, a.Account(name).Address, sdkmath.NewInt(1)))
	err := a.Invariants.AssertAll(ctx)
	require.ErrorContains(t, err, "exposure")
	require.ErrorContains(t, err, a.Account(name).String())
}

// A client whose job makes its providers abandon it (a command that takes the machine
// down, or hangs its worker) gains nothing from their slashes: an abandoned task's slash
// is burned, not paid to the job's owner. Before, half of it went to the owner, so such a
// job farmed the collateral of every provider it was assigned to.
func TestAttackJobThatMakesProvidersAbandonPaysItsOwnerNothing(t *testing.T) {
	a, nodes, p, _, first := failureApp(t)
	before := readLedger(a)
	supply := a.BankKeeper.GetSupply(a.Ctx(), udps).Amount
	victim := providerOf(nodes, first.NodeId)
	bond := bonded(t, a, victim)
	a.NextBlocks(int(p.AckTimeoutBlocks) + 1) // the provider never acks: its machine is gone
	got := task(t, a, first.Id)
	require.NotEqual(t, first.NodeId, got.NodeId, "the task left the abandoning node")
	slash := bond.Sub(bonded(t, a, victim))
	require.True(t, slash.IsPositive(), "the abandoning provider is slashed")
	require.Equal(t, before.client.String(), readLedger(a).client.String(), "the owner gets none of the slash")
	require.Equal(t, supply.Sub(slash).String(), a.BankKeeper.GetSupply(a.Ctx(), udps).Amount.String(), "the slash is burned")
	a.AssertInvariants()
}

// TestWiredAttackJobThatTakesTheMachineDownBurnsABigBond: the same job against a provider
// with 500,000 DPS bonded. Its lapse was slashed abandon_slash_ppm of the whole bond,
// 5,000 DPS burned, for a task of under 2 DPS: a client (or a competitor) could burn a
// large provider's collateral by the thousand for the price of one task. Now the lapse
// costs at most failure_penalty_multiple x the task's value, rounded up to a whole ppm of
// the bond.
func TestWiredAttackJobThatTakesTheMachineDownBurnsABigBond(t *testing.T) {
	a, nodes, p, _, first := failureApp(t)
	victim := providerOf(nodes, first.NodeId)
	a.MustDeliver(victim, &sstypes.MsgBond{Provider: a.Account(victim).String(), Amount: sdk.NewInt64Coin(udps, 499_900_000_000)})
	bond := bonded(t, a, victim)
	require.Equal(t, "500000000000", bond.String())
	supply := a.BankKeeper.GetSupply(a.Ctx(), udps).Amount
	value := first.Price.Add(getJob(t, a, first.JobId).Spec.PriorityTip.Amount)
	a.NextBlocks(int(p.AckTimeoutBlocks) + 1) // the machine is gone before it acks
	require.NotEqual(t, first.NodeId, task(t, a, first.Id).NodeId, "the task left the node")
	lost := bond.Sub(bonded(t, a, victim))
	most := value.MulRaw(int64(p.FailurePenaltyMultiple)).Add(bond.QuoRaw(1e6))
	require.True(t, lost.IsPositive(), "a lapse still costs")
	require.True(t, lost.LTE(most), "lost %s udps for a task worth %s (at most %s)", lost, value, most)
	require.Equal(t, jobSlash(p, bond, p.AbandonSlashPpm, value).String(), lost.String())
	require.Equal(t, supply.Sub(lost).String(), a.BankKeeper.GetSupply(a.Ctx(), udps).Amount.String(), "burned")
	a.AssertInvariants()
}

// The attack of a client on the only provider that can run its job, on the wired app: a
// job naming a disk that only p1's node offers (requirements.disk_mib_per_gpu; a region,
// class or runtime only one operator offers does the same) fails on purpose. p1 reports
// the failure honestly; no other operator's node can be given the task, so nothing
// decides the report. It ended UNCONFIRMED, and p1 was slashed abandon_slash_ppm of its
// bond, burned, for each such job, which cost the client its fees. Now it ends UNDECIDED:
// p1's bond, its exposure and the supply are as before the job; p1 is not paid.
func TestWiredAttackFailingJobOnlyOneOperatorCanRun(t *testing.T) {
	a, nodes := marketApp(t, nil)
	p1 := a.Account("p1").String()
	spec := a100("p1", 1)
	spec.DiskMibPerGpu = 2 << 20
	a.MustDeliver("p1", &gfltypes.MsgUpdateNode{Operator: p1, NodeId: nodes["p1"], Spec: spec})
	job := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	job.Requirements.DiskMibPerGpu = 1 << 20
	id := submit(t, a, job)
	first := jobTasks(t, a, id)[0]
	require.Equal(t, nodes["p1"], first.NodeId, "the only node that offers the disk")
	bond := bonded(t, a, "p1")
	supply := a.BankKeeper.GetSupply(a.Ctx(), udps).Amount
	reportAfter(t, a, nodes, first, time.Minute)

	// the task waits, placed nowhere, until its deadline (the job's)
	a.BlockInterval = task(t, a, first.Id).Deadline.Sub(a.BlockTime())
	a.NextBlock()
	a.BlockInterval = time.Second
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	a.NextBlocks(int(p.AssignRetryMaxBlocks) + 1)

	got := task(t, a, first.Id)
	require.Equal(t, markettypes.TASK_STATUS_EXPIRED, got.Status)
	require.Equal(t, markettypes.FAILURE_STATUS_UNDECIDED, got.Failures[0].Status)
	require.True(t, got.Failures[0].Paid.IsZero())
	require.Equal(t, bond.String(), bonded(t, a, "p1").String(), "not slashed")
	require.Equal(t, supply.String(), a.BankKeeper.GetSupply(a.Ctx(), udps).Amount.String(), "nothing burned")
	res, err := sskeeper.NewQueryServerImpl(a.StakingSlashKeeper).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: p1})
	require.NoError(t, err)
	require.Empty(t, res.Slashes)
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p1").Address)
	require.NoError(t, err)
	require.True(t, c.Exposure.IsZero(), "the report's reserved collateral is released")
	require.True(t, c.SlashedTotal.IsZero(), "no slash")
	a.AssertInvariants()
}
