package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// fastGov: proposals need a 1 DPS deposit and vote for 3 s (3 blocks).
func fastGov(e apptest.GenesisEditor) {
	var gov govv1.GenesisState
	e.Edit(govtypes.ModuleName, &gov, func() {
		voting, expedited := 3*time.Second, 2*time.Second
		gov.Params.MinDeposit = sdk.NewCoins(sdk.NewInt64Coin(udps, 1_000_000))
		gov.Params.ExpeditedMinDeposit = sdk.NewCoins(sdk.NewInt64Coin(udps, 2_000_000))
		gov.Params.VotingPeriod, gov.Params.ExpeditedVotingPeriod = &voting, &expedited
	})
}

// decideProposal submits msgs as one proposal from proposer, votes it yes with the
// validator (all the bonded stake), runs the chain past the voting period and returns the
// proposal as it ended.
func decideProposal(t *testing.T, a *apptest.App, proposer string, msgs ...sdk.Msg) govv1.Proposal {
	t.Helper()
	id, err := a.GovKeeper.ProposalID.Peek(a.Ctx())
	require.NoError(t, err)
	submit, err := govv1.NewMsgSubmitProposal(msgs, sdk.NewCoins(sdk.NewInt64Coin(udps, 1_000_000)), a.Account(proposer).String(), "", "params", "params", false)
	require.NoError(t, err)
	a.MustDeliver(proposer, submit)
	a.MustDeliver("validator", govv1.NewMsgVote(a.Account("validator").Address, id, govv1.OptionYes, ""))
	a.NextBlocks(4)
	p, err := a.GovKeeper.Proposals.Get(a.Ctx(), id)
	require.NoError(t, err)
	require.NotEqual(t, govv1.StatusVotingPeriod, p.Status, "proposal %d still voting", id)
	return p
}

// TestAttackParamsUpdateMakesWashLoopsPay: providers with a say in governance vote for a
// work reward cap at or above the market's take (or a take at or below the cap). Wash work
// through an account they funded out of the chain's sight (an intermediary, IBC) would
// then earn more work reward than the take it pays: DPS for nothing. Each such proposal
// fails and changes nothing; both params move together when the take goes up first (or
// the cap comes down first). Before, each module checked only its own params: the cap
// went to 6% under a 5% take.
func TestAttackParamsUpdateMakesWashLoopsPay(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("alice"), apptest.WithGenesis(fastGov))
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	params := func() (markettypes.Params, dpstypes.Params) {
		mp, err := a.MarketKeeper.Params.Get(a.Ctx())
		require.NoError(t, err)
		dp, err := a.DPSKeeper.Params.Get(a.Ctx())
		require.NoError(t, err)
		return mp, dp
	}
	take := func(ppm uint32) sdk.Msg {
		mp, _ := params()
		mp.TakeRatePpm = ppm
		return &markettypes.MsgUpdateParams{Authority: gov, Params: mp}
	}
	workCap := func(ppm uint64) sdk.Msg {
		_, dp := params()
		dp.WorkRewardCapPpm = ppm
		return &dpstypes.MsgUpdateParams{Authority: gov, Params: dp}
	}
	requireParams := func(wantTake uint32, wantCap uint64) {
		t.Helper()
		mp, dp := params()
		require.Equal(t, wantTake, mp.TakeRatePpm, "take_rate_ppm")
		require.Equal(t, wantCap, dp.WorkRewardCapPpm, "work_reward_cap_ppm")
	}
	requireParams(50_000, 40_000) // the defaults: the loop loses 1% of what it routes

	for _, c := range []struct {
		name string
		msgs []sdk.Msg
	}{
		{"the cap above the take", []sdk.Msg{workCap(60_000)}},
		{"the cap at the take", []sdk.Msg{workCap(50_000)}},
		{"the take below the cap", []sdk.Msg{take(30_000)}},
		{"the take at the cap", []sdk.Msg{take(40_000)}},
		// both above the old values, the cap first: it meets the old take and fails the
		// proposal, whose take is not kept either
		{"the cap raised before the take", []sdk.Msg{workCap(90_000), take(100_000)}},
	} {
		p := decideProposal(t, a, "alice", c.msgs...)
		require.Equal(t, govv1.StatusFailed, p.Status, "%s: %s", c.name, p.FailedReason)
		require.Contains(t, p.FailedReason, "is not below x/market's take_rate_ppm", c.name)
		requireParams(50_000, 40_000)
	}

	// raised together, the take first; lowered together, the cap first
	p := decideProposal(t, a, "alice", take(100_000), workCap(90_000))
	require.Equal(t, govv1.StatusPassed, p.Status, p.FailedReason)
	requireParams(100_000, 90_000)
	p = decideProposal(t, a, "alice", workCap(10_000), take(20_000))
	require.Equal(t, govv1.StatusPassed, p.Status, p.FailedReason)
	requireParams(20_000, 10_000)
	// a cap of 0 (work earns no reward) holds under any take, even none
	p = decideProposal(t, a, "alice", workCap(0), take(0))
	require.Equal(t, govv1.StatusPassed, p.Status, p.FailedReason)
	requireParams(0, 0)
	a.AssertInvariants()
}

// A genesis whose work reward cap is not below the market's take passes each module's
// own check, and the chain refuses to start from it.
func TestGenesisWhereWashLoopsPayIsRefused(t *testing.T) {
	withCap := func(ppm uint64) apptest.Option {
		return apptest.WithGenesis(func(e apptest.GenesisEditor) {
			var gs dpstypes.GenesisState
			e.Edit(dpstypes.ModuleName, &gs, func() { gs.Params.WorkRewardCapPpm = ppm })
		})
	}
	take := markettypes.DefaultParams().TakeRatePpm
	err := apptest.InitChainError(t, withCap(uint64(take)))
	require.ErrorContains(t, err, "work_reward_cap_ppm 50000 is not below x/market's take_rate_ppm 50000")
	require.NoError(t, apptest.InitChainError(t, withCap(uint64(take)-1)))
}

// A genesis whose market or collateral is in another denom than the chain's (a market
// priced in an IBC stablecoin, say) passes each module's own check, and the chain refuses
// to start from it: node asks are in udps, exposure is weighed against udps collateral,
// and the take's pool share would land in x/dps's pool in a denom it never counts.
func TestGenesisInAnotherDenomIsRefused(t *testing.T) {
	const other = "ibc/usdc"
	market := apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var gs markettypes.GenesisState
		e.Edit(markettypes.ModuleName, &gs, func() {
			gs.Params.Denom, gs.Params.BidDeposit.Denom, gs.Params.ChallengeBond.Denom = other, other, other
		})
	})
	require.ErrorContains(t, apptest.InitChainError(t, market), `x/market's denom "ibc/usdc" and x/staking-slash's collateral_denom "udps" must both be the chain's bond denom "udps"`)
	collateral := apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var gs stakingslashtypes.GenesisState
		e.Edit(stakingslashtypes.ModuleName, &gs, func() { gs.Params.CollateralDenom = other })
	})
	require.ErrorContains(t, apptest.InitChainError(t, collateral), `x/market's denom "udps" and x/staking-slash's collateral_denom "ibc/usdc" must both`)
}

// A module told to follow an epoch x/epochs does not run would never again rebalance
// (x/gfl), score (x/reputation) or distribute (x/dps), and nothing would fail: x/epochs
// takes no message that adds an epoch. A proposal naming one fails and changes nothing;
// a genesis naming one is refused.
func TestEpochNoOneRunsIsRefused(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("alice"), apptest.WithGenesis(fastGov))
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	gp, err := a.GFLKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	rp, err := a.ReputationKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	dp, err := a.DPSKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	gp.EpochIdentifier, rp.EpochIdentifier, dp.EpochIdentifier = "flopz", "flopz", "flopz"
	for _, msg := range []sdk.Msg{
		&gfltypes.MsgUpdateParams{Authority: gov, Params: gp},
		&reputationtypes.MsgUpdateParams{Authority: gov, Params: rp},
		&dpstypes.MsgUpdateParams{Authority: gov, Params: dp},
	} {
		p := decideProposal(t, a, "alice", msg)
		require.Equal(t, govv1.StatusFailed, p.Status, sdk.MsgTypeURL(msg))
		require.Contains(t, p.FailedReason, `epoch_identifier "flopz": x/epochs runs no such epoch`)
	}
	gp, err = a.GFLKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	rp, err = a.ReputationKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	dp, err = a.DPSKeeper.Params.Get(a.Ctx())
	require.NoError(t, err)
	require.Equal(t, []string{"flops", "flops", "flops"}, []string{gp.EpochIdentifier, rp.EpochIdentifier, dp.EpochIdentifier})
	// another epoch x/epochs runs may be followed
	gp.EpochIdentifier = "day"
	p := decideProposal(t, a, "alice", &gfltypes.MsgUpdateParams{Authority: gov, Params: gp})
	require.Equal(t, govv1.StatusPassed, p.Status, p.FailedReason)

	err = apptest.InitChainError(t, apptest.WithGenesis(func(e apptest.GenesisEditor) {
		var gs reputationtypes.GenesisState
		e.Edit(reputationtypes.ModuleName, &gs, func() { gs.Params.EpochIdentifier = "flopz" })
	}))
	require.ErrorContains(t, err, `x/reputation's epoch_identifier "flopz" is not an epoch x/epochs runs (day, hour, minute, week, flops)`)
}
