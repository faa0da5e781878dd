package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The penalty for a wrong result scales with what the cheater hoped to gain, not with
// the size of its bond (x/market/README.md, the security argument). A 10-hour task worth
// 10.1 DPS reserves 20 x 10.1 = 202 DPS of its provider's collateral; the provider, with
// 250 DPS bonded, cheats, its audit disagrees and the committee overturns it: it is
// slashed 202 DPS (not 20% = 50 DPS), and a provider whose collateral cannot cover that
// reserve never gets the task.
func TestWrongResultPenaltyScalesWithValue(t *testing.T) {
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
	bond1 := bonded(t, a, "p1")
	require.Equal(t, sdkmath.NewInt(250_000_000), bond1)
	d.until(80, "job finished", jobDone(t, a, job))
	a.AssertInvariants()

	dp := dispute(t, a, task(t, a, target.Id).DisputeId)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dp.Status)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, target.Id).Status)
	byFraction := bond1.MulRaw(int64(mp.WrongResultSlashPpm)).QuoRaw(1e6) // 50 DPS
	require.True(t, reserve.GT(byFraction))
	require.Equal(t, bond1.Sub(reserve), bonded(t, a, "p1"), "slashed the task's reserve, 202 DPS")
	c1, err = a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("p1").Address)
	require.NoError(t, err)
	require.True(t, c1.Exposure.IsZero())
	comp := reserve.MulRaw(int64(sp.CompensationPpm)).QuoRaw(1e6)
	// the owner pays the auditor and the committee their price, and gets the compensation
	require.Equal(t, clientStart.Sub(sdkmath.NewInt(taskPrice).MulRaw(4)).Add(comp), a.Balance(a.Account("client").Address, udps))
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero())
}
