package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	sskeeper "github.com/flopsnet/flops/x/staking-slash/keeper"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// A verification task whose run of the job fails answers the failed-run root
// (markettypes.FailedRoot), compared with the result it verifies like any root
// (x/market/README.md, "Failure is a result"). These tests play the providers with the
// driver; worker/agent's TestAttackFakeResultOnAFailingJobSlashesTheAuditors runs real
// workers.

// slashes is the provider's slash history: reason and amount.
func slashes(t *testing.T, a *apptest.App, name string) []sstypes.SlashRecord {
	t.Helper()
	res, err := sskeeper.NewQueryServerImpl(a.StakingSlashKeeper).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account(name).String()})
	require.NoError(t, err)
	return res.Slashes
}

// sparedApp is marketAppLate with n providers, p1's node registered, whose audit draw
// spares every result but those it must audit for certain (no warm-up, no floor, a perfect
// starting reputation), and a committee of one.
func sparedApp(t *testing.T, n int) (*apptest.App, map[string]uint64, markettypes.Params) {
	a, nodes := marketAppLate(t, n, 1, func(p *markettypes.Params) {
		p.AuditWarmupTasks, p.AuditFloorPpm, p.CommitteeSize = 0, 0, 1
	}, apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g reputationtypes.GenesisState
		e.Edit(reputationtypes.ModuleName, &g, func() { g.Params.InitialScore = sdkmath.LegacyOneDec() })
	}))
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	return a, nodes, p
}

// TestAttackFakeResultRefutesAFailureReport: p1 runs a single-replica EXACT job that fails
// and reports it; the task runs again on another operator's node, whose provider makes up
// a result instead of running it. Unaudited, that result settled: the liar was paid and
// p1's honest report was refuted and slashed. Here the audit draw would spare the liar
// (no warm-up, no floor, a perfect reputation), but a result that would refute a failure
// report is audited for certain; the auditor's run fails too and answers so, the
// committee's does as well: the made-up result is overturned and its provider slashed
// for a wrong result and unpaid, and p1's report is confirmed and paid its time.
func TestAttackFakeResultRefutesAFailureReport(t *testing.T) {
	a, nodes, p := sparedApp(t, 4)
	d := newDriver(t, a, "p1", "p2", "p3", "p4")
	d.behaviours["p1"] = behaviour{fails: true}
	spec := committeeJob(a, p)
	job := submit(t, a, spec)
	first := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], first.NodeId)
	d.until(10, "p1 reported the failure", func() bool { return len(task(t, a, first.Id).Failures) == 1 })
	registerLate(t, a, nodes, "p2", "p3", "p4")
	d.until(10, "the task assigned again", func() bool { return task(t, a, first.Id).NodeId != 0 })
	liar := providerOf(nodes, task(t, a, first.Id).NodeId)
	for _, n := range []string{"p2", "p3", "p4"} {
		d.behaviours[n] = behaviour{fails: n != liar, cheat: n == liar}
	}
	liarStart, liarBond, p1Bond := a.Balance(a.Account(liar).Address, udps), bonded(t, a, liar), bonded(t, a, "p1")

	d.until(300, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	got := task(t, a, first.Id)
	audits := role(t, a, job, markettypes.TASK_ROLE_AUDIT)
	require.Len(t, audits, 1, "the result that would refute the report is audited")
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, audits[0].Status)
	require.Equal(t, markettypes.FailedRoot(), audits[0].ResultRoot)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dispute(t, a, got.DisputeId).Status)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, got.Status)
	require.Equal(t, markettypes.JOB_STATUS_FAILED, getJob(t, a, job).Status)

	require.Equal(t, markettypes.FAILURE_STATUS_CONFIRMED, got.Failures[0].Status, "p1's report is confirmed")
	require.True(t, got.Failures[0].Paid.IsPositive(), "and paid its time")
	require.Equal(t, p1Bond, bonded(t, a, "p1"), "p1 is not slashed")
	require.Empty(t, slashes(t, a, "p1"))

	s := slashes(t, a, liar)
	require.Len(t, s, 1)
	require.Equal(t, sstypes.SLASH_REASON_WRONG_RESULT, s[0].Reason)
	require.True(t, bonded(t, a, liar).LT(liarBond))
	require.Equal(t, liarStart, a.Balance(a.Account(liar).Address, udps), "the liar is paid nothing")
	for _, n := range []string{"p2", "p3", "p4"} {
		if n != liar {
			require.Empty(t, slashes(t, a, n), "%s answered that the job fails and is not slashed", n)
		}
	}
}

// beside runs a two-replica EXACT job, whose verification budget pays the given number of
// escalations, until one replica's failure report, from the failer, is confirmed by p3,
// while the other replica's provider (the liar) committed a made-up result; p4, registered
// last, is the one node left for an escalation. The job fails on every machine but the
// liar's.
func beside(t *testing.T, escalations int64) (a *apptest.App, nodes map[string]uint64, d *driver, job uint64, ts []markettypes.Task, liar, failer string) {
	a, nodes = marketAppLate(t, 4, 2, nil)
	spec := exactJob(a, 2, 0)
	spec.VerificationBudget = sdk.NewCoin(udps, spec.Reserved().MulRaw(escalations))
	job = submit(t, a, spec)
	ts = jobTasks(t, a, job)
	require.Len(t, ts, 2)
	liar, failer = providerOf(nodes, ts[0].NodeId), providerOf(nodes, ts[1].NodeId)
	require.NotEqual(t, liar, failer)
	d = newDriver(t, a, "p1", "p2", "p3", "p4")
	d.behaviours[liar] = behaviour{cheat: true}
	d.behaviours[failer] = behaviour{fails: true}
	d.behaviours["p3"] = behaviour{fails: true}
	d.behaviours["p4"] = behaviour{fails: true}
	d.until(10, "the failure reported", func() bool { return len(task(t, a, ts[1].Id).Failures) == 1 })
	registerLate(t, a, nodes, "p3")
	d.until(20, "the failure confirmed", func() bool { return task(t, a, ts[1].Id).Status == markettypes.TASK_STATUS_FAILED })
	require.Equal(t, markettypes.FAILURE_STATUS_CONFIRMED, task(t, a, ts[1].Id).Failures[0].Status)
	registerLate(t, a, nodes, "p4")
	return a, nodes, d, job, ts, liar, failer
}

// TestAttackFakeResultBesideAConfirmedFailureIsPaid: a two-replica EXACT job that fails.
// One replica's provider makes up a result; the other's reports the failure, which another
// operator's run confirms. The made-up result was then its shard's one live member, verified
// alone and paid. The confirmed failure now votes that the job fails: the shard ties, one
// escalation is added, its run fails and answers so, and the made-up result is in the
// minority: slashed for a wrong result and unpaid. Nobody else is slashed.
func TestAttackFakeResultBesideAConfirmedFailureIsPaid(t *testing.T) {
	a, nodes, d, job, ts, liar, failer := beside(t, 1)
	liarStart := a.Balance(a.Account(liar).Address, udps)

	d.until(300, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	esc := role(t, a, job, markettypes.TASK_ROLE_ESCALATION)
	require.Len(t, esc, 1, "the made-up result and the confirmed failure tie")
	require.Equal(t, nodes["p4"], esc[0].NodeId)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, esc[0].Status)
	require.Equal(t, markettypes.FailedRoot(), esc[0].ResultRoot)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, ts[0].Id).Status)
	require.Equal(t, markettypes.JOB_STATUS_FAILED, getJob(t, a, job).Status)
	s := slashes(t, a, liar)
	require.Len(t, s, 1)
	require.Equal(t, sstypes.SLASH_REASON_WRONG_RESULT, s[0].Reason)
	require.Equal(t, liarStart, a.Balance(a.Account(liar).Address, udps), "the liar is paid nothing")
	for _, n := range []string{failer, "p3", "p4"} {
		require.Empty(t, slashes(t, a, n), "%s is not slashed", n)
	}
}

// Without a verification budget the same tie cannot be broken, and the rule for an
// unbreakable tie holds: the result is not paid, nobody is slashed, and the owner gets its
// reservation back (a replica's result beside a confirmed failure is worth no more trust
// than one beside a different root).
func TestConfirmedFailureTiesAResultWithoutBudget(t *testing.T) {
	a, _, d, job, ts, liar, _ := beside(t, 0)
	liarStart := a.Balance(a.Account(liar).Address, udps)
	d.until(300, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	require.Empty(t, role(t, a, job, markettypes.TASK_ROLE_ESCALATION))
	got := task(t, a, ts[0].Id)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, got.Status)
	require.Contains(t, got.Reason, "no escalation is left")
	require.Equal(t, liarStart, a.Balance(a.Account(liar).Address, udps), "not paid")
	for _, n := range []string{"p1", "p2", "p3", "p4"} {
		require.Empty(t, slashes(t, a, n), "%s is not slashed", n)
	}
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "nothing stays in escrow")
}

// TestFailedAnswerOutvotedIsARefutedReport: a job that failed on its auditor's machine
// only (a flaky job, or an auditor that answered "it fails" rather than run it): the
// committee reproduces the primary's result, which is paid. The auditor is slashed as a
// refuted failure report is, max(abandon_slash_ppm, failure_penalty_multiple x its value),
// burned (the owner is not compensated: a job that fails on some runs must not farm its
// verifiers' collateral), and is not paid.
func TestFailedAnswerOutvotedIsARefutedReport(t *testing.T) {
	a, nodes := marketAppLate(t, 3, 1, func(p *markettypes.Params) { p.CommitteeSize = 1 })
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	d := newDriver(t, a, "p1", "p2", "p3")
	d.behaviours["p2"] = behaviour{fails: true}
	spec := committeeJob(a, p)
	client := a.Account("client").Address
	clientStart := a.Balance(client, udps)
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], target.NodeId)
	d.until(10, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
	registerLate(t, a, nodes, "p2")
	d.until(20, "dispute opened", func() bool { return task(t, a, target.Id).DisputeId != 0 })
	registerLate(t, a, nodes, "p3")
	p2Start, p2Bond := a.Balance(a.Account("p2").Address, udps), bonded(t, a, "p2")

	d.until(300, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	dp := dispute(t, a, task(t, a, target.Id).DisputeId)
	require.Equal(t, markettypes.DISPUTE_STATUS_UPHELD, dp.Status)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, task(t, a, target.Id).Status)
	auditor := task(t, a, dp.AuditorTask)
	require.Equal(t, markettypes.FailedRoot(), auditor.ResultRoot)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, auditor.Status)
	require.Contains(t, auditor.Reason, "answered that the job failed")

	s := slashes(t, a, "p2")
	require.Len(t, s, 1)
	require.Equal(t, sstypes.SLASH_REASON_FALSE_FAILURE, s[0].Reason)
	want := jobSlash(p, p2Bond, 1e6, auditor.Price) // 2x its value, not a share of its bond
	require.Equal(t, p2Bond.Sub(want).String(), bonded(t, a, "p2").String(), "slashed as a refuted failure report")
	require.Equal(t, p2Start, a.Balance(a.Account("p2").Address, udps), "the auditor is not paid")
	gross := task(t, a, target.Id).Price.Add(spec.PriorityTip.Amount)
	member := task(t, a, dp.Committee[0])
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, member.Status)
	require.Equal(t, clientStart.Sub(gross).Sub(member.Price).String(), a.Balance(client, udps).String(),
		"the owner pays the result and the committee, and gets nothing of the auditor's slash")
}

// A primary's failure is a report another operator must confirm: revealed as a result,
// the failed-run root would be paid as one, so its reveal is refused and changes nothing.
func TestPrimaryCannotRevealTheFailedRoot(t *testing.T) {
	a, nodes := marketApp(t, nil)
	job := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN))
	tk := jobTasks(t, a, job)[0]
	name := providerOf(nodes, tk.NodeId)
	addr := a.Account(name)
	salt := []byte("0123456789abcdef")
	a.MustDeliver(name, &markettypes.MsgAckTask{Provider: addr.String(), TaskId: tk.Id})
	a.MustDeliver(name, &markettypes.MsgCommitResult{Provider: addr.String(), TaskId: tk.Id,
		Commitment: markettypes.Commitment(markettypes.FailedRoot(), salt, addr.Address)})
	res := a.Deliver(name, &markettypes.MsgRevealResult{Provider: addr.String(), TaskId: tk.Id, ResultRoot: markettypes.FailedRoot(), Salt: salt,
		OutputUri: "https://" + name + ".example.com/out/a"})
	require.Equal(t, markettypes.ErrInvalidReveal.ABCICode(), res.Code, res.Log)
	require.Contains(t, res.Log, "MsgReportFailure")
	require.Equal(t, markettypes.TASK_STATUS_COMMITTED, task(t, a, tk.Id).Status)
}

// TestChallengeOverturnsAFakeResultOnAFailingJob: a made-up result for a job that fails
// everywhere escaped its audit draw (no warm-up, no floor, a perfect reputation) and was
// verified. Its owner challenges it; the committee's runs fail and answer so, the result is
// overturned: its provider slashed for a wrong result and unpaid, the owner's bond returned
// and its price refunded (before, the committee's runs lapsed, the dispute expired, and the
// result kept its verification and was paid).
func TestChallengeOverturnsAFakeResultOnAFailingJob(t *testing.T) {
	a, nodes, p := sparedApp(t, 2)
	d := newDriver(t, a, "p1", "p2")
	d.behaviours["p1"] = behaviour{cheat: true}
	d.behaviours["p2"] = behaviour{fails: true}
	spec := committeeJob(a, p)
	client := a.Account("client").Address
	clientStart := a.Balance(client, udps)
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], target.NodeId)
	d.until(20, "verified unaudited", func() bool { return task(t, a, target.Id).Status == markettypes.TASK_STATUS_VERIFIED })
	require.Empty(t, role(t, a, job, markettypes.TASK_ROLE_AUDIT))
	registerLate(t, a, nodes, "p2")
	p1Start := a.Balance(a.Account("p1").Address, udps)
	a.MustDeliver("client", &markettypes.MsgChallenge{Owner: client.String(), TaskId: target.Id})

	d.until(300, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	dp := dispute(t, a, task(t, a, target.Id).DisputeId)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dp.Status)
	require.Equal(t, markettypes.FailedRoot(), dp.DecidedRoot)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, target.Id).Status)
	s := slashes(t, a, "p1")
	require.Len(t, s, 1)
	require.Equal(t, sstypes.SLASH_REASON_WRONG_RESULT, s[0].Reason)
	require.Equal(t, p1Start, a.Balance(a.Account("p1").Address, udps), "the made-up result is not paid")
	require.Empty(t, slashes(t, a, "p2"))
	member := task(t, a, dp.Committee[0])
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, member.Status)
	require.Equal(t, member.Price.String(), s[0].Compensation.String(), "the owner is made good for the committee")
	require.Equal(t, clientStart.String(), a.Balance(client, udps).String(),
		"the owner pays the committee, gets its bond back, and is made good for the committee: no richer")
}
