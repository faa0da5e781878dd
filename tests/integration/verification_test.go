package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// exactJob is an EXACT PROCESS job of one shard with the given replicas.
func exactJob(a *apptest.App, replicas uint32, budget int64) markettypes.JobSpec {
	s := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	s.Runtime, s.Image, s.Builtin = markettypes.RUNTIME_PROCESS, "", markettypes.BuiltinArgs{}
	s.Command = []string{"python3", "train.py"}
	s.Verification = markettypes.VERIFICATION_CLASS_EXACT
	s.Replicas = replicas
	s.VerificationBudget = sdk.NewInt64Coin(udps, budget)
	return s
}

// committeeJob is exactJob with one replica and a verification budget that pays an audit
// and a full committee (committee_size members) at the max price.
func committeeJob(a *apptest.App, p markettypes.Params) markettypes.JobSpec {
	s := exactJob(a, 1, 0)
	s.VerificationBudget = sdk.NewCoin(udps, s.MaxPricePerTask.Amount.MulRaw(1+int64(p.CommitteeSize)))
	return s
}

func task(t testing.TB, a *apptest.App, id uint64) markettypes.Task {
	t.Helper()
	tk, err := a.MarketKeeper.GetTask(a.Ctx(), id)
	require.NoError(t, err)
	return tk
}

func bonded(t testing.TB, a *apptest.App, name string) sdkmath.Int {
	t.Helper()
	c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account(name).Address)
	require.NoError(t, err)
	return c.Bonded
}

// unbonding is what a provider's unbonding entries hold.
func unbonding(t testing.TB, a *apptest.App, name string) sdkmath.Int {
	t.Helper()
	entries, err := a.StakingSlashKeeper.ProviderUnbondings(a.Ctx(), a.Account(name).Address)
	require.NoError(t, err)
	sum := sdkmath.ZeroInt()
	for _, e := range entries {
		sum = sum.Add(e.Amount)
	}
	return sum
}

// jobSlash is what x/market takes of a bond (nothing unbonding) for a slash a job can
// cause: ppm of it, lowered to the least fraction whose cut reaches
// failure_penalty_multiple x value (abandoned tasks: abandon_slash_ppm; refuted failure
// reports: all of it, so the multiple, rounded up to a whole ppm).
func jobSlash(p markettypes.Params, bond sdkmath.Int, ppm uint32, value sdkmath.Int) sdkmath.Int {
	num := value.MulRaw(int64(p.FailurePenaltyMultiple)).MulRaw(1e6)
	f := num.Quo(bond)
	if !num.Mod(bond).IsZero() {
		f = f.AddRaw(1)
	}
	f = sdkmath.MinInt(f, sdkmath.NewInt(int64(ppm)))
	return bond.Mul(f).QuoRaw(1e6)
}

// balances snapshots every named account's udps.
func balances(a *apptest.App, names ...string) map[string]sdkmath.Int {
	out := map[string]sdkmath.Int{}
	for _, n := range names {
		out[n] = a.Balance(a.Account(n).Address, udps)
	}
	return out
}

// slashSplit: a wrong-result slash of 20% of 100 DPS = 20 DPS: half to the owner but at
// most owed (what the disagreement cost it: the escalations or committee it pays), a
// quarter to the verifiers, the rest burned.
func slashSplit(t testing.TB, a *apptest.App, owed sdkmath.Int, verifiers int) (slash, comp, each sdkmath.Int) {
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	slash = sdkmath.NewInt(100_000_000).MulRaw(int64(p.WrongResultSlashPpm)).QuoRaw(1e6)
	// half to the owner, at most what it is owed
	comp = sdkmath.MinInt(slash.MulRaw(500_000).QuoRaw(1e6), owed)
	reward := slash.MulRaw(250_000).QuoRaw(1e6)
	each = sdkmath.ZeroInt()
	if verifiers > 0 {
		each = reward.QuoRaw(int64(verifiers))
	}
	return slash, comp, each
}

// paidNet is what a provider receives for gross after the take.
func paidNet(t testing.TB, a *apptest.App, gross sdkmath.Int) sdkmath.Int {
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	return gross.Sub(gross.MulRaw(int64(p.TakeRatePpm)).QuoRaw(1e6))
}

// Three replicas: when all agree all are paid; a lone cheater is in the minority, slashed
// for a wrong result (the owner compensated, the two honest replicas rewarded) and unpaid;
// balances exact.
func TestReplicaMajority(t *testing.T) {
	for _, cheat := range []bool{false, true} {
		a, nodes := marketApp(t, nil)
		d := newDriver(t, a, "p1", "p2", "p3")
		d.behaviours["p1"] = behaviour{cheat: cheat}
		before := balances(a, "client", "p1", "p2", "p3")
		spec := exactJob(a, 3, 0)
		job := submit(t, a, spec)
		d.until(40, "job finished", jobDone(t, a, job))
		a.AssertInvariants()

		gross := sdkmath.NewInt(166_667).Add(spec.PriorityTip.Amount)
		for _, tk := range jobTasks(t, a, job) {
			require.Equal(t, markettypes.TASK_ROLE_PRIMARY, tk.Role)
		}
		_ = nodes
		if !cheat {
			require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, job).Status)
			for _, n := range []string{"p1", "p2", "p3"} {
				require.Equal(t, before[n].Add(paidNet(t, a, gross)), a.Balance(a.Account(n).Address, udps), n)
			}
			require.Equal(t, before["client"].Sub(gross.MulRaw(3)), a.Balance(a.Account("client").Address, udps))
			continue
		}
		slash, comp, each := slashSplit(t, a, sdkmath.ZeroInt(), 2) // the owner pays for the majority only: owed nothing
		require.True(t, comp.IsZero())
		require.Equal(t, markettypes.JOB_STATUS_FAILED, getJob(t, a, job).Status, "one replica failed")
		require.Equal(t, sdkmath.NewInt(100_000_000).Sub(slash), bonded(t, a, "p1"), "the cheater is slashed")
		require.Equal(t, before["p1"], a.Balance(a.Account("p1").Address, udps), "and unpaid")
		for _, n := range []string{"p2", "p3"} {
			require.Equal(t, before[n].Add(paidNet(t, a, gross)).Add(each), a.Balance(a.Account(n).Address, udps), n)
		}
		require.Equal(t, before["client"].Sub(gross.MulRaw(2)), a.Balance(a.Account("client").Address, udps),
			"the owner pays the two replicas it got; the cheater's reservation comes back, and nothing more")
	}
}

// Two replicas disagree: a tie. One escalation replica (paid from the verification
// budget) breaks it: the cheater is slashed, the honest replica and the escalation paid.
func TestTieEscalation(t *testing.T) {
	a, nodes := marketAppLate(t, 3, 2, nil) // p3 joins after the replicas are assigned
	d := newDriver(t, a, "p1", "p2", "p3")
	d.behaviours["p1"] = behaviour{cheat: true}
	spec := exactJob(a, 2, 0)
	spec.VerificationBudget = sdk.NewCoin(udps, spec.Reserved())
	before := balances(a, "client", "p1", "p2", "p3")
	job := submit(t, a, spec)
	require.Len(t, jobTasks(t, a, job), 2)
	registerLate(t, a, nodes, "p3")
	before["p3"] = a.Balance(a.Account("p3").Address, udps)
	d.until(60, "job finished", jobDone(t, a, job))
	a.AssertInvariants()

	var esc markettypes.Task
	for _, tk := range jobTasks(t, a, job) {
		if tk.Role == markettypes.TASK_ROLE_ESCALATION {
			esc = tk
		}
	}
	require.NotZero(t, esc.Id, "a tie escalates")
	require.Equal(t, "p3", providerOf(nodes, esc.NodeId))
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, esc.Status)
	gross := sdkmath.NewInt(166_667).Add(spec.PriorityTip.Amount)
	escGross := sdkmath.NewInt(166_667)                // an escalation is paid its price from the budget
	slash, comp, each := slashSplit(t, a, escGross, 2) // the owner is made good for the escalation the tie cost it
	require.Equal(t, escGross, comp)
	require.Equal(t, sdkmath.NewInt(100_000_000).Sub(slash), bonded(t, a, "p1"))
	require.Equal(t, before["p2"].Add(paidNet(t, a, gross)).Add(each), a.Balance(a.Account("p2").Address, udps))
	require.Equal(t, before["p3"].Add(paidNet(t, a, escGross)).Add(each), a.Balance(a.Account("p3").Address, udps))
	require.Equal(t, before["client"].Sub(gross), a.Balance(a.Account("client").Address, udps), "the owner pays the honest replica; the escalation is made good")
}

// Two colluding cheaters against one honest replica: the colluders' common root is the
// majority, so the honest replica is slashed (the documented limit of replication: it
// assumes a majority of independent replicas). The owner's recourse is a challenge: a
// committee of fresh nodes re-runs the shard and overturns the colluders' result.
func TestColludingMajorityThenChallenge(t *testing.T) {
	a, nodes := marketAppLate(t, 6, 3, nil) // the committee-to-be joins after the replicas are assigned
	d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5", "p6")
	spec := exactJob(a, 3, 0)
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(int64(p.CommitteeSize)))
	job := submit(t, a, spec)
	registerLate(t, a, nodes, "p4", "p5", "p6")
	by := map[string]markettypes.Task{}
	for _, tk := range jobTasks(t, a, job) {
		by[providerOf(nodes, tk.NodeId)] = tk
	}
	require.Len(t, by, 3)
	d.behaviours["p1"] = behaviour{cheat: true}
	d.behaviours["p2"] = behaviour{cheat: true}
	d.until(30, "replicas decided", func() bool { return task(t, a, by["p3"].Id).Status == markettypes.TASK_STATUS_FAILED })
	require.Equal(t, markettypes.TASK_STATUS_VERIFIED, task(t, a, by["p1"].Id).Status, "the colluders' root won")
	slash, _, _ := slashSplit(t, a, sdkmath.NewInt(166_667).Add(spec.PriorityTip.Amount), 2)
	require.Equal(t, sdkmath.NewInt(100_000_000).Sub(slash), bonded(t, a, "p3"), "the honest replica is slashed")

	// the owner challenges p1's verified result in its challenge window
	clientBefore := a.Balance(a.Account("client").Address, udps)
	res := a.MustDeliver("client", &markettypes.MsgChallenge{Owner: a.Account("client").String(), TaskId: by["p1"].Id})
	_ = res
	require.Equal(t, clientBefore.Sub(p.ChallengeBond.Amount), a.Balance(a.Account("client").Address, udps), "the bond is locked")
	d.until(40, "dispute decided", func() bool { return task(t, a, by["p1"].Id).Status == markettypes.TASK_STATUS_FAILED })
	dispute := task(t, a, by["p1"].Id).DisputeId
	dq, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).Dispute(a.Ctx(), &markettypes.QueryDisputeRequest{DisputeId: dispute})
	require.NoError(t, err)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dq.Dispute.Status)
	require.Equal(t, sdkmath.NewInt(100_000_000).Sub(slash), bonded(t, a, "p1"), "the challenged colluder is slashed")
	d.until(20, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
}

// Commit-reveal rules: a reveal before every replica committed is refused; a reveal that
// does not match its commitment is refused; a provider that copies another's commitment
// cannot reveal it (the commitment binds the committer's address), so it is never paid and
// is slashed for the missed reveal.
func TestCommitRevealRules(t *testing.T) {
	a, nodes := marketApp(t, nil)
	spec := exactJob(a, 2, 0)
	job := submit(t, a, spec)
	tasks := jobTasks(t, a, job)
	n0, n1 := providerOf(nodes, tasks[0].NodeId), providerOf(nodes, tasks[1].NodeId)
	a0, a1 := a.Account(n0), a.Account(n1)
	for _, x := range []struct {
		name string
		id   uint64
	}{{n0, tasks[0].Id}, {n1, tasks[1].Id}} {
		a.MustDeliver(x.name, &markettypes.MsgAckTask{Provider: a.Account(x.name).String(), TaskId: x.id})
	}
	root := trueRoot(job, 0)
	c0 := markettypes.Commitment(root, driverSalt, a0.Address)
	a.MustDeliver(n0, &markettypes.MsgCommitResult{Provider: a0.String(), TaskId: tasks[0].Id, Commitment: c0})
	a.NextBlock()
	r := a.Deliver(n0, &markettypes.MsgRevealResult{Provider: a0.String(), TaskId: tasks[0].Id, ResultRoot: root, Salt: driverSalt, OutputUri: "https://x.example.com/o"})
	require.Equal(t, markettypes.ErrRevealNotOpen.ABCICode(), r.Code, "the other replica has not committed: %s", r.Log)

	// the second provider copies the first one's commitment
	a.MustDeliver(n1, &markettypes.MsgCommitResult{Provider: a1.String(), TaskId: tasks[1].Id, Commitment: c0})
	a.NextBlock()
	r = a.Deliver(n1, &markettypes.MsgRevealResult{Provider: a1.String(), TaskId: tasks[1].Id, ResultRoot: root, Salt: driverSalt, OutputUri: "https://y.example.com/o"})
	require.Equal(t, markettypes.ErrRevealMismatch.ABCICode(), r.Code, "a copied commitment does not open for its copier")
	r = a.Deliver(n0, &markettypes.MsgRevealResult{Provider: a0.String(), TaskId: tasks[0].Id, ResultRoot: root, Salt: []byte("another-salt-1234567"), OutputUri: "https://x.example.com/o"})
	require.Equal(t, markettypes.ErrRevealMismatch.ABCICode(), r.Code, "a wrong salt does not match")
	a.MustDeliver(n0, &markettypes.MsgRevealResult{Provider: a0.String(), TaskId: tasks[0].Id, ResultRoot: root, Salt: driverSalt, OutputUri: "https://x.example.com/o"})

	before := bonded(t, a, n1)
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	a.NextBlocks(int(p.RevealTimeoutBlocks) + 1)
	require.Equal(t, before.Sub(before.MulRaw(int64(p.MissedRevealSlashPpm)).QuoRaw(1e6)), bonded(t, a, n1), "the copier is slashed for the missed reveal")
	require.NotEqual(t, n1, providerOf(nodes, task(t, a, tasks[1].Id).NodeId), "and loses the task")
	a.AssertInvariants()
}
