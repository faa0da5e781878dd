package integration

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// registerMany registers n one-GPU nodes for account (bonding their collateral), in
// transactions of 50, and returns their ids.
func registerMany(t *testing.T, a *apptest.App, account, tag string, n int) []uint64 {
	t.Helper()
	op := a.Account(account).String()
	a.MustDeliver(account, &sstypes.MsgBond{Provider: op, Amount: sdk.NewInt64Coin(udps, int64(n)*100_000_000)})
	before := len(nodesOf(t, a, account))
	for i := 0; i < n; i += 50 {
		var msgs []sdk.Msg
		for j := i; j < min(i+50, n); j++ {
			msgs = append(msgs, &gfltypes.MsgRegisterNode{Operator: op, Spec: a100(fmt.Sprintf("%s%d", tag, j), 1)})
		}
		a.MustDeliver(account, msgs...)
	}
	ids := nodesOf(t, a, account)
	require.Len(t, ids, before+n)
	return ids[before:]
}

// TestAttackIdGapCapturesDraws: the scheduler's draw once started at a random node id and
// walked ids upward, so an operator that registered and deactivated 500 nodes (ids are
// never reused, deactivation frees the collateral) in front of its 8 active ones caught
// almost every draw that started in the gap. Draws are now uniform over the eligible
// nodes: over 200 one-task jobs, each cancelled before the next so that every node stays
// idle, the attacker's share is its share of the nodes (8 of 32) within four standard
// deviations of the binomial.
func TestAttackIdGapCapturesDraws(t *testing.T) {
	const honestOps, perOp, draws = 6, 4, 200
	names := []string{"client", "attacker"}
	for i := range honestOps {
		names = append(names, fmt.Sprintf("h%d", i))
	}
	a := apptest.New(t, apptest.WithAccounts(names...), apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() { g.Params.ChallengeIntervalBlocks = 1_000_000 })
	}))
	for i := range honestOps {
		registerMany(t, a, fmt.Sprintf("h%d", i), fmt.Sprintf("h%d-", i), perOp)
	}
	dead := registerMany(t, a, "attacker", "dead", 500)
	op := a.Account("attacker").String()
	for i := 0; i < len(dead); i += 100 {
		var msgs []sdk.Msg
		for _, id := range dead[i:min(i+100, len(dead))] {
			msgs = append(msgs, &gfltypes.MsgDeactivateNode{Operator: op, NodeId: id})
		}
		a.MustDeliver("attacker", msgs...)
	}
	live := registerMany(t, a, "attacker", "live", 8)
	require.Greater(t, live[0], dead[len(dead)-1], "the attacker's live nodes sit right after the gap")
	attackerNode := map[uint64]bool{}
	for _, id := range live {
		attackerNode[id] = true
	}

	won := 0
	for range draws {
		job := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN))
		tk := jobTasks(t, a, job)[0]
		require.NotZero(t, tk.NodeId, "placed in the block it was submitted")
		if attackerNode[tk.NodeId] {
			won++
		}
		a.MustDeliver("client", &markettypes.MsgCancelJob{Owner: a.Account("client").String(), JobId: job})
	}
	share := 8.0 / float64(8+honestOps*perOp)
	sd := math.Sqrt(draws * share * (1 - share))
	t.Logf("the attacker (8 of %d nodes, behind a gap of %d ids) won %d of %d draws; fair %.0f ± %.1f", 8+honestOps*perOp, len(dead), won, draws, draws*share, sd)
	require.InDelta(t, draws*share, float64(won), 4*sd)
	a.AssertInvariants()
}

// TestAttackOperatorAuditsItself: an operator with many nodes runs a single-replica EXACT
// task and would audit it, or sit on its own dispute's committee, from another of its
// nodes: replicas, audits and committee members are kept apart by operator. Twenty
// warm-up tasks (all audited) of an operator with 8 nodes, next to one honest operator's
// node: every audit goes to the other operator; a 3-replica job runs on 3 operators.
func TestAttackOperatorAuditsItself(t *testing.T) {
	a, nodes := marketAppLate(t, 3, 0, nil)
	registerMany(t, a, "p1", "many", 8)
	nodes["p2"] = bondAndRegister(t, a, "p2", 8)
	nodes["p3"] = bondAndRegister(t, a, "p3", 8)
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	d := newDriver(t, a, "p1", "p2", "p3")
	spec := exactJob(a, 1, 0)
	spec.TaskCount = 20
	spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(20*(1+int64(p.CommitteeSize))))
	job := submit(t, a, spec)
	d.until(100, "job finished", jobDone(t, a, job))
	byNode := func(id uint64) string {
		s, err := a.MarketKeeper.Slots.Get(a.Ctx(), id)
		require.NoError(t, err)
		return s.Operator
	}
	audits := 0
	for _, tk := range jobTasks(t, a, job) {
		if tk.Role != markettypes.TASK_ROLE_PRIMARY {
			continue
		}
		for _, au := range role(t, a, job, markettypes.TASK_ROLE_AUDIT) {
			if au.Index == tk.Index {
				audits++
				require.NotEqualf(t, byNode(tk.NodeId), byNode(au.NodeId), "task %d audited by its own operator", tk.Id)
			}
		}
	}
	require.Greater(t, audits, 0)

	rep := exactJob(a, 3, 0)
	rep.TaskCount = 4
	job = submit(t, a, rep)
	shards := map[uint32]map[string]bool{}
	for _, tk := range jobTasks(t, a, job) {
		if shards[tk.Index] == nil {
			shards[tk.Index] = map[string]bool{}
		}
		require.Falsef(t, shards[tk.Index][byNode(tk.NodeId)], "two replicas of shard %d on one operator", tk.Index)
		shards[tk.Index][byNode(tk.NodeId)] = true
	}
	a.AssertInvariants()
}
