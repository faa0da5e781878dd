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

const price = 166_667 // every test node quotes 1 DPS/GPU-hour for 10 minutes

func role(t *testing.T, a *apptest.App, job uint64, r markettypes.TaskRole) []markettypes.Task {
	var out []markettypes.Task
	for _, tk := range jobTasks(t, a, job) {
		if tk.Role == r {
			out = append(out, tk)
		}
	}
	return out
}

func dispute(t *testing.T, a *apptest.App, id uint64) markettypes.Dispute {
	res, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).Dispute(a.Ctx(), &markettypes.QueryDisputeRequest{DisputeId: id})
	require.NoError(t, err)
	return res.Dispute
}

// A single-replica EXACT task of a new provider is always audited (warm-up). When the
// audit disagrees, a committee of three decides: whoever it finds wrong is slashed for a
// wrong result (compensating the owner, rewarding the verifiers), the others are paid from
// the verification budget. Both directions, balances exact.
func TestAuditDisagreementGoesToCommittee(t *testing.T) {
	for _, providerCheats := range []bool{true, false} {
		name := map[bool]string{true: "provider cheats: overturned", false: "auditor cheats: upheld"}[providerCheats]
		t.Run(name, func(t *testing.T) {
			a, nodes := marketAppLate(t, 5, 1, nil) // p1 runs the task; p2 audits; p3..p5 sit on the committee
			p, _ := a.MarketKeeper.GetParams(a.Ctx())
			d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5")
			d.behaviours["p1"] = behaviour{cheat: providerCheats}
			d.behaviours["p2"] = behaviour{cheat: !providerCheats}
			spec := committeeJob(a, p)
			clientStart := a.Balance(a.Account("client").Address, udps)
			job := submit(t, a, spec)
			target := jobTasks(t, a, job)[0]
			require.Equal(t, nodes["p1"], target.NodeId)

			d.until(10, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
			registerLate(t, a, nodes, "p2")
			d.until(20, "dispute opened", func() bool { return task(t, a, target.Id).DisputeId != 0 })
			registerLate(t, a, nodes, "p3", "p4", "p5")
			before := balances(a, "client", "p1", "p2", "p3", "p4", "p5")
			bondedBefore := map[string]sdkmath.Int{"p1": bonded(t, a, "p1"), "p2": bonded(t, a, "p2")}
			d.until(60, "job finished", jobDone(t, a, job))
			a.AssertInvariants()

			dp := dispute(t, a, task(t, a, target.Id).DisputeId)
			require.Equal(t, markettypes.DISPUTE_KIND_AUDIT, dp.Kind)
			require.Len(t, dp.Committee, 3)
			gross := sdkmath.NewInt(price).Add(spec.PriorityTip.Amount)
			netPrice := paidNet(t, a, sdkmath.NewInt(price))
			if providerCheats {
				require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dp.Status)
				slash, comp, each := slashSplit(t, a, sdkmath.NewInt(price).MulRaw(3), 4) // owed the committee; rewarded: the auditor and the committee's majority
				require.Equal(t, bondedBefore["p1"].Sub(slash), bonded(t, a, "p1"))
				require.Equal(t, before["p1"], a.Balance(a.Account("p1").Address, udps), "the cheater is not paid")
				for _, n := range []string{"p2", "p3", "p4", "p5"} {
					require.Equal(t, before[n].Add(netPrice).Add(each), a.Balance(a.Account(n).Address, udps), n)
				}
				require.Equal(t, sdkmath.NewInt(price).MulRaw(3), comp)
				require.Equal(t, clientStart.Sub(sdkmath.NewInt(price)), a.Balance(a.Account("client").Address, udps),
					"the owner pays the auditor and the committee, and is made good for the committee")
				require.Equal(t, markettypes.TASK_STATUS_FAILED, task(t, a, target.Id).Status)
			} else {
				require.Equal(t, markettypes.DISPUTE_STATUS_UPHELD, dp.Status)
				slash, comp, each := slashSplit(t, a, sdkmath.NewInt(price).MulRaw(3), 3) // owed the committee the lie cost
				require.Equal(t, bondedBefore["p2"].Sub(slash), bonded(t, a, "p2"), "the lying auditor is slashed")
				require.Equal(t, before["p2"], a.Balance(a.Account("p2").Address, udps))
				require.Equal(t, before["p1"].Add(paidNet(t, a, gross)), a.Balance(a.Account("p1").Address, udps), "the honest provider is paid")
				for _, n := range []string{"p3", "p4", "p5"} {
					require.Equal(t, before[n].Add(netPrice).Add(each), a.Balance(a.Account(n).Address, udps), n)
				}
				require.Equal(t, sdkmath.NewInt(price).MulRaw(3), comp)
				require.Equal(t, clientStart.Sub(gross), a.Balance(a.Account("client").Address, udps),
					"the owner pays the provider and the committee, the lying auditor nothing, and is made good for the committee")
				require.Equal(t, markettypes.TASK_STATUS_SETTLED, task(t, a, target.Id).Status)
			}
		})
	}
}

// The owner challenges a verified result with challenge_bond. Lost (the committee agrees
// with the provider): half the bond to the provider, half shared by the committee's
// majority. Won (the committee disagrees): the provider is slashed, the bond returned.
// Balances exact.
func TestChallengeWonAndLost(t *testing.T) {
	for _, resultWrong := range []bool{false, true} {
		name := map[bool]string{false: "lost: the result was right", true: "won: the result was wrong"}[resultWrong]
		t.Run(name, func(t *testing.T) {
			a, nodes := marketAppLate(t, 5, 2, nil) // p1, p2 replicate; p3..p5 judge
			p, _ := a.MarketKeeper.GetParams(a.Ctx())
			d := newDriver(t, a, "p1", "p2", "p3", "p4", "p5")
			d.behaviours["p1"] = behaviour{cheat: resultWrong}
			d.behaviours["p2"] = behaviour{cheat: resultWrong} // agreeing replicas: the result is verified either way
			spec := exactJob(a, 2, 0)
			spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(int64(p.CommitteeSize)))
			clientStart := a.Balance(a.Account("client").Address, udps)
			job := submit(t, a, spec)
			var target markettypes.Task
			d.until(20, "verified", func() bool {
				for _, tk := range jobTasks(t, a, job) {
					if tk.Status == markettypes.TASK_STATUS_VERIFIED && providerOf(nodes, tk.NodeId) == "p1" {
						target = tk
						return true
					}
				}
				return false
			})
			registerLate(t, a, nodes, "p3", "p4", "p5")
			before := balances(a, "client", "p1", "p3", "p4", "p5")
			bondedP1 := bonded(t, a, "p1")
			res := a.Deliver("p2", &markettypes.MsgChallenge{Owner: a.Account("p2").String(), TaskId: target.Id})
			require.Equal(t, markettypes.ErrNotOwner.ABCICode(), res.Code, "only the owner challenges")
			a.MustDeliver("client", &markettypes.MsgChallenge{Owner: a.Account("client").String(), TaskId: target.Id})
			res = a.Deliver("client", &markettypes.MsgChallenge{Owner: a.Account("client").String(), TaskId: target.Id})
			require.Equal(t, markettypes.ErrAlreadyDisputed.ABCICode(), res.Code, "one dispute per result")
			d.until(60, "job finished", jobDone(t, a, job))
			a.AssertInvariants()

			dp := dispute(t, a, task(t, a, target.Id).DisputeId)
			bond := p.ChallengeBond.Amount
			gross := sdkmath.NewInt(price).Add(spec.PriorityTip.Amount)
			netPrice := paidNet(t, a, sdkmath.NewInt(price))
			committeeCost := sdkmath.NewInt(price).MulRaw(3)
			if !resultWrong {
				require.Equal(t, markettypes.DISPUTE_STATUS_UPHELD, dp.Status)
				each := bond.QuoRaw(2).QuoRaw(3)
				toProvider := bond.Sub(each.MulRaw(3))
				require.Equal(t, before["p1"].Add(paidNet(t, a, gross)).Add(toProvider), a.Balance(a.Account("p1").Address, udps))
				for _, n := range []string{"p3", "p4", "p5"} {
					require.Equal(t, before[n].Add(netPrice).Add(each), a.Balance(a.Account(n).Address, udps), n)
				}
				require.Equal(t, clientStart.Sub(bond).Sub(gross.MulRaw(2)).Sub(committeeCost), a.Balance(a.Account("client").Address, udps),
					"a lost challenge costs the bond and the committee; both replicas are paid")
				return
			}
			require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, dp.Status)
			slash, comp, each := slashSplit(t, a, committeeCost, 3)
			require.Equal(t, committeeCost, comp)
			require.Equal(t, bondedP1.Sub(slash), bonded(t, a, "p1"))
			require.Equal(t, before["p1"], a.Balance(a.Account("p1").Address, udps), "an overturned result is not paid")
			for _, n := range []string{"p3", "p4", "p5"} {
				require.Equal(t, before[n].Add(netPrice).Add(each), a.Balance(a.Account(n).Address, udps), n)
			}
			// the owner gets the bond back, pays the other replica and the committee, and is
			// made good for the committee; the overturned replica's reservation comes back
			require.Equal(t, clientStart.Sub(gross), a.Balance(a.Account("client").Address, udps))
		})
	}
}
