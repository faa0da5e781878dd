package keeper_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

var testLogRoot = sha256.Sum256([]byte("logs"))

func failureMsg(task types.Task, code int32) *types.MsgReportFailure {
	return &types.MsgReportFailure{Provider: task.Provider, TaskId: task.Id, Reason: types.FAILURE_REASON_EXIT, ExitCode: code,
		LogRoot: testLogRoot[:], Detail: "exit status " + string(rune('0'+code))}
}

// reportFailure reports the running task failed with an exit code, in the current block.
func (f *fixture) reportFailure(task types.Task, code int32) types.FailureStatus {
	f.t.Helper()
	res, err := f.ms.ReportFailure(f.ctx, failureMsg(task, code))
	require.NoError(f.t, err)
	return res.Status
}

// failingSetup is two operators with one node each and a one-task job assigned to one of
// them, acked.
func failingSetup(t *testing.T, edit func(p *types.Params)) (*fixture, uint64, types.Task) {
	return failingSetupWith(t, edit, func(f *fixture) types.JobSpec { return f.gemmSpec(1) })
}

// failingSetupWith is failingSetup with the job the given spec.
func failingSetupWith(t *testing.T, edit func(p *types.Params), spec func(*fixture) types.JobSpec) (*fixture, uint64, types.Task) {
	f := newFixture(t, edit)
	f.addNode(f.operator("p1"), 8, nil)
	f.addNode(f.operator("p2"), 8, nil)
	job := f.submit(spec(f))
	f.blocks(1)
	task := f.tasks(job)[0]
	require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
	f.ack(task)
	return f, job, f.task(task.Id)
}

// The worker of a job whose command exits 2 reports it; the chain does not take its word:
// the task runs again on the other operator's node, which fails too. The job ends FAILED
// with the reason in its history, each provider is paid the confirmed time (the shorter of
// the two runs) at its price, the owner gets the rest back, and nobody is slashed.
func TestFailureConfirmedByAnotherOperatorFailsTheJob(t *testing.T) {
	f, job, task := failingSetup(t, nil)
	clientBefore := f.balance(f.client)
	first := task.Provider
	f.next(3 * time.Minute)
	require.Equal(t, types.FAILURE_STATUS_PENDING, f.reportFailure(task, 2))
	require.True(t, f.hasEvent("EventFailureReport"))

	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_PENDING, got.Status, "the task runs again elsewhere")
	require.Contains(t, got.ExcludedNodes, task.NodeId)
	require.Zero(t, got.Reassignments, "a failure report is not a lapse")
	require.Len(t, got.Failures, 1)
	require.Equal(t, types.FAILURE_STATUS_PENDING, got.Failures[0].Status)
	require.Equal(t, 3*time.Minute, got.Failures[0].TimeUsed)
	require.True(t, f.coll.exp(first).IsZero(), "the run's exposure is released; a NONE job's report, never refuted, reserves none (a verified job's: TestAttackFalseFailureReportIsRefuted)")
	f.assertInvariants()

	second := f.untilAssigned(task.Id)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, second.Status)
	require.NotEqual(t, first, second.Provider, "confirmed by another operator")
	f.ack(second)
	f.next(2 * time.Minute)
	require.Equal(t, types.FAILURE_STATUS_CONFIRMED, f.reportFailure(f.task(task.Id), 2))

	got = f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_FAILED, got.Status)
	require.Contains(t, got.Reason, "exit code 2")
	require.Equal(t, types.JOB_STATUS_FAILED, f.job(job).Status)
	each := types.TimePrice(quote10m, 2*time.Minute, 10*time.Minute, f.params().BillingGranularity) // 33,333
	require.Equal(t, int64(33_333), each.Int64())
	for _, r := range got.Failures {
		require.Equal(t, types.FAILURE_STATUS_CONFIRMED, r.Status)
		require.Equal(t, each.String(), r.Paid.String(), "paid the confirmed time, not its own 3 minutes")
	}
	require.Equal(t, each.MulRaw(2).String(), got.Paid.String())
	require.Equal(t, clientBefore.Add(got.Reserved).Sub(got.Paid).String(), f.balance(f.client).String(), "the owner pays exactly the confirmed time")
	require.Empty(t, f.coll.slashes, "nobody is slashed for the job's fault")
	require.True(t, f.coll.exp(first).IsZero())
	require.True(t, f.escrow().IsZero())
	history := f.history(job)
	require.Contains(t, history, "TaskFailureReported")
	require.Contains(t, history, "failed on two operators' nodes")
	f.assertInvariants()
}

// history is the job's stored history in one string.
func (f *fixture) history(job uint64) string {
	f.t.Helper()
	res, err := keeper.NewQueryServerImpl(f.k).JobHistory(f.ctx, &types.QueryJobHistoryRequest{JobId: job})
	require.NoError(f.t, err)
	var b strings.Builder
	for _, e := range res.Entries {
		b.WriteString(e.Event + " " + e.Detail + "\n")
	}
	return b.String()
}

// exactSpec is gemmSpec(1) verified EXACT, with a verification budget for its audits.
func (f *fixture) exactSpec() types.JobSpec {
	spec := f.gemmSpec(1)
	spec.Verification = types.VERIFICATION_CLASS_EXACT
	spec.VerificationBudget = sdk.NewInt64Coin(udps, 20_000_000)
	return spec
}

// verifiedByAudit plays a committed EXACT result whose audit is drawn for certain (it
// would refute a failure report): the audit is placed on another operator's node, runs,
// and agrees; both reveal, and the result settles after its challenge window. It returns
// the audit.
func (f *fixture) verifiedByAudit(job uint64, task types.Task) types.Task {
	f.t.Helper()
	var audit types.Task
	for range 10 {
		f.blocks(1)
		for _, tk := range f.tasks(job) {
			if tk.Role == types.TASK_ROLE_AUDIT && tk.Status == types.TASK_STATUS_ASSIGNED {
				audit = tk
			}
		}
		if audit.Id != 0 {
			break
		}
	}
	require.NotZero(f.t, audit.Id, "the result that would refute the report is audited")
	require.NotEqual(f.t, task.Provider, audit.Provider)
	f.ack(audit)
	f.blocks(1)
	f.commit(audit)
	f.blocks(1)
	f.reveal(task)
	f.reveal(audit)
	for range f.params().ChallengeWindowBlocks + 2 {
		f.blocks(1)
	}
	return f.task(audit.Id)
}

// A provider that does not want to run a task reports it failed a second after its ack.
// The task runs on another operator's node and settles, its result verified (audited, as
// every result that would refute a report is): the report is refuted, its provider
// slashed (burned: no compensation and no reward, so that neither an owner with a job
// that fails on some nodes only nor the refuting provider gains from it) and never paid;
// the owner pays only the run that produced the result and its audit.
func TestAttackFalseFailureReportIsRefuted(t *testing.T) {
	f, job, task := failingSetupWith(t, nil, (*fixture).exactSpec)
	f.addNode(f.operator("p3"), 8, nil) // the auditor's
	clientBefore := f.balance(f.client)
	liar := task.Provider
	f.next(time.Second)
	require.Equal(t, types.FAILURE_STATUS_PENDING, f.reportFailure(task, 1))
	value := quote10m.Add(f.job(job).Spec.PriorityTip.Amount)
	require.Equal(t, value.MulRaw(2).String(), f.coll.exp(liar).String(), "a verified job's report reserves 2x the task's value")

	honest := f.untilAssigned(task.Id)
	f.ack(honest)
	f.next(3 * time.Minute)
	f.commit(honest)
	audit := f.verifiedByAudit(job, honest)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_SETTLED, got.Status)
	require.Equal(t, types.JOB_STATUS_COMPLETED, f.job(job).Status)
	require.Equal(t, types.FAILURE_STATUS_REFUTED, got.Failures[0].Status)
	require.True(t, got.Failures[0].Paid.IsZero(), "a refuted report is not paid")
	require.Len(t, f.coll.slashes, 1)
	s := f.coll.slashes[0]
	require.Equal(t, liar, s.provider)
	require.Equal(t, sstypes.SLASH_REASON_FALSE_FAILURE, s.reason)
	require.Empty(t, s.owner, "the owner is not compensated from a refuted report")
	require.Equal(t, uint32(ceilPPM(value.MulRaw(2), f.coll.bonded[key(liar)])), s.ppm,
		"2x the task's value, rounded up to a ppm of the bond: not abandon_slash_ppm of this 1,000,000 DPS bond")
	tip := f.job(job).Spec.PriorityTip.Amount
	want := types.TimePrice(quote10m, 3*time.Minute, 10*time.Minute, time.Minute).Add(tip)
	require.Equal(t, want.String(), got.Paid.String(), "the owner pays only the run that produced the result")
	require.True(t, audit.Paid.IsPositive())
	require.Equal(t, clientBefore.Add(got.Reserved).Sub(want).Add(f.job(job).Spec.VerificationBudget.Amount).Sub(audit.Paid).String(),
		f.balance(f.client).String(), "and its audit, out of the verification budget")
	require.True(t, f.coll.exp(liar).IsZero())
	require.Contains(t, f.history(job), "FailureRefuted")
	f.assertInvariants()
}

// A refuted report is slashed failure_penalty_multiple x the task's value, whatever the
// bond: here 7.8% of a small one, more than abandon_slash_ppm of it.
func TestFalseFailureSlashCoversTwiceTheValue(t *testing.T) {
	f := newFixture(t, nil)
	small := f.operator("small")
	f.coll.bond(small, sdkmath.NewInt(30_000_000)) // 30 DPS bonded: backs the run's 20x exposure
	f.addNode(small, 8, nil)
	spec := f.exactSpec()
	spec.PriorityTip = sdk.NewInt64Coin(udps, 1_000_000) // value 1.166667 DPS: 2x is 7.8% of the bond
	job := f.submit(spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	require.Equal(t, small, task.Provider, "the only node")
	f.addNode(f.operator("p2"), 8, nil) // the one that will refute it
	f.addNode(f.operator("p3"), 8, nil) // the auditor's
	f.ack(task)
	f.blocks(1)
	f.reportFailure(f.task(task.Id), 1)
	honest := f.untilAssigned(task.Id)
	require.NotEqual(t, small, honest.Provider)
	f.ack(honest)
	f.blocks(1)
	f.commit(honest)
	f.verifiedByAudit(job, honest)
	require.Equal(t, types.FAILURE_STATUS_REFUTED, f.task(task.Id).Failures[0].Status)
	require.Len(t, f.coll.slashes, 1)
	// ceil(2 x 1,166,667 x 1e6 / 30,000,000) ppm
	require.Equal(t, uint32(77_778), f.coll.slashes[0].ppm)
	f.assertInvariants()
}

// The attack of a client (or of a provider on a competitor) on a provider with a large
// bond, with jobs of its own worth about 1.17 DPS a task: one that fails on some runs
// only, so that its provider's honest report is refuted when the next run succeeds, and
// one that takes its machine down, so that the task lapses. Each cost the provider
// abandon_slash_ppm of its whole bond at least, 10,000 DPS of 1,000,000, burned, for the
// price of one task: a griefing ratio of thousands to one. Now every slash a job can
// cause is at most failure_penalty_multiple (2) x the task's value, rounded up to a whole
// ppm of the bond (1 DPS here): 3 DPS.
func TestAttackFailingJobsBurnABigBond(t *testing.T) {
	const bond = 1_000_000_000_000 // 1,000,000 DPS
	tip := sdk.NewInt64Coin(udps, 1_000_000)
	value := quote10m.Add(tip.Amount) // 1.166667 DPS
	most := value.MulRaw(2).AddRaw(bond / 1_000_000)
	lost := func(f *fixture, provider string) sdkmath.Int {
		total := sdkmath.ZeroInt()
		for _, s := range f.coll.slashesOf(provider) {
			total = total.Add(sdkmath.NewInt(bond).MulRaw(int64(s.ppm)).QuoRaw(1_000_000))
		}
		return total
	}
	t.Run("job that fails on some runs", func(t *testing.T) {
		f := newFixture(t, nil)
		big := f.operator("big")
		f.coll.bond(big, sdkmath.NewInt(bond))
		f.addNode(big, 8, nil)
		spec := f.exactSpec()
		spec.PriorityTip = tip
		job := f.submit(spec)
		f.blocks(1)
		task := f.tasks(job)[0]
		require.Equal(t, big, task.Provider)
		f.addNode(f.operator("p2"), 8, nil) // the next run succeeds there
		f.addNode(f.operator("p3"), 8, nil) // the auditor's
		f.ack(task)
		f.blocks(1)
		f.reportFailure(f.task(task.Id), 1) // honest: the run failed
		next := f.untilAssigned(task.Id)
		f.ack(next)
		f.blocks(1)
		f.commit(next)
		f.verifiedByAudit(job, next)
		require.Equal(t, types.FAILURE_STATUS_REFUTED, f.task(task.Id).Failures[0].Status)
		require.Len(t, f.coll.slashesOf(big), 1)
		got := lost(f, big)
		require.True(t, got.GTE(value.MulRaw(2)), "still 2x the value: %s", got)
		require.True(t, got.LTE(most), "lost %s for a task worth %s (at most %s)", got, value, most)
		f.assertInvariants()
	})
	t.Run("job that takes the machine down", func(t *testing.T) {
		f := newFixture(t, nil)
		f.addNode(f.operator("p1"), 8, nil)
		f.addNode(f.operator("p2"), 8, nil)
		spec := f.gemmSpec(1)
		spec.PriorityTip = tip
		job := f.submit(spec)
		f.blocks(1)
		task := f.tasks(job)[0]
		f.coll.bond(task.Provider, sdkmath.NewInt(bond))
		f.ack(task)
		for range f.params().HeartbeatTimeoutBlocks + 1 { // the machine is gone: no heartbeat
			f.blocks(1)
		}
		got := f.task(task.Id)
		require.NotEqual(t, task.NodeId, got.NodeId, "the task left the node")
		s := f.coll.slashesOf(task.Provider)
		require.Len(t, s, 1)
		require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, s[0].reason)
		require.True(t, lost(f, task.Provider).LTE(most), "lost %s for a task worth %s (at most %s)", lost(f, task.Provider), value, most)
		require.True(t, lost(f, task.Provider).IsPositive(), "a lapse still costs")
		f.assertInvariants()
	})
}

// The attack of a provider on a competitor's honest report: a NONE job fails on every
// machine, its first provider reports it, and the node given the task next (another
// operator's) makes up a result instead of running it. Nothing verifies a NONE result, so
// it settled and refuted the honest report: its provider was slashed max(abandon_slash_ppm,
// 2 x the task's value) for a false failure and marked down as for a wrong result, all on
// the word of a result anyone could make up, though NONE is never slashed for
// correctness. Now such a report ends UNCONFIRMED: treated as an abandoned task
// (abandon_slash_ppm, burned; a lapse in reputation), which is what giving a NONE task up
// costs any other way, and it reserves no 2x collateral while it waits.
func TestAttackMadeUpResultOnANoneJobRefutesAnHonestReport(t *testing.T) {
	f := newFixture(t, nil)
	honest := f.operator("honest")
	f.coll.bond(honest, sdkmath.NewInt(30_000_000))
	f.addNode(honest, 8, nil)
	spec := f.gemmSpec(1)                                // NONE
	spec.PriorityTip = sdk.NewInt64Coin(udps, 1_000_000) // value 1.166667 DPS: 2x is 7.8% of the bond
	job := f.submit(spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	require.Equal(t, honest, task.Provider)
	f.addNode(f.operator("liar"), 8, nil)
	f.ack(task)
	f.blocks(1)
	require.Equal(t, types.FAILURE_STATUS_PENDING, f.reportFailure(f.task(task.Id), 1))
	require.True(t, f.coll.exp(honest).IsZero(), "a NONE job's pending report holds no collateral: it is never refuted")
	liar := f.untilAssigned(task.Id)
	require.NotEqual(t, honest, liar.Provider)
	f.ack(liar)
	f.blocks(1)
	f.commit(liar) // a root it made up: nothing checks it
	f.blocks(1)
	f.reveal(liar)
	for range f.params().ChallengeWindowBlocks + 2 {
		f.blocks(1)
	}
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_SETTLED, got.Status, "the owner chose liveness only: the result is paid")
	require.Equal(t, types.FAILURE_STATUS_UNCONFIRMED, got.Failures[0].Status, "not refuted by an unverified result")
	require.True(t, got.Failures[0].Paid.IsZero())
	require.Len(t, f.coll.slashes, 1)
	s := f.coll.slashes[0]
	require.Equal(t, honest, s.provider)
	require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, s.reason, "not a false failure")
	require.Equal(t, f.params().AbandonSlashPpm, s.ppm, "what giving the task up costs, not 2x its value (77,778 ppm of this bond)")
	require.Empty(t, s.owner)
	require.True(t, f.coll.exp(honest).IsZero())
	require.Contains(t, f.history(job), "a result the job does not verify (NONE)")
	f.assertInvariants()
}

// A report that no other run decides (here: the only other node never acks, and the task
// runs out of reassignments) is treated as an abandoned task: abandon_slash_ppm, at most 2x
// the task's value, burned.
func TestFailureUnconfirmedIsTreatedAsAbandoning(t *testing.T) {
	f, _, task := failingSetup(t, func(p *types.Params) { p.MaxReassignments = 0 })
	reporter := task.Provider
	f.next(time.Minute)
	f.reportFailure(task, 3)
	other := f.untilAssigned(task.Id)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, other.Status)
	require.True(t, other.Failures[0].Rerun, "another operator's node was given the task")
	for range f.params().AckTimeoutBlocks + 1 {
		f.blocks(1)
	}
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_FAILED, got.Status)
	require.Equal(t, types.FAILURE_STATUS_UNCONFIRMED, got.Failures[0].Status)
	mine := f.coll.slashesOf(reporter)
	require.Len(t, mine, 1)
	require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, mine[0].reason)
	require.Equal(t, f.abandonPPM(task), mine[0].ppm, "as an abandoned task: at most 2x its value")
	require.Empty(t, mine[0].owner)
	require.True(t, f.coll.exp(reporter).IsZero())
	f.assertInvariants()
}

// The attack of a client that also runs a node, under another account with a small bond,
// on a provider with a big one: a job that fails on purpose and that only those two can
// run (a region only they are in). The honest provider reports the failure; the task can
// go only to the client's node, which gives it up (never acks) or, for a NONE job, makes
// a result up. Either way the report ends unconfirmed, and its provider was slashed
// abandon_slash_ppm of its whole bond (10,000,000,000 udps of 1,000,000 DPS here) for as
// much of the client's 10 DPS (100,000 udps), or for nothing. Now an unconfirmed report
// is slashed at most what giving the task up cost, or would have cost, the rerun's
// provider: the two lose the same.
func TestAttackOwnersNodeLeavesAReportUnconfirmed(t *testing.T) {
	for _, c := range []struct {
		name string
		none bool // the job is NONE and the client's node settles a made-up result
	}{
		{"the rerun lapses", false},
		{"a NONE job's rerun makes a result up", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(p *types.Params) { p.MaxReassignments = 0 })
			honest := f.operator("honest") // 1,000,000 DPS bonded
			f.addNode(honest, 8, func(n *gfltypes.Node) { n.Region = "rare" })
			spec := f.exactSpec()
			if c.none {
				spec = f.gemmSpec(1)
			}
			spec.Requirements.Region = "rare"
			job := f.submit(spec)
			f.blocks(1)
			task := f.tasks(job)[0]
			require.Equal(t, honest, task.Provider)
			sybil := f.operator("sybil")
			f.coll.bond(sybil, sdkmath.NewInt(10_000_000)) // 10 DPS: covers the task's exposure
			f.addNode(sybil, 8, func(n *gfltypes.Node) { n.Region = "rare" })
			f.ack(task)
			f.blocks(1)
			f.reportFailure(f.task(task.Id), 1)
			rerun := f.untilAssigned(task.Id)
			require.Equal(t, sybil, rerun.Provider, "the only other node the job can run on")
			if c.none {
				f.ack(rerun)
				f.blocks(1)
				f.commit(rerun)
				f.blocks(1)
				f.reveal(rerun)
				for range f.params().ChallengeWindowBlocks + 2 {
					f.blocks(1)
				}
			} else {
				for range f.params().AckTimeoutBlocks + 1 {
					f.blocks(1)
				}
			}
			got := f.task(task.Id)
			require.Equal(t, types.FAILURE_STATUS_UNCONFIRMED, got.Failures[0].Status)
			abandon := f.params().AbandonSlashPpm
			sybilCost := sdkmath.NewInt(10_000_000).MulRaw(int64(abandon)).QuoRaw(1_000_000) // 100,000 udps
			if !c.none {
				require.Equal(t, sybilCost.String(), got.Failures[0].RerunSlashed.String(), "what the lapse cost the client's node")
			}
			mine := f.coll.slashesOf(honest)
			require.Len(t, mine, 1)
			require.Equal(t, sstypes.SLASH_REASON_ABANDONED_TASK, mine[0].reason)
			// floor(100,000 x 1e6 / 1e12) = 100 ppm of the honest bond: 100,000 udps, not
			// abandon_slash_ppm of it
			require.Equal(t, uint32(sybilCost.MulRaw(1_000_000).QuoRaw(1_000_000_000_000).Int64()), mine[0].ppm)
			require.Less(t, mine[0].ppm, abandon)
			f.assertInvariants()
		})
	}
}

// The attack of a client on the only provider that can run its job: a job whose
// requirements only one operator's nodes meet (here a region only p1 is in; a rare class,
// the PROCESS runtime or a large disk offer do the same) fails on purpose. Its honest
// provider reports the failure, and no other operator's node can ever run the task to
// decide the report. It ended UNCONFIRMED and was slashed abandon_slash_ppm of the
// provider's collateral, burned, for a job that cost the client nothing but fees: a cheap
// way to burn a chosen provider's bond. Now the report ends UNDECIDED: neither paid nor
// slashed, no lapse in the provider's reputation, its reserved collateral released.
func TestAttackFailingJobOnlyOneOperatorCanRunSlashesItsProvider(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("p1"), 8, func(n *gfltypes.Node) { n.Region = "lonely-1" })
	f.addNode(f.operator("p2"), 8, nil) // another region: never eligible
	spec := f.exactSpec()               // (a NONE job's report holds no collateral while pending)
	spec.Requirements.Region = "lonely-1"
	job := f.submit(spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	reporter := f.operator("p1")
	require.Equal(t, reporter, task.Provider, "the only eligible node")
	f.ack(task)
	f.next(2 * time.Minute)
	require.Equal(t, types.FAILURE_STATUS_PENDING, f.reportFailure(f.task(task.Id), 1))
	require.False(t, f.coll.exp(reporter).IsZero(), "the report reserves collateral while pending")
	lapsed := len(f.hooks.lapsed)
	// to the task's own deadline (the later of the job's and the report + max_duration +
	// verification_timeout)
	f.next(f.task(task.Id).Deadline.Sub(f.ctx.BlockTime()))
	// the queue looks at the waiting task again within assign_retry_max_blocks
	for i := 0; i <= int(f.params().AssignRetryMaxBlocks) && f.task(task.Id).Status == types.TASK_STATUS_PENDING; i++ {
		f.blocks(1)
	}

	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_EXPIRED, got.Status)
	require.False(t, got.Failures[0].Rerun, "no other operator's node was given it")
	require.Equal(t, types.FAILURE_STATUS_UNDECIDED, got.Failures[0].Status)
	require.True(t, got.Failures[0].Paid.IsZero(), "not paid")
	require.Empty(t, f.coll.slashes, "not slashed")
	require.Len(t, f.hooks.lapsed, lapsed, "no lapse in its reputation")
	require.True(t, f.coll.exp(reporter).IsZero(), "the reserved collateral is released")
	require.Contains(t, f.history(job), "FailureUndecided")
	f.assertInvariants()
}

// A report made just before the job's deadline still gets its confirmation: the task
// takes its own deadline (report + max_duration + verification_timeout).
func TestFailureReportNearTheDeadlineIsStillConfirmed(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("p1"), 8, nil)
	f.addNode(f.operator("p2"), 8, nil)
	spec := f.gemmSpec(1)
	spec.Deadline = f.ctx.BlockTime().Add(11 * time.Minute)
	job := f.submit(spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	f.ack(task)
	f.next(9 * time.Minute)
	f.reportFailure(f.task(task.Id), 2)
	require.True(t, f.task(task.Id).Deadline.After(spec.Deadline))
	second := f.untilAssigned(task.Id)
	require.Equal(t, types.TASK_STATUS_ASSIGNED, second.Status, "placed although the job's own deadline can no longer be met")
	f.ack(second)
	f.next(time.Minute)
	require.Equal(t, types.FAILURE_STATUS_CONFIRMED, f.reportFailure(f.task(task.Id), 2))
	require.Empty(t, f.coll.slashes)
	f.assertInvariants()
}

// The owner cancels while a report waits for its confirmation: the reporter is paid its
// time, as a cancelled running task is.
func TestFailureReportThenCancelPaysItsTime(t *testing.T) {
	f, job, task := failingSetup(t, nil)
	f.next(4 * time.Minute)
	f.reportFailure(task, 2)
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: job})
	require.NoError(t, err)
	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_CANCELLED, got.Status)
	require.Equal(t, types.FAILURE_STATUS_CANCELLED, got.Failures[0].Status)
	require.Equal(t, int64(166_667*4/10), got.Failures[0].Paid.Int64())
	require.Empty(t, f.coll.slashes)
	f.assertInvariants()
}

// Bad reports are refused with a registered error and change nothing.
func TestReportFailureRules(t *testing.T) {
	f, _, task := failingSetup(t, nil)
	report := func(edit func(m *types.MsgReportFailure)) func(ctx sdk.Context) error {
		return func(ctx sdk.Context) error {
			m := failureMsg(task, 2)
			edit(m)
			_, err := f.ms.ReportFailure(ctx, m)
			return err
		}
	}
	f.requireRejected(types.ErrNotProvider, report(func(m *types.MsgReportFailure) { m.Provider = f.client }))
	f.requireRejected(types.ErrInvalidFailure, report(func(m *types.MsgReportFailure) { m.Reason = types.FAILURE_REASON_UNSPECIFIED }))
	f.requireRejected(types.ErrInvalidFailure, report(func(m *types.MsgReportFailure) { m.Reason = 99 }))
	f.requireRejected(types.ErrInvalidFailure, report(func(m *types.MsgReportFailure) { m.LogRoot = m.LogRoot[:31] }))
	f.requireRejected(validate.ErrTooLarge, report(func(m *types.MsgReportFailure) { m.LogRoot = append(m.LogRoot, 0) }))
	f.requireRejected(validate.ErrTooLarge, report(func(m *types.MsgReportFailure) { m.Detail = strings.Repeat("x", 257) }))
	f.requireRejected(types.ErrInvalidFailure, report(func(m *types.MsgReportFailure) { m.Detail = "line\nbreak" }))
	f.requireRejected(types.ErrTaskNotFound, report(func(m *types.MsgReportFailure) { m.TaskId = 999 }))
	f.next(11 * time.Minute)
	f.requireRejected(types.ErrDeadlinePassed, report(func(*types.MsgReportFailure) {}))
}

// A task that is assigned but not acked cannot report failure: nothing ran.
func TestReportFailureNeedsARunningTask(t *testing.T) {
	f := newFixture(t, nil)
	task := f.assignedTask("p1")
	f.requireRejected(types.ErrInvalidTaskStatus, func(ctx sdk.Context) error {
		_, err := f.ms.ReportFailure(ctx, failureMsg(task, 2))
		return err
	})
}

// A heartbeat carries its node's running tasks' progress, which the task then shows;
// progress for a task that does not run on the node, twice for one task, too long or on
// two lines is refused and changes nothing. A reassignment forgets it.
func TestHeartbeatCarriesProgress(t *testing.T) {
	f, _, task := failingSetup(t, nil)
	beat := func(node uint64, pr ...types.TaskProgress) func(ctx sdk.Context) error {
		return func(ctx sdk.Context) error {
			_, err := f.ms.Heartbeat(ctx, &types.MsgHeartbeat{Provider: task.Provider, NodeId: node, Progress: pr})
			return err
		}
	}
	require.NoError(t, beat(task.NodeId, types.TaskProgress{TaskId: task.Id, Progress: "epoch 3/10 loss=0.41"})(f.ctx))
	got := f.task(task.Id)
	require.Equal(t, "epoch 3/10 loss=0.41", got.Progress)
	require.Equal(t, f.ctx.BlockHeight(), got.ProgressHeight)
	otherNode := f.addNode(task.Provider, 8, nil) // the same operator's other machine
	f.requireRejected(types.ErrInvalidProgress, beat(otherNode, types.TaskProgress{TaskId: task.Id, Progress: "x"}))
	f.requireRejected(types.ErrInvalidProgress, beat(task.NodeId, types.TaskProgress{TaskId: task.Id, Progress: "a"}, types.TaskProgress{TaskId: task.Id, Progress: "b"}))
	f.requireRejected(types.ErrInvalidProgress, beat(task.NodeId, types.TaskProgress{TaskId: task.Id, Progress: "two\nlines"}))
	f.requireRejected(validate.ErrTooLarge, beat(task.NodeId, types.TaskProgress{TaskId: task.Id, Progress: strings.Repeat("x", 129)}))
	f.requireRejected(types.ErrTaskNotFound, beat(task.NodeId, types.TaskProgress{TaskId: 999, Progress: "x"}))
	many := make([]types.TaskProgress, 65)
	f.requireRejected(validate.ErrTooMany, beat(task.NodeId, many...))
	f.next(time.Minute)
	f.reportFailure(f.task(task.Id), 2)
	require.Empty(t, f.task(task.Id).Progress, "the next node starts without the last one's progress")
}

// Two replicas of one shard fail on two operators' nodes: the second report confirms the
// first (which waits to run again) instead of running each replica a second time. Both
// replicas fail, each report is paid the confirmed time from its own replica's
// reservation, nobody is slashed.
func TestReplicaReportsConfirmEachOther(t *testing.T) {
	f := newFixture(t, nil)
	f.addNode(f.operator("p1"), 8, nil)
	f.addNode(f.operator("p2"), 8, nil)
	spec := f.gemmSpec(1)
	spec.Replicas = 2
	job := f.submit(spec)
	clientBefore := f.balance(f.client)
	f.blocks(1)
	tasks := f.tasks(job)
	require.Len(t, tasks, 2)
	for _, tk := range tasks {
		require.Equal(t, types.TASK_STATUS_ASSIGNED, tk.Status)
		f.ack(tk)
	}
	f.next(4 * time.Minute)
	require.Equal(t, types.FAILURE_STATUS_PENDING, f.reportFailure(f.task(tasks[0].Id), 2))
	f.next(time.Minute) // the first replica has nowhere to go: both operators are excluded
	require.Equal(t, types.TASK_STATUS_PENDING, f.task(tasks[0].Id).Status)
	require.Equal(t, types.FAILURE_STATUS_CONFIRMED, f.reportFailure(f.task(tasks[1].Id), 2))

	each := types.TimePrice(quote10m, 4*time.Minute, 10*time.Minute, time.Minute) // the shorter run
	paid := sdkmath.ZeroInt()
	for _, tk := range f.tasks(job) {
		require.Equal(t, types.TASK_STATUS_FAILED, tk.Status)
		require.Len(t, tk.Failures, 1)
		require.Equal(t, types.FAILURE_STATUS_CONFIRMED, tk.Failures[0].Status)
		require.Equal(t, each.String(), tk.Failures[0].Paid.String())
		paid = paid.Add(tk.Paid)
	}
	require.Equal(t, types.JOB_STATUS_FAILED, f.job(job).Status)
	require.Equal(t, clientBefore.Add(tasks[0].Reserved.MulRaw(2)).Sub(paid).String(), f.balance(f.client).String())
	require.Empty(t, f.coll.slashes)
	require.True(t, f.escrow().IsZero())
	f.assertInvariants()
}

// A provider whose collateral no longer covers its exposure (slashed for another task, or
// governance lowered the cap; found by the simulation, seed 12 of 500 blocks) reports a
// task failed. The report holds collateral in place of the run's, less of it
// (failure_penalty_multiple 2 against result_penalty_multiple 20), so it lowers the
// provider's exposure and must be taken. Before, the run's exposure was released and the
// report's then added on its own, which the cap refused: the provider could only abandon
// the task and be slashed for it.
func TestAttackCapForcesAbandonOfAFailedTask(t *testing.T) {
	f, job, task := failingSetupWith(t, nil, (*fixture).exactSpec) // a NONE job's report holds nothing
	before := f.coll.exp(task.Provider)
	require.True(t, before.IsPositive())
	// the cap is now below even the report's hold (a tenth of the run's)
	f.coll.bond(task.Provider, before.QuoRaw(40))
	f.next(3 * time.Minute)
	require.Equal(t, types.FAILURE_STATUS_PENDING, f.reportFailure(task, 2))
	got := f.task(task.Id)
	require.Len(t, got.Failures, 1)
	hold := got.Failures[0].Exposure
	require.True(t, hold.IsPositive())
	require.True(t, hold.LT(before))
	require.Equal(t, hold.String(), f.coll.exp(task.Provider).String(), "the report's hold in place of the run's")
	require.Equal(t, types.JOB_STATUS_ACTIVE, f.job(job).Status)
	f.assertInvariants()
}
