// Package dps is the x/dps module: the DPS reward pool, the per-epoch emission
// E = share * total_GFL * R0 / 2^h with its halvings, and the split of E between
// availability (GFL) and verified work. README.md has the rules.
package dps

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	simtypes "github.com/cosmos/cosmos-sdk/types/simulation"

	"github.com/flopsnet/flops/internal/querypage"
	"github.com/flopsnet/flops/x/dps/simulation"

	gwruntime "github.com/grpc-ecosystem/grpc-gateway/runtime"

	"cosmossdk.io/core/appmodule"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/x/dps/keeper"
	"github.com/flopsnet/flops/x/dps/types"
)

// ConsensusVersion is bumped on every state-breaking change, with a migration.
const ConsensusVersion = 2

var (
	_ module.AppModuleBasic      = AppModule{}
	_ module.HasGenesis          = AppModule{}
	_ module.HasServices         = AppModule{}
	_ module.HasConsensusVersion = AppModule{}
	_ appmodule.AppModule        = AppModule{}
	_ appmodule.HasEndBlocker    = AppModule{}
)

// AppModule is the x/dps module.
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

// EndBlock advances the distribution in progress, bounded by max_payouts_per_block; it
// must run after x/gfl's EndBlock (whose rebalance it waits for) and after x/market's.
func (am AppModule) EndBlock(ctx context.Context) error {
	return am.keeper.EndBlocker(ctx)
}

// RegisterInvariants registers the reward pool and distribution invariants.
func (am AppModule) RegisterInvariants(reg invariant.Registrar) { am.keeper.RegisterInvariants(reg) }

var _ module.AppModuleSimulation = AppModule{}

// GenerateGenesisState writes random valid params (simulation).
func (AppModule) GenerateGenesisState(s *module.SimulationState) { simulation.RandomizedGenState(s) }

// RegisterStoreDecoder decodes the module's store for simulation diffs.
func (am AppModule) RegisterStoreDecoder(sdr simtypes.StoreDecoderRegistry) {
	sdr[types.StoreKey] = simtypes.NewStoreDecoderFuncFromCollectionsSchema(am.keeper.Schema)
}

// WeightedOperations is empty: the module has no user messages but its params.
func (AppModule) WeightedOperations(module.SimulationState) []simtypes.WeightedOperation { return nil }

// ProposalMsgsX registers governance's params changes.
func (AppModule) ProposalMsgsX(w simsx.WeightSource, reg simsx.Registry) {
	reg.Add(w.Get("msg_update_params", 30), simulation.MsgUpdateParamsFactory())
}
