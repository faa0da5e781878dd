package app

import (
	"context"
	"strings"
	"time"

	"cosmossdk.io/collections"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	simtypes "github.com/cosmos/cosmos-sdk/types/simulation"
	"github.com/cosmos/cosmos-sdk/x/auth"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/bank"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	"github.com/cosmos/cosmos-sdk/x/epochs"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"
	"github.com/cosmos/cosmos-sdk/x/gov"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"

	dpssim "github.com/flopsnet/flops/x/dps/simulation"
	"github.com/flopsnet/flops/x/gfl"
	gflsim "github.com/flopsnet/flops/x/gfl/simulation"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketsim "github.com/flopsnet/flops/x/market/simulation"
	reputationsim "github.com/flopsnet/flops/x/reputation/simulation"
	stakingslashsim "github.com/flopsnet/flops/x/staking-slash/simulation"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// newSimulationManager is the app's simulation manager (app/sim_test.go): every module
// that simulates (random genesis, store decoders, message factories), auth with random
// genesis accounts. It is built with the app and used only by the simulation tests.
func (app *App) newSimulationManager() *module.SimulationManager {
	overrides := map[string]module.AppModuleSimulation{
		authtypes.ModuleName:   auth.NewAppModule(app.appCodec, app.AccountKeeper, simGenesisAccounts, nil),
		banktypes.ModuleName:   bankSim{app.ModuleManager.Modules[banktypes.ModuleName].(bank.AppModule)},
		epochstypes.ModuleName: epochsSim{app.ModuleManager.Modules[epochstypes.ModuleName].(epochs.AppModule)},
		gfltypes.ModuleName:    gflSim{AppModule: app.ModuleManager.Modules[gfltypes.ModuleName].(gfl.AppModule), app: app, answers: gflsim.NewAnswers()},
		govtypes.ModuleName:    govSim{AppModule: app.ModuleManager.Modules[govtypes.ModuleName].(gov.AppModule), app: app},
	}
	sm := module.NewSimulationManagerFromAppModules(app.ModuleManager.Modules, overrides)
	sm.RegisterStoreDecoders()
	return sm
}

// SimulationManager is the simulation framework's view of the app.
func (app *App) SimulationManager() *module.SimulationManager { return app.sm }

// GetBaseApp returns the app's BaseApp (simulation tests drive it).
func (app *App) GetBaseApp() *baseapp.BaseApp { return app.BaseApp }

// bankSim is x/bank's random genesis with what flops' genesis always has: udps
// transferable, ugfl bank sends disabled, and the denominations' metadata.
type bankSim struct{ bank.AppModule }

func (b bankSim) GenerateGenesisState(s *module.SimulationState) {
	b.AppModule.GenerateGenesisState(s)
	var gs banktypes.GenesisState
	s.Cdc.MustUnmarshalJSON(s.GenState[banktypes.ModuleName], &gs)
	// udps always moves (x/bank's random params may disable any denom); ugfl never does
	gs.Params.DefaultSendEnabled = true
	gs.SendEnabled = []banktypes.SendEnabled{{Denom: GFLDenom, Enabled: false}}
	gs.DenomMetadata = append(gs.DenomMetadata, DenomMetadata()...)
	s.GenState[banktypes.ModuleName] = s.Cdc.MustMarshalJSON(&gs)
}

// epochsSim is x/epochs' random genesis plus the "flops" epoch (GFL rebalance,
// reputation, emission), 1 to 30 minutes long so that a simulation sees several.
type epochsSim struct{ epochs.AppModule }

func (e epochsSim) GenerateGenesisState(s *module.SimulationState) {
	e.AppModule.GenerateGenesisState(s)
	var gs epochstypes.GenesisState
	s.Cdc.MustUnmarshalJSON(s.GenState[epochstypes.ModuleName], &gs)
	d := time.Duration(1+s.Rand.Intn(30)) * time.Minute
	gs.Epochs = append(gs.Epochs, epochstypes.NewGenesisEpochInfo(EpochIdentifier, d))
	s.GenState[epochstypes.ModuleName] = s.Cdc.MustMarshalJSON(&gs)
}

// simGenesisAccounts are the simulation's accounts as plain accounts (flops has no
// vesting module).
func simGenesisAccounts(s *module.SimulationState) authtypes.GenesisAccounts {
	out := make(authtypes.GenesisAccounts, 0, len(s.Accounts))
	for _, acc := range s.Accounts {
		out = append(out, authtypes.NewBaseAccountWithAddress(acc.Address))
	}
	return out
}

// gflSim is x/gfl with the operators' operations, which need x/staking-slash's collateral.
type gflSim struct {
	gfl.AppModule
	app     *App
	answers *gflsim.Answers
}

func (g gflSim) WeightedOperationsX(w simsx.WeightSource, reg simsx.Registry) {
	reg.Add(w.Get("msg_register_node", 120), gflsim.MsgRegisterNodeFactory(g.app.GFLKeeper, g.operators))
	reg.Add(w.Get("msg_deactivate_node", 15), gflsim.MsgDeactivateNodeFactory(g.app.GFLKeeper))
	reg.Add(w.Get("msg_reactivate_node", 15), gflsim.MsgReactivateNodeFactory(g.app.GFLKeeper))
	reg.Add(w.Get("msg_update_node", 15), gflsim.MsgUpdateNodeFactory(g.app.GFLKeeper))
	reg.Add(w.Get("msg_commit_challenge", 180), gflsim.MsgCommitChallengeFactory(g.app.GFLKeeper, g.answers))
	reg.Add(w.Get("msg_reveal_challenge", 240), gflsim.MsgRevealChallengeFactory(g.app.GFLKeeper, g.answers))
	reg.Add(w.Get("msg_submit_beacon", 120), gflsim.MsgSubmitBeaconFactory(g.app.GFLKeeper))
	reg.Add(w.Get("msg_proposer_randomness", 150), gflsim.MsgProposerRandomnessFactory(g.app.GFLKeeper, g.app.StakingKeeper))
	// the attack: a provider moving its ugfl (refused)
	reg.Add(w.Get("msg_send_ugfl", 10), gflsim.MsgSendUgflFactory(g.app.BankKeeper))
	reg.Add(w.Get("msg_fund_community_pool_ugfl", 10), gflsim.MsgFundCommunityPoolUgflFactory(g.app.BankKeeper))
}

// ProposalMsgsX registers governance's changes of x/gfl's params.
func (g gflSim) ProposalMsgsX(w simsx.WeightSource, reg simsx.Registry) {
	reg.Add(w.Get("msg_update_params", 30), gflsim.MsgUpdateParamsFactory())
	reg.Add(w.Get("msg_approve_node", 60), gflsim.MsgApproveNodeFactory(g.app.GFLKeeper))
}

// operators are the providers whose bonded collateral covers their locked GPUs and gpus
// more, not jailed.
func (g gflSim) operators(ctx context.Context, gpus uint64) []sdk.AccAddress {
	p, err := g.app.StakingSlashKeeper.Params.Get(ctx)
	if err != nil {
		return nil
	}
	var out []sdk.AccAddress
	_ = g.app.StakingSlashKeeper.Collaterals.Walk(ctx, nil, func(addr sdk.AccAddress, c stakingslashtypes.Collateral) (bool, error) {
		if !c.Jailed && c.Bonded.GTE(p.MinCollateralPerGpu.MulRaw(int64(c.LockedGpus+gpus))) {
			out = append(out, addr)
		}
		return false, nil
	})
	return out
}

// govSim is x/gov's operations plus governance that gets its way: a proposal of a flops
// params change (or a node's admission), titled "simulated <msg>", that the bonded
// validators vote yes on, the most powerful first, one vote an operation. x/gov's own
// operations vote at random and schedule votes by block time for 1 in 100 proposals; the
// SDK's simulator (v0.54.4, x/simulation's queueOperations) drops every operation
// scheduled by block time (it appends to a copy of its queue), so in 250 blocks not one
// proposal passed and the flops params never changed although their changes were
// proposed. These votes are operations of their own instead.
//
// Their weights are 0 in a default run (make sim: 25 blocks, too few for a proposal to
// pass) and set by the params file app/testdata/sim-carried-gov.json, which make sim-long
// passes: the flops params change (seeds 6 and 7, 250 blocks: 8 proposals passed each,
// every flops Msg delivered). A change within bounds may stop the market on purpose (seed
// 4, 250 blocks: x/reputation's min_score 0.568 at block 42 left no simulated node
// eligible long enough to finish a job), so a seed where governance passed a change is not
// held to finish work; the invariants still run every block. Carried proposals that are
// rejected missed the quorum: their voting period ended before enough validators voted.
type govSim struct {
	gov.AppModule
	app *App
}

// CarriedProposalTitle prefixes the title of govSim's proposals (the simulation tests
// count their outcomes by it).
const CarriedProposalTitle = "simulated "

func (g govSim) WeightedOperationsX(w simsx.WeightSource, reg simsx.Registry, proposals simsx.WeightedProposalMsgIter,
	legacy []simtypes.WeightedProposalContent, //nolint:staticcheck // x/gov's signature
) {
	g.AppModule.WeightedOperationsX(w, reg, proposals, legacy)
	payloads := []simsx.FactoryMethod{
		marketsim.MsgUpdateParamsFactory(g.app.MarketKeeper).Create(),
		gflsim.MsgUpdateParamsFactory().Create(),
		gflsim.MsgApproveNodeFactory(g.app.GFLKeeper).Create(),
		dpssim.MsgUpdateParamsFactory().Create(),
		reputationsim.MsgUpdateParamsFactory().Create(),
		stakingslashsim.MsgUpdateParamsFactory().Create(),
	}
	var submit simsx.SimMsgFactoryFn[*govv1.MsgSubmitProposal] = func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *govv1.MsgSubmitProposal) {
		// the payloads in turn, by proposal id (a random pick left one module's params
		// unchanged in four seeds of 250 blocks)
		id, err := g.app.GovKeeper.ProposalID.Peek(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		_, payload := payloads[id%uint64(len(payloads))](ctx, data, reporter)
		if reporter.IsSkipped() {
			return nil, nil
		}
		params, err := g.app.GovKeeper.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		proposer := data.AnyAccount(reporter, simsx.WithLiquidBalanceGTE(params.MinDeposit...))
		if reporter.IsSkipped() {
			return nil, nil
		}
		// the deposit is set aside before the fee is drawn from what is left (as x/gov's
		// own factory does): else a random fee can leave less than the deposit (seed 2,
		// block 141: "spendable balance 25udps is smaller than 89udps")
		for _, c := range params.MinDeposit {
			if !proposer.LiquidBalance().BlockAmount(c) {
				reporter.Skip("the proposer cannot set the deposit aside")
				return nil, nil
			}
		}
		msg, err := govv1.NewMsgSubmitProposal([]sdk.Msg{payload}, params.MinDeposit, proposer.AddressBech32, "",
			CarriedProposalTitle+sdk.MsgTypeURL(payload), "a flops change the bonded validators vote for", false)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		return []simsx.SimAccount{proposer}, msg
	}
	reg.Add(w.Get("msg_submit_carried_proposal", 0), submit)
	var vote simsx.SimMsgFactoryFn[*govv1.MsgVote] = g.carriedVote
	reg.Add(w.Get("msg_vote_carried_proposal", 0), vote)
}

// carriedVote is the next yes vote on the oldest carried proposal in its voting period:
// from the most powerful bonded validator that has not voted on it.
func (g govSim) carriedVote(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *govv1.MsgVote) {
	var prop *govv1.Proposal
	err := g.app.GovKeeper.Proposals.Walk(ctx, nil, func(_ uint64, p govv1.Proposal) (bool, error) {
		if p.Status == govv1.StatusVotingPeriod && strings.HasPrefix(p.Title, CarriedProposalTitle) {
			prop = &p
			return true, nil
		}
		return false, nil
	})
	if err != nil || prop == nil {
		reporter.Skip("no carried proposal in its voting period")
		return nil, nil
	}
	vals, err := g.app.StakingKeeper.GetBondedValidatorsByPower(ctx)
	if err != nil {
		reporter.Skip(err.Error())
		return nil, nil
	}
	for _, v := range vals {
		bz, err := g.app.StakingKeeper.ValidatorAddressCodec().StringToBytes(v.GetOperator())
		if err != nil {
			continue
		}
		if voted, err := g.app.GovKeeper.Votes.Has(ctx, collections.Join(prop.Id, sdk.AccAddress(bz))); err != nil || voted {
			continue
		}
		addr, err := data.AddressCodec().BytesToString(bz)
		if err != nil {
			continue
		}
		acc := data.GetAccount(reporter, addr)
		if reporter.IsSkipped() {
			return nil, nil
		}
		return []simsx.SimAccount{acc}, govv1.NewMsgVote(acc.Address, prop.Id, govv1.OptionYes, "")
	}
	reporter.Skip("every bonded validator voted on the carried proposal")
	return nil, nil
}
