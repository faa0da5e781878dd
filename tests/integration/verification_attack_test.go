package integration

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// TestAttackLateCommitDodgesAudit: a cheating provider in its warm-up (every task
// audited, as TestAuditRateOnChain measures for providers that commit at once) holds its
// tasks, heartbeating, and commits each only when the job's deadline is less than
// max_duration away. An audit bound by the job's deadline would then expire unassigned and
// the cheater would reveal alone and be paid. Audits have deadlines of their own: every
// one of its tasks is still audited by another provider, disputed, overturned by the
// committee, and slashed, exactly as often as a prompt cheater's; it is paid nothing.
func TestAttackLateCommitDodgesAudit(t *testing.T) {
	const tasks = 3
	a, nodes := marketAppLate(t, 5, 0, nil)
	nodes["p1"] = bondAndRegister(t, a, "p1", 8) // p1 runs every task; p2 audits; p3..p5 sit on committees
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5")
	d.behaviours["p1"] = behaviour{cheat: true, late: true}
	spec := exactJob(a, 1, 0)
	spec.TaskCount = tasks
	spec.MaxDuration = 2 * time.Minute
	spec.Deadline = a.BlockTime().Add(3 * time.Minute)
	spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(tasks*(1+int64(p.CommitteeSize))))
	job := submit(t, a, spec)
	for _, tk := range jobTasks(t, a, job) {
		require.Equal(t, nodes["p1"], tk.NodeId)
	}
	registerLate(t, a, nodes, "p2", "p3", "p4", "p5")
	p1Start := a.Balance(a.Account("p1").Address, udps)
	bondedStart := bonded(t, a, "p1")

	d.until(400, "job finished", jobDone(t, a, job))
	a.AssertInvariants()

	var primaries []markettypes.Task
	for _, tk := range jobTasks(t, a, job) {
		if tk.Role == markettypes.TASK_ROLE_PRIMARY {
			primaries = append(primaries, tk)
		}
	}
	require.Len(t, primaries, tasks)
	audits := role(t, a, job, markettypes.TASK_ROLE_AUDIT)
	require.Len(t, audits, tasks, "every warm-up task is audited, however late it commits")
	for _, tk := range primaries {
		require.Truef(t, tk.CommitTime.Add(spec.MaxDuration).After(spec.Deadline), "task %d committed before the late window", tk.Id)
		require.Equal(t, markettypes.TASK_STATUS_FAILED, tk.Status)
		require.NotZero(t, tk.DisputeId)
		require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dispute(t, a, tk.DisputeId).Status)
	}
	for _, au := range audits {
		require.Equal(t, markettypes.TASK_STATUS_SETTLED, au.Status, "audit %d", au.Id)
		require.True(t, au.Deadline.After(spec.Deadline), "the audit's deadline is its own")
	}
	require.Equal(t, p1Start, a.Balance(a.Account("p1").Address, udps), "the late cheater is paid nothing")
	require.True(t, bonded(t, a, "p1").LT(bondedStart), "the late cheater is slashed")
}

// TestAttackDisputeWithoutCommitteeEndsByTimeout: a one-task EXACT job on p1 audited by
// p2 where no third node exists, so a dispute's committee (after a disagreeing audit, or
// after the owner's challenge) can never form: the dispute expires by its deadline with
// nobody slashed and nothing left in escrow.
func TestAttackDisputeWithoutCommitteeEndsByTimeout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		challenge bool
	}{{"audit dispute", false}, {"owner's challenge", true}} {
		t.Run(tc.name, func(t *testing.T) {
			a, nodes := marketAppLate(t, 2, 1, func(p *markettypes.Params) {
				p.VerificationTimeout = time.Minute
				p.AssignRetryMaxBlocks = 4
			})
			p, _ := a.MarketKeeper.GetParams(a.Ctx())
			d := newDriver(t, a, "p1", "p2")
			if !tc.challenge {
				d.behaviours["p2"] = behaviour{cheat: true} // the audit disagrees
			}
			spec := committeeJob(a, p)
			spec.MaxDuration = time.Minute
			client := a.Account("client").Address
			clientStart := a.Balance(client, udps)
			job := submit(t, a, spec)
			target := jobTasks(t, a, job)[0]
			require.Equal(t, nodes["p1"], target.NodeId)
			d.until(10, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
			registerLate(t, a, nodes, "p2")
			before := balances(a, "p1", "p2")
			bondedBefore := map[string]sdkmath.Int{"p1": bonded(t, a, "p1"), "p2": bonded(t, a, "p2")}
			if tc.challenge {
				d.until(20, "verified", func() bool { return task(t, a, target.Id).Status == markettypes.TASK_STATUS_VERIFIED })
				a.MustDeliver("client", &markettypes.MsgChallenge{Owner: a.Account("client").String(), TaskId: target.Id})
			} else {
				d.until(20, "dispute opened", func() bool { return task(t, a, target.Id).DisputeId != 0 })
			}
			id := task(t, a, target.Id).DisputeId
			require.NotZero(t, id)
			dp := dispute(t, a, id)
			require.Len(t, dp.Committee, int(p.CommitteeSize))
			require.Equal(t, a.BlockTime().Add(spec.MaxDuration+p.VerificationTimeout), dp.Deadline)

			d.until(200, "job finished", jobDone(t, a, job))
			a.AssertInvariants()
			dp = dispute(t, a, id)
			require.Equal(t, markettypes.DISPUTE_STATUS_EXPIRED, dp.Status)
			require.False(t, a.BlockTime().After(dp.Deadline.Add(time.Duration(p.AssignRetryMaxBlocks+2)*a.BlockInterval)),
				"the dispute ended %s after its deadline", a.BlockTime().Sub(dp.Deadline))
			for _, m := range dp.Committee {
				require.Equal(t, markettypes.TASK_STATUS_EXPIRED, task(t, a, m).Status)
			}
			require.Equal(t, bondedBefore["p1"], bonded(t, a, "p1"), "nobody is slashed")
			require.Equal(t, bondedBefore["p2"], bonded(t, a, "p2"), "nobody is slashed")
			require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "nothing stays in escrow")
			tk := task(t, a, target.Id)
			gross := tk.Price.Add(spec.PriorityTip.Amount)
			auditPrice := task(t, a, role(t, a, job, markettypes.TASK_ROLE_AUDIT)[0].Id).Price
			if tc.challenge {
				// the result kept its audit's verification: p1 and the auditor are paid, the
				// bond comes back, the committee cost nothing
				require.Equal(t, markettypes.TASK_STATUS_SETTLED, task(t, a, target.Id).Status)
				require.Equal(t, before["p1"].Add(paidNet(t, a, gross)), a.Balance(a.Account("p1").Address, udps))
				require.Equal(t, clientStart.Sub(gross).Sub(auditPrice), a.Balance(client, udps))
			} else {
				// two disagreeing results, nobody to tell which is right: neither is paid
				require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, target.Id).Status)
				require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, dp.AuditorTask).Status)
				require.Equal(t, before["p1"], a.Balance(a.Account("p1").Address, udps))
				require.Equal(t, before["p2"], a.Balance(a.Account("p2").Address, udps))
				require.Equal(t, clientStart, a.Balance(client, udps), "the owner gets everything back")
			}
		})
	}
}

// TestAuditThatCannotRunPaysNothingAndSlashesNobody: the documented rule when an audit
// truly cannot run (no other eligible node until the audit's own deadline): the audited
// result is not paid, its price returns to the owner, and its provider is not slashed.
func TestAuditThatCannotRunPaysNothingAndSlashesNobody(t *testing.T) {
	a, nodes := marketAppLate(t, 1, 1, func(p *markettypes.Params) {
		p.VerificationTimeout = time.Minute
		p.AssignRetryMaxBlocks = 4
	})
	d := newDriver(t, a, "p1")
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	spec := committeeJob(a, p)
	spec.MaxDuration = time.Minute
	client := a.Account("client").Address
	clientStart := a.Balance(client, udps)
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], target.NodeId)
	p1Start, bondedStart := a.Balance(a.Account("p1").Address, udps), bonded(t, a, "p1")

	d.until(200, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	audits := role(t, a, job, markettypes.TASK_ROLE_AUDIT)
	require.Len(t, audits, 1)
	require.Equal(t, markettypes.TASK_STATUS_EXPIRED, audits[0].Status)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, target.Id).Status)
	require.Contains(t, task(t, a, target.Id).Reason, "could not run")
	require.Equal(t, p1Start, a.Balance(a.Account("p1").Address, udps), "not paid")
	require.Equal(t, bondedStart, bonded(t, a, "p1"), "not slashed")
	require.Equal(t, clientStart, a.Balance(client, udps), "the owner gets everything back")
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero())
}

// TestAttackWashFarmsWarmup: a provider funds a second account and has it pay for ten
// single-replica EXACT tasks the provider runs, to get through its audit warm-up (its
// first audit_warmup_tasks settled tasks are audited with certainty) and to build
// reputation cheaply. Wash work is paid but earns no record: after it the provider's
// settled-task count and reputation are unchanged, and a stranger's task is still audited
// with certainty.
func TestAttackWashFarmsWarmup(t *testing.T) {
	a, nodes := marketAppLate(t, 3, 0, nil) // p1 provider, p2 auditor, p3 the provider's second account
	nodes["p1"] = bondAndRegister(t, a, "p1", 16)
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	p1 := a.Account("p1").Address
	a.MustDeliver("p1", &banktypes.MsgSend{FromAddress: p1.String(), ToAddress: a.Account("p3").String(),
		Amount: sdk.NewCoins(sdk.NewInt64Coin(udps, 1_000_000))})
	repBefore, _, err := a.ReputationKeeper.Reputation(a.Ctx(), nodes["p1"])
	require.NoError(t, err)

	d := newDriver(t, a, "p1", "p2")
	spec := exactJob(a, 1, 0)
	spec.TaskCount = p.AuditWarmupTasks
	spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(int64(p.AuditWarmupTasks)*(1+int64(p.CommitteeSize))))
	wash := submittedJob(t, a.MustDeliver("p3", &markettypes.MsgSubmitJob{Owner: a.Account("p3").String(), Spec: spec}).Data)
	registerLate(t, a, nodes, "p2")
	d.until(200, "wash job finished", jobDone(t, a, wash))
	settled := 0
	for _, tk := range jobTasks(t, a, wash) {
		if tk.Role == markettypes.TASK_ROLE_PRIMARY && tk.Status == markettypes.TASK_STATUS_SETTLED {
			settled++
			require.Equal(t, nodes["p1"], tk.NodeId)
		}
	}
	require.Equal(t, int(p.AuditWarmupTasks), settled, "the wash work is done and paid")

	n, err := a.MarketKeeper.ProviderTasks.Get(a.Ctx(), p1)
	if err == nil {
		require.Zero(t, n, "wash tasks count toward the warm-up")
	}
	repAfter, _, err := a.ReputationKeeper.Reputation(a.Ctx(), nodes["p1"])
	require.NoError(t, err)
	require.Equal(t, repBefore.String(), repAfter.String(), "wash tasks raised the reputation")

	// a stranger's task: still in the warm-up, audited with certainty
	stranger := committeeJob(a, p)
	job := submit(t, a, stranger)
	d.until(100, "job finished", jobDone(t, a, job))
	require.Len(t, role(t, a, job, markettypes.TASK_ROLE_AUDIT), 1, "the stranger's task is audited")
	a.AssertInvariants()
}

// TestAttackPlantedCheckpointSlashesSuccessor: a provider records a checkpoint of its
// task (here: a poisoned one), then abandons the task. The task is reassigned with the
// checkpoint; the successor resumes from it, and its result, wrong because of the
// checkpoint, loses its audit's dispute. The checkpoint's author is slashed for the
// wrong result (on top of its abandonment); the successor is not slashed and not paid.
func TestAttackPlantedCheckpointSlashesSuccessor(t *testing.T) {
	a, nodes := marketAppLate(t, 6, 1, nil) // p1 plants; p2 resumes; p3 audits; p4..p6 judge
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5", "p6")
	spec := committeeJob(a, p)
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], target.NodeId)
	a.MustDeliver("p1", &markettypes.MsgAckTask{Provider: a.Account("p1").String(), TaskId: target.Id})
	a.MustDeliver("p1", &markettypes.MsgCheckpoint{Provider: a.Account("p1").String(), TaskId: target.Id,
		Sha256: "aa" + strings.Repeat("00", 31), Uri: "https://p1.example.com/ckpt/poisoned"})
	d.behaviours["p1"] = behaviour{silent: true}
	registerLate(t, a, nodes, "p2")
	d.behaviours["p2"] = behaviour{cheat: true} // the poisoned state gives it a wrong result
	d.until(100, "reassigned to p2", func() bool { return task(t, a, target.Id).NodeId == nodes["p2"] })
	require.Equal(t, a.Account("p1").String(), task(t, a, target.Id).Checkpoint.Author)
	bondedP1AfterLapse := bonded(t, a, "p1")
	d.until(20, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
	registerLate(t, a, nodes, "p3")
	d.until(20, "dispute opened", func() bool { return task(t, a, target.Id).DisputeId != 0 })
	registerLate(t, a, nodes, "p4", "p5", "p6")
	p2Start, bondedP2 := a.Balance(a.Account("p2").Address, udps), bonded(t, a, "p2")
	d.until(100, "job finished", jobDone(t, a, job))
	a.AssertInvariants()

	tk := task(t, a, target.Id)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dispute(t, a, tk.DisputeId).Status)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, tk.Status)
	require.Contains(t, tk.Reason, "slashed instead")
	require.Equal(t, bondedP2, bonded(t, a, "p2"), "the successor is not slashed")
	require.Equal(t, p2Start, a.Balance(a.Account("p2").Address, udps), "nor paid")
	require.True(t, bonded(t, a, "p1").LT(bondedP1AfterLapse), "the checkpoint's author is slashed for the wrong result")
}

// TestAttackLateCommitPastWarmup: past the warm-up (audit floor 50% here), a cheater that
// commits late is audited as often as one that commits at once: 16 tasks each, the same
// audit probability, and the two audit counts within four standard deviations of the
// binomial of each other; every audit that ran caught the cheater.
func TestAttackLateCommitPastWarmup(t *testing.T) {
	const tasks = 16 // a node's most GPUs: every task runs at once
	audited := map[bool]int{}
	for _, late := range []bool{false, true} {
		a, nodes := marketAppLate(t, 6, 0, func(p *markettypes.Params) {
			p.AuditWarmupTasks, p.AuditFloorPpm = 0, 500_000
		})
		nodes["p1"] = bondAndRegister(t, a, "p1", tasks)
		p, _ := a.MarketKeeper.GetParams(a.Ctx())
		d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5", "p6")
		d.behaviours["p1"] = behaviour{cheat: true, late: late}
		spec := exactJob(a, 1, 0)
		spec.TaskCount = tasks
		spec.MaxDuration = 2 * time.Minute
		spec.Deadline = a.BlockTime().Add(3 * time.Minute)
		spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(tasks*(1+int64(p.CommitteeSize))))
		job := submit(t, a, spec)
		for _, n := range []string{"p2", "p3", "p4", "p5", "p6"} {
			nodes[n] = bondAndRegister(t, a, n, tasks)
		}
		d.until(600, "job finished", jobDone(t, a, job))
		a.AssertInvariants()
		auditedShard := map[uint32]bool{}
		for _, au := range role(t, a, job, markettypes.TASK_ROLE_AUDIT) {
			auditedShard[au.Index] = true
		}
		audited[late] = len(auditedShard)
		for _, tk := range jobTasks(t, a, job) {
			if tk.Role != markettypes.TASK_ROLE_PRIMARY || !auditedShard[tk.Index] {
				continue
			}
			// every audit ran and caught the cheat: disputed, overturned, not paid
			require.NotZerof(t, tk.DisputeId, "late=%v: audited task %d was never disputed (%s)", late, tk.Id, tk.Status)
			require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dispute(t, a, tk.DisputeId).Status)
			require.Equal(t, markettypes.TASK_STATUS_FAILED, tk.Status, "a caught cheat is not paid")
		}
	}
	sd := math.Sqrt(2 * tasks * 0.25) // the difference of two binomials(20, >= 0.5)
	t.Logf("audited: prompt %d of %d, late %d of %d", audited[false], tasks, audited[true], tasks)
	require.Positive(t, audited[true])
	require.InDelta(t, audited[false], audited[true], 4*sd)
}
