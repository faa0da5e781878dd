package integration

import (
	"crypto/sha256"

	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/testutil/drandtest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// relayRounds puts on chain, in one block, the drand rounds bound to the blocks up to
// the last committed one that are not there yet (what flops-worker's relay does).
func relayRounds(t *testing.T, a *apptest.App, net *drandtest.Network) {
	t.Helper()
	var msgs []sdk.Msg
	seen := map[uint64]bool{}
	err := a.GFLKeeper.BlockRounds.Walk(a.Ctx(), nil, func(_ int64, br gfltypes.BlockRound) (bool, error) {
		if has, err := a.GFLKeeper.DrandRounds.Has(a.Ctx(), br.Round); err != nil || has || seen[br.Round] {
			return false, err
		}
		if beacon.DrandRoundTime(net.Genesis, net.Period, br.Round).After(a.BlockTime()) {
			return false, nil // not published yet
		}
		seen[br.Round] = true
		msgs = append(msgs, &gfltypes.MsgSubmitBeacon{Submitter: a.Account("relay").String(), Round: br.Round, Signature: net.Sign(t, br.Round)})
		return false, nil
	})
	require.NoError(t, err)
	if len(msgs) > 0 {
		a.MustDeliver("relay", msgs...)
	}
}

// TestAuditDrawWaitsForDrandRound: with the drand beacon on, a single-replica EXACT
// task's audit is drawn from the drand round bound to the block after its commitment:
// nothing is drawn while that round is off chain (the draw moves on a block at a time),
// and once a relay puts it on chain the audit is drawn and the job finishes as usual.
func TestAuditDrawWaitsForDrandRound(t *testing.T) {
	net := drandtest.NewNetwork(t, 1_600_000_000, 3)
	a := apptest.New(t, apptest.WithAccounts("client", "p1", "p2", "relay"), apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() {
			g.Params.ChallengeIntervalBlocks = 1_000_000
			g.Params.Drand = gfltypes.DrandParams{PublicKey: net.PublicKey(), GenesisTime: net.Genesis, PeriodSeconds: net.Period, DelayRounds: 1, WaitBlocks: 50}
		})
	}))
	bondAndRegister(t, a, "p1", 1)
	p, _ := a.MarketKeeper.GetParams(a.Ctx())
	d := newDriver(t, a, "p1", "p2")
	spec := committeeJob(a, p)
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	// the relay runs until the commitment: the task's own draw waits for its round too
	// (TestAttackProposerSteersDraws)
	d.until(20, "committed", func() bool {
		relayRounds(t, a, net)
		return task(t, a, target.Id).Status == markettypes.TASK_STATUS_COMMITTED
	})
	committed := task(t, a, target.Id)

	// no relay: the draw waits
	for range 8 {
		d.step()
	}
	waiting := task(t, a, target.Id)
	require.Equal(t, markettypes.TASK_STATUS_COMMITTED, waiting.Status)
	require.False(t, waiting.Audited)
	require.Greater(t, waiting.AuditDrawHeight, committed.CommitHeight+2, "the draw moved on")
	require.Empty(t, role(t, a, job, markettypes.TASK_ROLE_AUDIT))
	a.AssertInvariants()

	// the relay puts the round on chain: the (warm-up) audit is drawn from it
	relayRounds(t, a, net)
	d.until(5, "audit drawn", func() bool { return len(role(t, a, job, markettypes.TASK_ROLE_AUDIT)) == 1 })
	res, err := a.GFLKeeper.BlockRounds.Get(a.Ctx(), committed.CommitHeight+1)
	require.NoError(t, err)
	v, source, round, err := a.GFLKeeper.BeaconValue(a.Ctx(), committed.CommitHeight+1)
	require.NoError(t, err)
	require.Equal(t, "drand", source)
	require.Equal(t, res.Round, round)
	r := net.Randomness(t, round)
	require.Equal(t, r[:], v)

	bondAndRegister(t, a, "p2", 1)
	for i := 0; i < 80 && getJob(t, a, job).FinishedHeight == 0; i++ {
		relayRounds(t, a, net)
		d.step()
	}
	require.NotZero(t, getJob(t, a, job).FinishedHeight, "the job finishes with the relay running")
	a.AssertInvariants()
}

// drandApp is a wired app with the drand beacon of net on and the named accounts, each
// block's header hash chosen by hash (a proposer's choice).
func drandApp(t *testing.T, net *drandtest.Network, hash func(int64) []byte, names ...string) *apptest.App {
	t.Helper()
	a := apptest.New(t, apptest.WithAccounts(names...), apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() {
			g.Params.ChallengeIntervalBlocks = 1_000_000
			g.Params.Drand = gfltypes.DrandParams{PublicKey: net.PublicKey(), GenesisTime: net.Genesis, PeriodSeconds: net.Period, DelayRounds: 1, WaitBlocks: 50}
		})
	}))
	a.HeaderHash = hash
	return a
}

// TestAttackProposerSteersDraws: a proposer tries header hashes to choose which node the
// scheduler gives a task (its own for a primary, a colluder for an audit or a committee
// seat). With the drand beacon on, a task's draw uses the round bound to the block it
// became pending in: the tasks wait, unassigned, until a relay puts that round on chain,
// and two chains that differ only in their proposers' header hashes give every task to the
// same node. (Before, the draw used the previous block's value, not on chain yet with
// drand on, and fell back to the current header's hash: the proposer's pick.)
func TestAttackProposerSteersDraws(t *testing.T) {
	net := drandtest.NewNetwork(t, 1_600_000_000, 3)
	providers := []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"}
	run := func(salt string) map[uint32]uint64 {
		hash := func(h int64) []byte {
			sum := sha256.Sum256(append([]byte(salt), apptest.BlockHash(h)...))
			return sum[:]
		}
		a := drandApp(t, net, hash, append([]string{"client", "relay"}, providers...)...)
		for _, p := range providers {
			bondAndRegister(t, a, p, 1)
		}
		job := submit(t, a, gemmJob(a, 8, markettypes.ALLOCATION_MODE_ASSIGN))
		for range 3 {
			a.NextBlock()
		}
		for _, tk := range jobTasks(t, a, job) {
			require.Equal(t, markettypes.TASK_STATUS_PENDING, tk.Status, "task %d is drawn before its round is known", tk.Id)
		}
		a.AssertInvariants()
		got := map[uint32]uint64{}
		for i := 0; i < 10 && len(got) < 8; i++ {
			relayRounds(t, a, net)
			a.NextBlock()
			for _, tk := range jobTasks(t, a, job) {
				if tk.NodeId != 0 {
					got[tk.Index] = tk.NodeId
				}
			}
		}
		require.Len(t, got, 8, "every task is assigned once its round is on chain")
		a.AssertInvariants()
		return got
	}
	honest := run("honest proposer")
	for _, salt := range []string{"ground 1", "ground 2", "ground 3"} {
		require.Equal(t, honest, run(salt), "a proposer's header hash changed who got the tasks")
	}
}

// A task pending when governance turns drand on can get no round for its block: its draw
// binds to the current block and waits for that block's round, like a new task's.
func TestPendingTaskRebindsWhenDrandTurnsOn(t *testing.T) {
	net := drandtest.NewNetwork(t, 1_600_000_000, 3)
	a := apptest.New(t, apptest.WithAccounts("client", "p1", "relay"), apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var g gfltypes.GenesisState
		e.Edit(gfltypes.ModuleName, &g, func() { g.Params.ChallengeIntervalBlocks = 1_000_000 })
	}))
	job := submit(t, a, gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN))
	a.NextBlocks(2) // no node: parked
	before := jobTasks(t, a, job)[0]
	require.Equal(t, markettypes.TASK_STATUS_PENDING, before.Status)

	a.Prepare(func(ctx sdk.Context) {
		p, err := a.GFLKeeper.Params.Get(ctx)
		require.NoError(t, err)
		p.Drand = gfltypes.DrandParams{PublicKey: net.PublicKey(), GenesisTime: net.Genesis, PeriodSeconds: net.Period, DelayRounds: 1, WaitBlocks: 50}
		require.NoError(t, a.GFLKeeper.Params.Set(ctx, p))
	})
	a.NextBlock()
	bondAndRegister(t, a, "p1", 1)
	var rebound markettypes.Task
	for i := 0; i < 40; i++ {
		a.NextBlock()
		rebound = jobTasks(t, a, job)[0]
		if rebound.PendingHeight != before.PendingHeight {
			break
		}
	}
	require.Greater(t, rebound.PendingHeight, before.PendingHeight, "the draw bound to a block with a round")
	require.Equal(t, markettypes.TASK_STATUS_PENDING, rebound.Status, "and waits for it")
	for i := 0; i < 10 && jobTasks(t, a, job)[0].NodeId == 0; i++ {
		relayRounds(t, a, net)
		a.NextBlock()
	}
	assigned := jobTasks(t, a, job)[0]
	require.NotZero(t, assigned.NodeId)
	_, source, _, err := a.GFLKeeper.BeaconValue(a.Ctx(), rebound.PendingHeight)
	require.NoError(t, err)
	require.Equal(t, "drand", source)
	a.AssertInvariants()
}
