package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	markettypes "github.com/flopsnet/flops/x/market/types"
	sskeeper "github.com/flopsnet/flops/x/staking-slash/keeper"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The penalty for a wrong result scales with what the cheater hoped to gain, not with
// the size of its bond (x/market/README.md, the security argument). A 10-hour task worth
// 10.1 DPS reserves 20 x 10.1 = 202 DPS of its provider's collateral; the provider, with
// 250 DPS bonded, cheats, its audit disagrees and the committee overturns it: it is
// slashed 202 DPS (not 20% = 50 DPS), and a provider whose collateral cannot cover that
// reserve never gets the task.
//
// The slash cuts the bonded collateral and the unbonding entries alike, so the fraction
// that reaches the reserve is counted over both: a provider that had put 40 of its 250 DPS
// into unbonding before the result lost 240.5 DPS (the fraction counted over the 210 DPS
// bonded alone), 38.5 DPS more than the reserve.
func TestWrongResultPenaltyScalesWithValue(t *testing.T) {
	for _, unbond := range []int64{0, 40_000_000} {
		t.Run(fmt.Sprintf("unbonding=%d", unbond), func(t *testing.T) { wrongResultPenalty(t, unbond) })
	}
}

// wrongResultPenalty is TestWrongResultPenaltyScalesWithValue with unbond udps of the
// cheater's 250 DPS put into unbonding once its task is assigned.
func wrongResultPenalty(t *testing.T, unbond int64) {
	a, nodes := marketAppLate(t, 5, 1, nil) // p1 runs the task; p2 audits; p3..p5 sit on the committee
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	sp, err := a.StakingSlashKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5")
	d.behaviours["p1"] = behaviour{cheat: true}
	spec := exactJob(a, 1, 0)
	spec.MaxDuration = 10 * time.Hour
	spec.MaxPricePerTask = sdk.NewInt64Coin(udps, 20_000_000)
	spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(1+int64(mp.CommitteeSize)))
	const taskPrice = 10_000_000 // 1 DPS per GPU-hour x 10 hours
	value := sdkmath.NewInt(taskPrice).Add(spec.PriorityTip.Amount)
	reserve := value.MulRaw(int64(mp.ResultPenaltyMultiple))
	require.Equal(t, sdkmath.NewInt(202_000_000), reserve)

	// 100 DPS bonded do not cover the reserve: the task waits
	clientStart := a.Balance(a.Account("client").Address, udps)
	job := submit(t, a, spec)
	a.NextBlocks(3)
	target := jobTasks(t, a, job)[0]
	require.Equal(t, markettypes.TASK_STATUS_PENDING, target.Status, "no node's collateral covers %s", reserve)
	a.MustDeliver("p1", &sstypes.MsgBond{Provider: a.Account("p1").String(), Amount: sdk.NewInt64Coin(udps, 150_000_000)})
	d.until(int(mp.AssignRetryMaxBlocks)+2, "assigned", func() bool { return task(t, a, target.Id).NodeId != 0 })
	target = task(t, a, target.Id)
	require.Equal(t, nodes["p1"], target.NodeId)
	require.Equal(t, reserve, target.Exposure)
	c1, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p1").Address)
	require.NoError(t, err)
	require.Equal(t, reserve, c1.Exposure)

	// the verifiers reserve their own tasks' value (10 DPS) x 20: 200 DPS each
	d.until(10, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
	for _, n := range []string{"p2", "p3", "p4", "p5"} {
		registerLate(t, a, nodes, n)
		a.MustDeliver(n, &sstypes.MsgBond{Provider: a.Account(n).String(), Amount: sdk.NewInt64Coin(udps, 100_000_000)})
	}
	collateral1 := bonded(t, a, "p1") // bonded and unbonding, all of it slashable
	require.Equal(t, sdkmath.NewInt(250_000_000), collateral1)
	if unbond > 0 {
		a.MustDeliver("p1", &sstypes.MsgUnbond{Provider: a.Account("p1").String(), Amount: sdk.NewInt64Coin(udps, unbond)})
	}
	bond1 := bonded(t, a, "p1")
	require.Equal(t, collateral1.SubRaw(unbond), bond1)
	d.until(80, "job finished", jobDone(t, a, job))
	a.AssertInvariants()

	dp := dispute(t, a, task(t, a, target.Id).DisputeId)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dp.Status)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, target.Id).Status)
	byFraction := collateral1.MulRaw(int64(mp.WrongResultSlashPpm)).QuoRaw(1e6) // 50 DPS
	require.True(t, reserve.GT(byFraction))
	// the slash reached the reserve (each part's cut rounds down, a udps at most) and went
	// over it by less than a ppm of the collateral
	lost := collateral1.Sub(bonded(t, a, "p1")).Sub(unbonding(t, a, "p1"))
	require.True(t, lost.GTE(reserve.SubRaw(2)) && lost.LT(reserve.Add(collateral1.QuoRaw(1e6))),
		"slashed the task's reserve, 202 DPS, of bonded and unbonding collateral alike: %s", lost)
	if unbond == 0 {
		require.Equal(t, bond1.Sub(reserve), bonded(t, a, "p1"))
	}
	c1, err = a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p1").Address)
	require.NoError(t, err)
	require.True(t, c1.Exposure.IsZero())
	// half the slash, capped at what the dispute cost the owner: the committee's three
	// prices (30 DPS, not 101 DPS)
	committee := sdkmath.NewInt(taskPrice).MulRaw(3)
	comp := sdkmath.MinInt(reserve.MulRaw(int64(sp.CompensationPpm)).QuoRaw(1e6), committee)
	require.Equal(t, committee, comp)
	// the owner pays the auditor and the committee their price, and is made good for the
	// committee
	require.Equal(t, clientStart.Sub(sdkmath.NewInt(taskPrice)), a.Balance(a.Account("client").Address, udps))
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero())
}

// A pool owner must not profit from a claim that lapses: others can make a claimer miss
// its reveal (a proposer that leaves its reveals out of its blocks, an owner that floods
// the claimer's node), and the unit is raced again at no cost to the owner. Here the
// owner's accomplice censors every reveal of p1's four 0.2 DPS claims: p1 is slashed for
// each (max(20% of its bond, 20 x the unit price)), and the slashes are burned. Before the
// fix half of each went to the owner: 4 units worth 0.8 DPS paid it 36.9 DPS from p1's
// 100 DPS bond (the crash demo's client gained 59 DPS from a restarted worker this way).
func TestAttackCensoredRevealPaysThePoolOwner(t *testing.T) {
	a, nodes := marketAppN(t, 1, func(p *markettypes.Params) { p.PoolRevealTimeoutBlocks = 10 })
	const price = 200_000
	owner := a.Account("client").String()
	start := balances(a, "client", "p1")
	bond1 := bonded(t, a, "p1")
	supply := a.BankKeeper.GetSupply(a.Ctx(), udps).Amount
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: gemmPoolSpec(price, 4*price)})
	a.MustDeliver("p1", &markettypes.MsgJoinPool{Provider: a.Account("p1").String(), PoolId: 1, NodeId: nodes["p1"]})
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: owner, PoolId: 1, Units: unitInputs(4)})
	pp := newPoolPlayer(t, a, nodes, 1)
	for u := uint64(1); u <= 4; u++ {
		a.MustDeliver("p1", pp.commit("p1", u, pp.solve(u).root()))
	}
	// the reveals never make it into a block
	deadline := getUnit(t, a, 1, 4).RevealDeadlineHeight
	for a.Height() < deadline {
		a.NextBlock()
	}
	for u := uint64(1); u <= 4; u++ {
		require.Equal(t, markettypes.UNIT_STATUS_OPEN, getUnit(t, a, 1, u).Status, "unit %d lapsed and is raced again", u)
	}
	slashed := bond1.Sub(bonded(t, a, "p1"))
	require.True(t, slashed.GTE(sdkmath.NewInt(4*20*price)), "p1 paid at least each claim's exposure: %s", slashed)
	hist, err := sskeeper.NewQueryServerImpl(a.StakingSlashKeeper).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account("p1").String()})
	require.NoError(t, err)
	require.Len(t, hist.Slashes, 4)
	for _, s := range hist.Slashes {
		require.Equal(t, sstypes.SLASH_REASON_MISSED_REVEAL, s.Reason)
		require.True(t, s.Compensation.IsZero(), "nothing of slash %d goes to the owner", s.Id)
		require.Equal(t, s.Amount, s.Burned)
	}

	a.MustDeliver("client", &markettypes.MsgClosePool{Owner: owner, PoolId: 1})
	require.Equal(t, start["client"], a.Balance(a.Account("client").Address, udps),
		"the owner ends where it started: its budget back, nothing of the slashes")
	require.Equal(t, start["p1"], a.Balance(a.Account("p1").Address, udps))
	require.Equal(t, supply.Sub(slashed), a.BankKeeper.GetSupply(a.Ctx(), udps).Amount, "the slashes were burned")
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero(), "the escrow ends empty")
	a.AssertInvariants()
}

// A job built to split its replicas (its output depends on the machine: the hostname, the
// GPU's serial) gets the odd replica slashed for a wrong result. The owner is compensated
// with at most what the disagreement cost it, here nothing (no escalation: it pays the two
// replicas it got, and the odd one's reservation comes back), so it cannot farm providers'
// collateral: each replica is worth 0.17 DPS and the slash is 20 DPS; before any cap the
// owner took 10 DPS of it and came out 9.6 DPS richer than it went in, and with the cap at
// the replica's value it still took 0.17 DPS on top of its refund.
func TestAttackJobThatSplitsReplicasPaysTheOwner(t *testing.T) {
	a, _ := marketApp(t, nil)
	d := newDriver(t, a, "p1", "p2", "p3")
	d.behaviours["p1"] = behaviour{cheat: true} // the job's output differs on p1's machine
	before := balances(a, "client")
	spec := exactJob(a, 3, 0)
	job := submit(t, a, spec)
	d.until(40, "job finished", jobDone(t, a, job))
	a.AssertInvariants()

	value := sdkmath.NewInt(166_667).Add(spec.PriorityTip.Amount)
	slash, comp, _ := slashSplit(t, a, sdkmath.ZeroInt(), 2)
	require.Equal(t, sdkmath.NewInt(100_000_000).Sub(slash), bonded(t, a, "p1"), "the odd replica is slashed")
	require.True(t, comp.IsZero(), "the owner is owed nothing of the %s slashed", slash)
	after := a.Balance(a.Account("client").Address, udps)
	require.Equal(t, before["client"].Sub(value.MulRaw(2)), after)
	require.True(t, after.LT(before["client"]), "the owner paid for the job: it did not farm p1's collateral")
}
