package app

import (
	"context"
	"time"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	"github.com/cosmos/cosmos-sdk/x/auth"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/bank"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	"github.com/cosmos/cosmos-sdk/x/epochs"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/x/gfl"
	gflsim "github.com/flopsnet/flops/x/gfl/simulation"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
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
