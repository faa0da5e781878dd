package integration

import (
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
	spec := exactJob(a, 1, 0)
	spec.VerificationBudget = sdk.NewCoin(udps, spec.MaxPricePerTask.Amount.MulRaw(1+int64(p.CommitteeSize)))
	job := submit(t, a, spec)
	target := jobTasks(t, a, job)[0]
	d.until(10, "committed", func() bool { return task(t, a, target.Id).Status == markettypes.TASK_STATUS_COMMITTED })
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
