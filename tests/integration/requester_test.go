package integration

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// TestAttackOwnerProfitsFromOverturningAnHonestResult: an owner whose job behaves
// differently when it is verified (it reads the clock: a committee runs long after the
// primary) gets an honest result overturned at will: p1 runs it and is paid nothing, its
// audit agreed, the owner challenges, and the committee's runs, all alike, outvote it. The
// wrong-result slash compensated the owner with up to the task's value, price and tip,
// although its reservation for the task came back whole: with a 2 DPS tip the owner ended
// richer than it started (and held p1's output). The owner is now compensated only for
// what the dispute cost it, the committee's prices: it ends where it would have with an
// audit and no dispute, less the task's pay, never richer.
func TestAttackOwnerProfitsFromOverturningAnHonestResult(t *testing.T) {
	a, nodes := marketAppLate(t, 5, 1, nil)
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5")
	spec := committeeJob(a, p)
	spec.PriorityTip = sdk.NewInt64Coin(udps, 2_000_000)
	client := a.Account("client").Address
	start := a.Balance(client, udps)
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	require.Equal(t, nodes["p1"], target.NodeId)
	d.until(10, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
	registerLate(t, a, nodes, "p2")
	d.until(30, "verified", func() bool { return task(t, a, target.Id).Status == markettypes.TASK_STATUS_VERIFIED })
	a.MustDeliver("client", &markettypes.MsgChallenge{Owner: client.String(), TaskId: target.Id})
	registerLate(t, a, nodes, "p3", "p4", "p5")
	for _, n := range []string{"p3", "p4", "p5"} {
		d.behaviours[n] = behaviour{cheat: true} // the job's output differs on every later run
	}

	d.until(300, "job finished", jobDone(t, a, job))
	a.AssertInvariants()
	dp := dispute(t, a, task(t, a, target.Id).DisputeId)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dp.Status)
	require.Len(t, slashes(t, a, "p1"), 1, "the honest primary is slashed: the chain cannot tell")
	audit := task(t, a, role(t, a, job, markettypes.TASK_ROLE_AUDIT)[0].Id)
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, audit.Status)
	committee := sdkmath.ZeroInt()
	for _, id := range dp.Committee {
		m := task(t, a, id)
		require.Equal(t, markettypes.TASK_STATUS_SETTLED, m.Status)
		committee = committee.Add(m.Price)
	}
	end := a.Balance(client, udps)
	require.True(t, end.LT(start), "the owner ends poorer than it started, not %s richer", end.Sub(start))
	require.Equal(t, start.Sub(audit.Price).String(), end.String(),
		"the owner pays the audit; the committee it caused is made good from the slash, no more")
	require.Equal(t, committee.String(), slashes(t, a, "p1")[0].Compensation.String())
}
