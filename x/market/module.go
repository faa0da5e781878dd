// Package market is the x/market module: jobs and their escrow, the ASSIGN scheduler,
// auctions and pools, the task lifecycle (ack, heartbeat, checkpoint, commit, reveal),
// verification and settlement.
package market

import (
	"context"
	"encoding/json"
	"fmt"

	gwruntime "github.com/grpc-ecosystem/grpc-gateway/runtime"

	"cosmossdk.io/core/appmodule"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	simtypes "github.com/cosmos/cosmos-sdk/types/simulation"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/internal/querypage"
	gflsim "github.com/flopsnet/flops/x/gfl/simulation"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/simulation"
	"github.com/flopsnet/flops/x/market/types"
)

// ConsensusVersion is bumped on every state-breaking change, with a migration.
const ConsensusVersion = 15

var (
	_ module.AppModuleBasic      = AppModule{}
	_ module.HasGenesis          = AppModule{}
	_ module.HasServices         = AppModule{}
	_ module.HasConsensusVersion = AppModule{}
	_ appmodule.AppModule        = AppModule{}
	_ appmodule.HasEndBlocker    = AppModule{}
)

// AppModule is the x/market module.
type AppModule struct {
	cdc    codec.Codec
	keeper keeper.Keeper
}

// NewAppModule returns the module.
func NewAppModule(cdc codec.Codec, k keeper.Keeper) AppModule {
	return AppModule{cdc: cdc, keeper: k}
}

// IsAppModule implements appmodule.AppModule.
func (AppModule) IsAppModule() {}

// IsOnePerModuleType implements depinject.OnePerModuleType.
func (AppModule) IsOnePerModuleType() {}

// Name returns the module name.
func (AppModule) Name() string { return types.ModuleName }

// ConsensusVersion implements module.HasConsensusVersion.
func (AppModule) ConsensusVersion() uint64 { return ConsensusVersion }

// RegisterLegacyAminoCodec registers amino names for Ledger signing.
func (AppModule) RegisterLegacyAminoCodec(cdc *codec.LegacyAmino) {
	types.RegisterLegacyAminoCodec(cdc)
}

// RegisterInterfaces registers the module's Msgs.
func (AppModule) RegisterInterfaces(r codectypes.InterfaceRegistry) { types.RegisterInterfaces(r) }

// RegisterGRPCGatewayRoutes mounts the REST routes of the Query service.
func (AppModule) RegisterGRPCGatewayRoutes(clientCtx client.Context, mux *gwruntime.ServeMux) {
	if err := types.RegisterQueryHandlerClient(context.Background(), mux, types.NewQueryClient(clientCtx)); err != nil {
		panic(err)
	}
}

// RegisterServices registers the Msg and Query services.
func (am AppModule) RegisterServices(cfg module.Configurator) {
	types.RegisterMsgServer(cfg.MsgServer(), keeper.NewMsgServerImpl(am.keeper))
	// a list query without a page limit gets a page of 100, uncounted (internal/querypage)
	types.RegisterQueryServer(querypage.Registrar(cfg.QueryServer()), keeper.NewQueryServerImpl(am.keeper))
	m := keeper.NewMigrator(am.keeper)
	if err := cfg.RegisterMigration(types.ModuleName, 1, func(ctx sdk.Context) error { return m.Migrate1to2(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 1 to 2: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 2, func(ctx sdk.Context) error { return m.Migrate2to3(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 2 to 3: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 3, func(ctx sdk.Context) error { return m.Migrate3to4(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 3 to 4: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 4, func(ctx sdk.Context) error { return m.Migrate4to5(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 4 to 5: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 5, func(ctx sdk.Context) error { return m.Migrate5to6(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 5 to 6: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 6, func(ctx sdk.Context) error { return m.Migrate6to7(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 6 to 7: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 7, func(ctx sdk.Context) error { return m.Migrate7to8(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 7 to 8: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 8, func(ctx sdk.Context) error { return m.Migrate8to9(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 8 to 9: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 9, func(ctx sdk.Context) error { return m.Migrate9to10(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 9 to 10: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 10, func(ctx sdk.Context) error { return m.Migrate10to11(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 10 to 11: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 11, func(ctx sdk.Context) error { return m.Migrate11to12(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 11 to 12: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 12, func(ctx sdk.Context) error { return m.Migrate12to13(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 12 to 13: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 13, func(ctx sdk.Context) error { return m.Migrate13to14(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 13 to 14: %w", types.ModuleName, err))
	}
	if err := cfg.RegisterMigration(types.ModuleName, 14, func(ctx sdk.Context) error { return m.Migrate14to15(ctx) }); err != nil {
		panic(fmt.Errorf("%s: migration 14 to 15: %w", types.ModuleName, err))
	}
}

// DefaultGenesis returns the default genesis state as JSON.
func (am AppModule) DefaultGenesis(cdc codec.JSONCodec) json.RawMessage {
	return cdc.MustMarshalJSON(types.DefaultGenesisState())
}

// ValidateGenesis validates a genesis state given as JSON.
func (AppModule) ValidateGenesis(cdc codec.JSONCodec, _ client.TxEncodingConfig, bz json.RawMessage) error {
	var gs types.GenesisState
	if err := cdc.UnmarshalJSON(bz, &gs); err != nil {
		return fmt.Errorf("failed to unmarshal %s genesis state: %w", types.ModuleName, err)
	}
	return gs.Validate()
}

// InitGenesis stores the genesis state; a bad genesis stops the chain from starting.
func (am AppModule) InitGenesis(ctx sdk.Context, cdc codec.JSONCodec, bz json.RawMessage) {
	var gs types.GenesisState
	cdc.MustUnmarshalJSON(bz, &gs)
	if err := am.keeper.InitGenesis(ctx, &gs); err != nil {
		panic(fmt.Errorf("failed to init %s genesis: %w", types.ModuleName, err))
	}
}

// ExportGenesis exports the module state as JSON.
func (am AppModule) ExportGenesis(ctx sdk.Context, cdc codec.JSONCodec) json.RawMessage {
	gs, err := am.keeper.ExportGenesis(ctx)
	if err != nil {
		panic(fmt.Errorf("failed to export %s genesis: %w", types.ModuleName, err))
	}
	return cdc.MustMarshalJSON(gs)
}

// EndBlock runs the market's bounded block work: auctions, timeouts, settlement, expiry,
// pruning and the scheduler.
func (am AppModule) EndBlock(ctx context.Context) error {
	return am.keeper.EndBlocker(ctx)
}

// RegisterInvariants registers the escrow and slots invariants.
func (am AppModule) RegisterInvariants(reg invariant.Registrar) { am.keeper.RegisterInvariants(reg) }

var _ module.AppModuleSimulation = AppModule{}

// GenerateGenesisState writes the simulation's genesis.
func (AppModule) GenerateGenesisState(s *module.SimulationState) { simulation.RandomizedGenState(s) }

// RegisterStoreDecoder decodes the module's store for simulation diffs.
func (am AppModule) RegisterStoreDecoder(sdr simtypes.StoreDecoderRegistry) {
	sdr[types.StoreKey] = simtypes.NewStoreDecoderFuncFromCollectionsSchema(am.keeper.Schema)
}

// WeightedOperations is empty: the module's operations are WeightedOperationsX's.
func (AppModule) WeightedOperations(module.SimulationState) []simtypes.WeightedOperation { return nil }

// WeightedOperationsX registers the clients' and providers' operations.
func (am AppModule) WeightedOperationsX(w simsx.WeightSource, reg simsx.Registry) {
	answers := gflsim.NewAnswers() // the providers' GEMMs (BUILTIN_GEMM tasks and units)
	reg.Add(w.Get("msg_submit_job", 180), simulation.MsgSubmitJobFactory(am.keeper))
	reg.Add(w.Get("msg_cancel_job", 15), simulation.MsgCancelJobFactory(am.keeper))
	reg.Add(w.Get("msg_ack_task", 180), simulation.MsgAckTaskFactory(am.keeper))
	reg.Add(w.Get("msg_heartbeat", 90), simulation.MsgHeartbeatFactory(am.keeper))
	reg.Add(w.Get("msg_commit_result", 180), simulation.MsgCommitResultFactory(am.keeper, answers))
	reg.Add(w.Get("msg_reveal_result", 180), simulation.MsgRevealResultFactory(am.keeper, answers))
	reg.Add(w.Get("msg_place_bid", 120), simulation.MsgPlaceBidFactory(am.keeper))
	reg.Add(w.Get("msg_withdraw_bid", 15), simulation.MsgWithdrawBidFactory(am.keeper))
	reg.Add(w.Get("msg_checkpoint", 30), simulation.MsgCheckpointFactory(am.keeper))
	reg.Add(w.Get("msg_report_failure", 15), simulation.MsgReportFailureFactory(am.keeper))
	reg.Add(w.Get("msg_release_task", 5), simulation.MsgReleaseTaskFactory(am.keeper))
	reg.Add(w.Get("msg_challenge", 90), simulation.MsgChallengeFactory(am.keeper))
	reg.Add(w.Get("msg_create_pool", 30), simulation.MsgCreatePoolFactory(am.keeper))
	reg.Add(w.Get("msg_join_pool", 60), simulation.MsgJoinPoolFactory(am.keeper))
	reg.Add(w.Get("msg_leave_pool", 9), simulation.MsgLeavePoolFactory(am.keeper))
	reg.Add(w.Get("msg_submit_units", 60), simulation.MsgSubmitUnitsFactory(am.keeper))
	reg.Add(w.Get("msg_commit_unit", 120), simulation.MsgCommitUnitFactory(am.keeper, answers))
	reg.Add(w.Get("msg_reveal_unit", 120), simulation.MsgRevealUnitFactory(am.keeper, answers))
	reg.Add(w.Get("msg_withdraw_pool_earnings", 30), simulation.MsgWithdrawPoolEarningsFactory(am.keeper))
	reg.Add(w.Get("msg_close_pool", 9), simulation.MsgClosePoolFactory(am.keeper))
	// the adversaries: id gaps, specs at and over the bounds, mass expiries
	reg.Add(w.Get("msg_ack_unknown_task", 10), simulation.MsgAckUnknownTaskFactory(am.keeper))
	reg.Add(w.Get("msg_submit_maximal_job", 5), simulation.MsgSubmitMaximalJobFactory(am.keeper))
}

// ProposalMsgsX registers governance's params changes.
func (am AppModule) ProposalMsgsX(w simsx.WeightSource, reg simsx.Registry) {
	reg.Add(w.Get("msg_update_params", 30), simulation.MsgUpdateParamsFactory(am.keeper))
}
