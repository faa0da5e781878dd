// Package app wires the flops application by hand (no depinject): the SDK modules, IBC
// core and transfer, and flops' five modules, with their keepers, module accounts, block
// hook order, ante handler and upgrade handlers.
package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/cosmos/gogoproto/proto"
	"github.com/spf13/cast"

	reflectionv1 "cosmossdk.io/api/cosmos/reflection/v1"
	"cosmossdk.io/client/v2/autocli"
	"cosmossdk.io/core/appmodule"
	corestore "cosmossdk.io/core/store"
	"cosmossdk.io/log/v2"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	nodeservice "github.com/cosmos/cosmos-sdk/client/grpc/node"
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/runtime"
	runtimeservices "github.com/cosmos/cosmos-sdk/runtime/services"
	"github.com/cosmos/cosmos-sdk/server"
	"github.com/cosmos/cosmos-sdk/server/api"
	"github.com/cosmos/cosmos-sdk/server/config"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	"github.com/cosmos/cosmos-sdk/store/v2/rootmulti"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	"github.com/cosmos/cosmos-sdk/types/msgservice"
	"github.com/cosmos/cosmos-sdk/version"
	"github.com/cosmos/cosmos-sdk/x/auth"
	"github.com/cosmos/cosmos-sdk/x/auth/ante"
	authcodec "github.com/cosmos/cosmos-sdk/x/auth/codec"
	authkeeper "github.com/cosmos/cosmos-sdk/x/auth/keeper"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
	authzmodule "github.com/cosmos/cosmos-sdk/x/authz/module"
	"github.com/cosmos/cosmos-sdk/x/bank"
	bankkeeper "github.com/cosmos/cosmos-sdk/x/bank/keeper"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	"github.com/cosmos/cosmos-sdk/x/consensus"
	consensuskeeper "github.com/cosmos/cosmos-sdk/x/consensus/keeper"
	consensustypes "github.com/cosmos/cosmos-sdk/x/consensus/types"
	distr "github.com/cosmos/cosmos-sdk/x/distribution"
	distrkeeper "github.com/cosmos/cosmos-sdk/x/distribution/keeper"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	"github.com/cosmos/cosmos-sdk/x/epochs"
	epochskeeper "github.com/cosmos/cosmos-sdk/x/epochs/keeper"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"
	"github.com/cosmos/cosmos-sdk/x/feegrant"
	feegrantkeeper "github.com/cosmos/cosmos-sdk/x/feegrant/keeper"
	feegrantmodule "github.com/cosmos/cosmos-sdk/x/feegrant/module"
	"github.com/cosmos/cosmos-sdk/x/genutil"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"
	"github.com/cosmos/cosmos-sdk/x/gov"
	govclient "github.com/cosmos/cosmos-sdk/x/gov/client"
	govkeeper "github.com/cosmos/cosmos-sdk/x/gov/keeper"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1beta1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1beta1"
	"github.com/cosmos/cosmos-sdk/x/slashing"
	slashingkeeper "github.com/cosmos/cosmos-sdk/x/slashing/keeper"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
	"github.com/cosmos/cosmos-sdk/x/upgrade"
	upgradekeeper "github.com/cosmos/cosmos-sdk/x/upgrade/keeper"
	upgradetypes "github.com/cosmos/cosmos-sdk/x/upgrade/types"

	"github.com/cosmos/ibc-go/v11/modules/apps/transfer"
	ibctransferkeeper "github.com/cosmos/ibc-go/v11/modules/apps/transfer/keeper"
	ibctransfertypes "github.com/cosmos/ibc-go/v11/modules/apps/transfer/types"
	transferv2 "github.com/cosmos/ibc-go/v11/modules/apps/transfer/v2"
	ibc "github.com/cosmos/ibc-go/v11/modules/core"
	porttypes "github.com/cosmos/ibc-go/v11/modules/core/05-port/types"
	ibcapi "github.com/cosmos/ibc-go/v11/modules/core/api"
	ibcexported "github.com/cosmos/ibc-go/v11/modules/core/exported"
	ibckeeper "github.com/cosmos/ibc-go/v11/modules/core/keeper"
	ibctm "github.com/cosmos/ibc-go/v11/modules/light-clients/07-tendermint"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/internal/invariant"
	"github.com/flopsnet/flops/internal/nodemetrics"
	"github.com/flopsnet/flops/internal/querystore"
	"github.com/flopsnet/flops/x/dps"
	dpskeeper "github.com/flopsnet/flops/x/dps/keeper"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	"github.com/flopsnet/flops/x/gfl"
	gflkeeper "github.com/flopsnet/flops/x/gfl/keeper"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	"github.com/flopsnet/flops/x/reputation"
	reputationkeeper "github.com/flopsnet/flops/x/reputation/keeper"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	stakingslash "github.com/flopsnet/flops/x/staking-slash"
	stakingslashkeeper "github.com/flopsnet/flops/x/staking-slash/keeper"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// maccPerms are the module accounts and what each may do with coins.
var maccPerms = map[string][]string{
	authtypes.FeeCollectorName:     nil,
	distrtypes.ModuleName:          nil,
	stakingtypes.BondedPoolName:    {authtypes.Burner, authtypes.Staking},
	stakingtypes.NotBondedPoolName: {authtypes.Burner, authtypes.Staking},
	govtypes.ModuleName:            {authtypes.Burner},
	ibctransfertypes.ModuleName:    {authtypes.Minter, authtypes.Burner},
	// the GFL index: minted and burned at each rebalance
	gfltypes.ModuleName: {authtypes.Minter, authtypes.Burner},
	// the DPS reward pool: funded at genesis, refilled by the market take, paid out per epoch
	dpstypes.ModuleName: nil,
	// job escrow, bid deposits and challenge bonds
	markettypes.ModuleName: nil,
	// holds nothing today; owned so that reputation bonds need no new account later
	reputationtypes.ModuleName: nil,
	// provider collateral, bonded and unbonding; slashed collateral is burned from here
	stakingslashtypes.ModuleName: {authtypes.Burner},
}

var _ servertypes.Application = (*App)(nil)

// App is the flops application.
type App struct {
	*baseapp.BaseApp

	// metrics counts what blocks do and reads the state for Prometheus (it never writes)
	metrics *nodemetrics.Metrics

	legacyAmino       *codec.LegacyAmino
	appCodec          codec.Codec
	txConfig          client.TxConfig
	interfaceRegistry types.InterfaceRegistry

	keys map[string]*storetypes.KVStoreKey

	// SDK keepers
	AccountKeeper         authkeeper.AccountKeeper
	BankKeeper            bankkeeper.BaseKeeper
	StakingKeeper         *stakingkeeper.Keeper
	SlashingKeeper        slashingkeeper.Keeper
	DistrKeeper           distrkeeper.Keeper
	GovKeeper             govkeeper.Keeper
	UpgradeKeeper         *upgradekeeper.Keeper
	AuthzKeeper           authzkeeper.Keeper
	FeeGrantKeeper        feegrantkeeper.Keeper
	ConsensusParamsKeeper consensuskeeper.Keeper
	EpochsKeeper          epochskeeper.Keeper

	// IBC keepers
	IBCKeeper      *ibckeeper.Keeper
	TransferKeeper *ibctransferkeeper.Keeper

	// flops keepers
	GFLKeeper          gflkeeper.Keeper
	DPSKeeper          dpskeeper.Keeper
	MarketKeeper       marketkeeper.Keeper
	ReputationKeeper   reputationkeeper.Keeper
	StakingSlashKeeper stakingslashkeeper.Keeper

	ModuleManager      *module.Manager
	BasicModuleManager module.BasicManager
	configurator       module.Configurator
	sm                 *module.SimulationManager

	// Invariants are flops' accounting invariants; asserted every invCheckPeriod blocks
	// when that is set (flopsd start --inv-check-period).
	Invariants     *invariant.Set
	invCheckPeriod uint
	// proposer is the validator key this node proposes with (proposer.go), or nil.
	proposer *proposerKey
}

// New returns a fully wired flops app.
func New(
	logger log.Logger,
	db dbm.DB,
	loadLatest bool,
	appOpts servertypes.AppOptions,
	baseAppOptions ...func(*baseapp.BaseApp),
) *App {
	// The codecs every module registers into, built where the worker and the CLI build
	// theirs (app/encoding), so that a client never disagrees with the chain.
	enc := encoding.MustMake()
	interfaceRegistry, appCodec, legacyAmino, txConfig := enc.InterfaceRegistry, enc.Codec, enc.Amino, enc.TxConfig

	bApp := baseapp.NewBaseApp(Name, logger, db, txConfig.TxDecoder(), baseAppOptions...)
	bApp.SetVersion(version.Version)
	bApp.SetInterfaceRegistry(interfaceRegistry)
	bApp.SetTxEncoder(txConfig.TxEncoder())

	keys := storetypes.NewKVStoreKeys(
		authtypes.StoreKey, banktypes.StoreKey, stakingtypes.StoreKey, distrtypes.StoreKey,
		slashingtypes.StoreKey, govtypes.StoreKey, consensustypes.StoreKey, upgradetypes.StoreKey,
		epochstypes.StoreKey, authzkeeper.StoreKey, feegrant.StoreKey,
		ibcexported.StoreKey, ibctransfertypes.StoreKey,
		gfltypes.StoreKey, dpstypes.StoreKey, markettypes.StoreKey, reputationtypes.StoreKey, stakingslashtypes.StoreKey,
	)
	// not committed: emptied at each commit
	tkeys := storetypes.NewTransientStoreKeys(markettypes.TransientStoreKey)
	if err := bApp.RegisterStreamingServices(appOpts, keys); err != nil {
		panic(err)
	}
	// queries of the latest state (every gRPC call, a broadcast included) reuse the
	// stores opened at it (internal/querystore)
	if rms, ok := bApp.CommitMultiStore().(*rootmulti.Store); ok {
		bApp.SetQueryMultiStore(querystore.New(rms, db))
	}

	app := &App{
		BaseApp:           bApp,
		legacyAmino:       legacyAmino,
		appCodec:          appCodec,
		txConfig:          txConfig,
		interfaceRegistry: interfaceRegistry,
		keys:              keys,
		Invariants:        &invariant.Set{},
		invCheckPeriod:    cast.ToUint(appOpts.Get(server.FlagInvCheckPeriod)),
	}

	govAuthority := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	accCodec := authcodec.NewBech32Codec(sdk.GetConfig().GetBech32AccountAddrPrefix())
	valCodec := authcodec.NewBech32Codec(sdk.GetConfig().GetBech32ValidatorAddrPrefix())
	consCodec := authcodec.NewBech32Codec(sdk.GetConfig().GetBech32ConsensusAddrPrefix())
	store := func(key string) corestore.KVStoreService { return runtime.NewKVStoreService(keys[key]) }

	app.ConsensusParamsKeeper = consensuskeeper.NewKeeper(appCodec, store(consensustypes.StoreKey), govAuthority, runtime.EventService{})
	bApp.SetParamStore(app.ConsensusParamsKeeper.ParamsStore)

	app.AccountKeeper = authkeeper.NewAccountKeeper(appCodec, store(authtypes.StoreKey), authtypes.ProtoBaseAccount,
		maccPerms, accCodec, sdk.GetConfig().GetBech32AccountAddrPrefix(), govAuthority)
	app.BankKeeper = bankkeeper.NewBaseKeeper(appCodec, store(banktypes.StoreKey), app.AccountKeeper,
		BlockedAddresses(), govAuthority, logger)
	// ugfl stays with its operator on every x/bank path (fees, community pool, IBC, ...).
	app.BankKeeper.AppendSendRestriction(gfltypes.SendRestriction)
	app.StakingKeeper = stakingkeeper.NewKeeper(appCodec, store(stakingtypes.StoreKey), app.AccountKeeper,
		app.BankKeeper, govAuthority, valCodec, consCodec)
	app.DistrKeeper = distrkeeper.NewKeeper(appCodec, store(distrtypes.StoreKey), app.AccountKeeper,
		app.BankKeeper, app.StakingKeeper, authtypes.FeeCollectorName, govAuthority)
	app.SlashingKeeper = slashingkeeper.NewKeeper(appCodec, legacyAmino, store(slashingtypes.StoreKey),
		app.StakingKeeper, govAuthority)
	app.StakingKeeper.SetHooks(stakingtypes.NewMultiStakingHooks(app.DistrKeeper.Hooks(), app.SlashingKeeper.Hooks()))

	app.AuthzKeeper = authzkeeper.NewKeeper(store(authzkeeper.StoreKey), appCodec, app.MsgServiceRouter(), app.AccountKeeper)
	app.FeeGrantKeeper = feegrantkeeper.NewKeeper(appCodec, store(feegrant.StoreKey), app.AccountKeeper)

	skipUpgradeHeights := map[int64]bool{}
	for _, h := range cast.ToIntSlice(appOpts.Get(server.FlagUnsafeSkipUpgrades)) {
		skipUpgradeHeights[int64(h)] = true
	}
	homePath := cast.ToString(appOpts.Get(flags.FlagHome))
	app.UpgradeKeeper = upgradekeeper.NewKeeper(skipUpgradeHeights, store(upgradetypes.StoreKey), appCodec, homePath, app.BaseApp, govAuthority)

	govConfig := govtypes.DefaultConfig()
	govKeeper := govkeeper.NewKeeper(appCodec, store(govtypes.StoreKey), app.AccountKeeper, app.BankKeeper,
		app.DistrKeeper, app.MsgServiceRouter(), govConfig, govAuthority,
		govkeeper.NewDefaultCalculateVoteResultsAndVotingPower(app.StakingKeeper))
	// v1beta1 content proposals: text only (flops registers no legacy content handler);
	// without a router, a proposal carrying MsgExecLegacyContent panics in its handler
	// (found by the simulation: TestGovLegacyTextProposal)
	govKeeper.SetLegacyRouter(govv1beta1.NewRouter().AddRoute(govtypes.RouterKey, govv1beta1.ProposalHandler))
	app.GovKeeper = *govKeeper.SetHooks(govtypes.NewMultiGovHooks())

	app.EpochsKeeper = epochskeeper.NewKeeper(store(epochstypes.StoreKey), appCodec)

	// IBC core with the 07-tendermint light client, and ICS-20 transfer (v1 and v2) so DPS
	// can travel to other chains. ugfl cannot: its bank sends are disabled and transfer
	// checks the same flag.
	app.IBCKeeper = ibckeeper.NewKeeper(appCodec, store(ibcexported.StoreKey), app.UpgradeKeeper, govAuthority)
	app.TransferKeeper = ibctransferkeeper.NewKeeper(appCodec, app.AccountKeeper.AddressCodec(), store(ibctransfertypes.StoreKey),
		app.IBCKeeper.ChannelKeeper, app.MsgServiceRouter(), app.AccountKeeper, app.BankKeeper, govAuthority)
	ibcRouter := porttypes.NewRouter()
	ibcRouter.AddRoute(ibctransfertypes.ModuleName, transfer.NewIBCModule(app.TransferKeeper))
	ibcRouterV2 := ibcapi.NewRouter()
	ibcRouterV2.AddRoute(ibctransfertypes.PortID, transferv2.NewIBCModule(app.TransferKeeper))
	app.IBCKeeper.SetRouter(ibcRouter)
	app.IBCKeeper.SetRouterV2(ibcRouterV2)
	tmLightClient := ibctm.NewLightClientModule(appCodec, app.IBCKeeper.ClientKeeper.GetStoreProvider())
	app.IBCKeeper.ClientKeeper.AddRoute(ibctm.ModuleName, &tmLightClient)

	// flops modules
	// flops' modules decode addresses without the SDK codec's global-config lookup
	flopsAddr := chain.NewAddressCodec(sdk.GetConfig().GetBech32AccountAddrPrefix())
	app.StakingSlashKeeper = stakingslashkeeper.NewKeeper(appCodec, store(stakingslashtypes.StoreKey), flopsAddr, govAuthority, app.AccountKeeper, app.BankKeeper)
	app.GFLKeeper = gflkeeper.NewKeeper(appCodec, store(gfltypes.StoreKey), flopsAddr, govAuthority, app.AccountKeeper, app.BankKeeper, app.StakingSlashKeeper, app.StakingKeeper, epochsView{&app.EpochsKeeper})
	app.ReputationKeeper = reputationkeeper.NewKeeper(appCodec, store(reputationtypes.StoreKey), flopsAddr, govAuthority, app.AccountKeeper, app.GFLKeeper, epochsView{&app.EpochsKeeper})
	app.MarketKeeper = marketkeeper.NewKeeper(appCodec, store(markettypes.StoreKey), runtime.NewTransientStoreService(tkeys[markettypes.TransientStoreKey]),
		flopsAddr, govAuthority, app.AccountKeeper,
		app.BankKeeper, app.GFLKeeper, app.StakingSlashKeeper, authtypes.FeeCollectorName, dpstypes.ModuleName)
	app.DPSKeeper = dpskeeper.NewKeeper(appCodec, store(dpstypes.StoreKey), flopsAddr, govAuthority, app.AccountKeeper, app.BankKeeper,
		app.GFLKeeper, app.ReputationKeeper, app.MarketKeeper, epochsView{&app.EpochsKeeper})

	// the modules' views of each other, and the hooks that feed reputation and rewards:
	// x/market reports providers' behaviour to x/reputation and verified work to x/dps
	app.MarketKeeper.SetReputation(app.ReputationKeeper)
	app.MarketKeeper.SetWorkRules(app.DPSKeeper)
	app.MarketKeeper.SetHooks(markettypes.MultiMarketHooks{app.ReputationKeeper.MarketHooks(), app.DPSKeeper.MarketHooks()})
	app.GFLKeeper.SetHooks(gfltypes.MultiGFLHooks{app.MarketKeeper.GFLHooks(), app.ReputationKeeper.GFLHooks()})
	app.StakingSlashKeeper.SetHooks(app.ReputationKeeper.StakingSlashHooks())
	// epoch ends: x/gfl rebalances first, then scores, then x/dps queues the emission
	// (which waits for the rebalance to finish)
	app.EpochsKeeper.SetHooks(epochstypes.NewMultiEpochHooks(
		app.GFLKeeper.EpochHooks(), app.ReputationKeeper.EpochHooks(), app.DPSKeeper.EpochHooks()))

	app.ModuleManager = module.NewManager(
		genutil.NewAppModule(app.AccountKeeper, app.StakingKeeper, app, txConfig),
		auth.NewAppModule(appCodec, app.AccountKeeper, nil, nil),
		bank.NewAppModule(appCodec, app.BankKeeper, app.AccountKeeper, nil),
		staking.NewAppModule(appCodec, app.StakingKeeper, app.AccountKeeper, app.BankKeeper, nil),
		distr.NewAppModule(appCodec, app.DistrKeeper, app.AccountKeeper, app.BankKeeper, app.StakingKeeper, nil),
		slashing.NewAppModule(appCodec, app.SlashingKeeper, app.AccountKeeper, app.BankKeeper, app.StakingKeeper, nil, interfaceRegistry),
		gov.NewAppModule(appCodec, &app.GovKeeper, app.AccountKeeper, app.BankKeeper, nil),
		consensus.NewAppModule(appCodec, app.ConsensusParamsKeeper),
		upgrade.NewAppModule(app.UpgradeKeeper, app.AccountKeeper.AddressCodec()),
		epochs.NewAppModule(&app.EpochsKeeper),
		authzmodule.NewAppModule(appCodec, app.AuthzKeeper, app.AccountKeeper, app.BankKeeper, interfaceRegistry),
		feegrantmodule.NewAppModule(appCodec, app.AccountKeeper, app.BankKeeper, app.FeeGrantKeeper, interfaceRegistry),
		ibc.NewAppModule(app.IBCKeeper),
		transfer.NewAppModule(app.TransferKeeper),
		ibctm.NewAppModule(tmLightClient),

		stakingslash.NewAppModule(appCodec, app.StakingSlashKeeper),
		gfl.NewAppModule(appCodec, app.GFLKeeper),
		reputation.NewAppModule(appCodec, app.ReputationKeeper),
		market.NewAppModule(appCodec, app.MarketKeeper),
		dps.NewAppModule(appCodec, app.DPSKeeper),
	)

	app.BasicModuleManager = module.NewBasicManagerFromManager(app.ModuleManager, map[string]module.AppModuleBasic{
		genutiltypes.ModuleName: genutil.NewAppModuleBasic(genutiltypes.DefaultMessageValidator),
		govtypes.ModuleName:     gov.NewAppModuleBasic([]govclient.ProposalHandler{}),
		banktypes.ModuleName:    bankBasic{app.ModuleManager.Modules[banktypes.ModuleName].(bank.AppModule)},
		epochstypes.ModuleName:  epochsBasic{app.ModuleManager.Modules[epochstypes.ModuleName].(epochs.AppModule)},
	})
	// (interfaces and amino names are registered by app/encoding; encoding_test.go checks
	// that they are exactly what the module manager registers)

	app.ModuleManager.SetOrderPreBlockers(upgradetypes.ModuleName, authtypes.ModuleName)
	app.ModuleManager.SetOrderBeginBlockers(
		distrtypes.ModuleName, slashingtypes.ModuleName, stakingtypes.ModuleName,
		// epoch ends run their hooks (GFL rebalance, reputation, emission) here
		epochstypes.ModuleName,
		// records the block hash for the beacon
		gfltypes.ModuleName,
		ibcexported.ModuleName, ibctransfertypes.ModuleName, genutiltypes.ModuleName, authz.ModuleName,
	)
	app.ModuleManager.SetOrderEndBlockers(
		banktypes.ModuleName, // v0.54: bank first
		govtypes.ModuleName, stakingtypes.ModuleName,
		ibcexported.ModuleName, ibctransfertypes.ModuleName, genutiltypes.ModuleName, feegrant.ModuleName,
		// flops: collateral matures before nodes are challenged, nodes before jobs are
		// scheduled, settlement before scores and rewards
		stakingslashtypes.ModuleName, gfltypes.ModuleName, markettypes.ModuleName,
		reputationtypes.ModuleName, dpstypes.ModuleName,
	)
	genesisOrder := []string{
		authtypes.ModuleName, banktypes.ModuleName, distrtypes.ModuleName, stakingtypes.ModuleName,
		slashingtypes.ModuleName, govtypes.ModuleName, genutiltypes.ModuleName, epochstypes.ModuleName,
		authz.ModuleName, feegrant.ModuleName, ibcexported.ModuleName, ibctransfertypes.ModuleName,
		upgradetypes.ModuleName, consensustypes.ModuleName,
		stakingslashtypes.ModuleName, gfltypes.ModuleName, reputationtypes.ModuleName,
		markettypes.ModuleName, dpstypes.ModuleName,
	}
	app.ModuleManager.SetOrderInitGenesis(genesisOrder...)
	app.ModuleManager.SetOrderExportGenesis(genesisOrder...)

	app.configurator = module.NewConfigurator(appCodec, app.MsgServiceRouter(), app.GRPCQueryRouter())
	if err := app.ModuleManager.RegisterServices(app.configurator); err != nil {
		panic(err)
	}
	reflectionSvc, err := runtimeservices.NewReflectionService()
	if err != nil {
		panic(err)
	}
	reflectionv1.RegisterReflectionServiceServer(app.GRPCQueryRouter(), reflectionSvc)

	app.sm = app.newSimulationManager()

	app.registerInvariants()
	app.registerCrossInvariants()
	if app.invCheckPeriod > 0 {
		logger.Info("asserting the invariants", "every_blocks", app.invCheckPeriod, "count", len(app.Invariants.Routes()))
	}
	app.setUpgradeHandlers()

	app.MountKVStores(keys)
	app.MountTransientStores(tkeys)

	app.SetInitChainer(app.InitChainer)
	app.SetPreBlocker(app.PreBlocker)
	app.SetBeginBlocker(app.BeginBlocker)
	app.SetEndBlocker(app.EndBlocker)

	anteHandler, err := NewAnteHandler(HandlerOptions{
		HandlerOptions: ante.HandlerOptions{
			AccountKeeper:   app.AccountKeeper,
			BankKeeper:      app.BankKeeper,
			FeegrantKeeper:  app.FeeGrantKeeper,
			SignModeHandler: txConfig.SignModeHandler(),
			SigGasConsumer:  ante.DefaultSigVerificationGasConsumer,
		},
		IBCKeeper: app.IBCKeeper,
	})
	if err != nil {
		panic(err)
	}
	app.SetAnteHandler(proposerTxAnte(anteHandler))
	app.proposer = loadProposerKey(appOpts, logger)
	proposals := baseapp.NewDefaultProposalHandler(bApp.Mempool(), bApp)
	app.SetPrepareProposal(app.prepareProposal(proposals.PrepareProposalHandler()))
	app.SetProcessProposal(app.processProposal(proposals.ProcessProposalHandler()))
	app.SetPostHandler(NewPostHandler(app.DPSKeeper))
	app.metrics = nodemetrics.New(app.metricsSnapshot)

	// Every Msg must carry its signer annotation; a missing one is a wiring bug.
	protoFiles, err := proto.MergedRegistry()
	if err != nil {
		panic(err)
	}
	if err := msgservice.ValidateProtoAnnotations(protoFiles); err != nil {
		panic(fmt.Errorf("proto annotations: %w", err))
	}

	if loadLatest {
		if err := app.LoadLatestVersion(); err != nil {
			panic(fmt.Errorf("error loading last version: %w", err))
		}
	}
	return app
}

// Name returns the app's name.
func (app *App) Name() string { return app.BaseApp.Name() }

// PreBlocker runs the pre-block hooks (upgrades first).
func (app *App) PreBlocker(ctx sdk.Context, _ *abci.RequestFinalizeBlock) (*sdk.ResponsePreBlock, error) {
	return app.ModuleManager.PreBlock(ctx)
}

// BeginBlocker runs the modules' begin-block hooks.
func (app *App) BeginBlocker(ctx sdk.Context) (sdk.BeginBlock, error) {
	return app.ModuleManager.BeginBlock(ctx)
}

// EndBlocker runs the modules' end-block hooks, then, every invCheckPeriod blocks, asserts
// the accounting invariants; a broken invariant halts the chain, as x/crisis did.
func (app *App) EndBlocker(ctx sdk.Context) (sdk.EndBlock, error) {
	res, err := app.ModuleManager.EndBlock(ctx)
	if err != nil {
		return res, err
	}
	if app.invCheckPeriod > 0 && ctx.BlockHeight()%int64(app.invCheckPeriod) == 0 {
		if err := app.Invariants.AssertAll(ctx); err != nil {
			panic(err)
		}
	}
	return res, nil
}

// InitChainer initialises every module from the genesis state.
func (app *App) InitChainer(ctx sdk.Context, req *abci.RequestInitChain) (*abci.ResponseInitChain, error) {
	var genesisState GenesisState
	if err := json.Unmarshal(req.AppStateBytes, &genesisState); err != nil {
		return nil, err
	}
	if err := app.UpgradeKeeper.SetModuleVersionMap(ctx, app.ModuleManager.GetVersionMap()); err != nil {
		return nil, err
	}
	if err := CheckGenesisAcrossModules(app.appCodec, genesisState); err != nil {
		return nil, fmt.Errorf("genesis: %w", err)
	}
	return app.ModuleManager.InitGenesis(ctx, app.appCodec, genesisState)
}

// CheckGenesisAcrossModules checks the rules between modules' genesis params that each
// module's own ValidateGenesis cannot see (a section left out counts as the module's
// default). `flopsd genesis validate` runs it, and InitChain refuses a genesis that fails
// it:
//   - one money: x/market's denom (escrow, prices, deposits) and x/staking-slash's
//     collateral_denom are the chain's bond denom, the one node asks are quoted in,
//     x/dps's reward pool counts and its funding links watch. A market in another denom
//     would compare exposure with collateral across denoms, quote against asks it cannot
//     compare with, and send its take to a pool that never counts it;
//   - wash work loses: x/dps's work reward cap below x/market's take
//     (markettypes.WashLoopLoses);
//   - every epoch a module follows (x/gfl's rebalance, x/reputation's scoring, x/dps's
//     distribution) is one x/epochs runs: none can be added later, so the module's epoch
//     work would never run (epochref).
func CheckGenesisAcrossModules(cdc codec.JSONCodec, gs GenesisState) error {
	market, dps, collateral := markettypes.DefaultGenesisState(), dpstypes.DefaultGenesisState(), stakingslashtypes.DefaultGenesisState()
	gfl, reputation := gfltypes.DefaultGenesisState(), reputationtypes.DefaultGenesisState()
	epochs := &epochstypes.GenesisState{}
	if _, ok := gs[epochstypes.ModuleName]; !ok {
		gs = maps.Clone(gs)
		gs[epochstypes.ModuleName] = epochsBasic{}.DefaultGenesis(cdc)
	}
	for _, m := range []struct {
		name string
		v    proto.Message
	}{
		{markettypes.ModuleName, market}, {dpstypes.ModuleName, dps}, {stakingslashtypes.ModuleName, collateral},
		{gfltypes.ModuleName, gfl}, {reputationtypes.ModuleName, reputation}, {epochstypes.ModuleName, epochs},
	} {
		if bz, ok := gs[m.name]; ok {
			if err := cdc.UnmarshalJSON(bz, m.v); err != nil {
				return fmt.Errorf("%s genesis: %w", m.name, err)
			}
		}
	}
	runs := make([]string, len(epochs.Epochs))
	for i, e := range epochs.Epochs {
		runs[i] = e.Identifier
	}
	for _, f := range []struct{ module, epoch string }{
		{gfltypes.ModuleName, gfl.Params.EpochIdentifier}, {reputationtypes.ModuleName, reputation.Params.EpochIdentifier},
		{dpstypes.ModuleName, dps.Params.EpochIdentifier},
	} {
		if !slices.Contains(runs, f.epoch) {
			return fmt.Errorf("x/%s's epoch_identifier %q is not an epoch x/epochs runs (%s), and no message adds one: its epoch work would never run",
				f.module, f.epoch, strings.Join(runs, ", "))
		}
	}
	if market.Params.Denom != BondDenom || collateral.Params.CollateralDenom != BondDenom {
		return fmt.Errorf("x/market's denom %q and x/staking-slash's collateral_denom %q must both be the chain's bond denom %q: "+
			"node asks are quoted in it, exposure is weighed against collateral, and x/market's take refills x/dps's reward pool in it",
			market.Params.Denom, collateral.Params.CollateralDenom, BondDenom)
	}
	return markettypes.WashLoopLoses(market.Params.TakeRatePpm, dps.Params.WorkRewardCapPpm)
}

// epochsView is x/epochs' epochs for the modules that follow one (epochref.Epochs).
type epochsView struct{ k *epochskeeper.Keeper }

// HasEpoch implements epochref.Epochs.
func (e epochsView) HasEpoch(ctx context.Context, identifier string) (bool, error) {
	return e.k.EpochInfo.Has(ctx, identifier)
}

// LoadHeight loads the state at a height.
func (app *App) LoadHeight(height int64) error { return app.LoadVersion(height) }

// LegacyAmino returns the amino codec.
func (app *App) LegacyAmino() *codec.LegacyAmino { return app.legacyAmino }

// AppCodec returns the proto codec.
func (app *App) AppCodec() codec.Codec { return app.appCodec }

// InterfaceRegistry returns the interface registry.
func (app *App) InterfaceRegistry() types.InterfaceRegistry { return app.interfaceRegistry }

// TxConfig returns the tx config.
func (app *App) TxConfig() client.TxConfig { return app.txConfig }

// Configurator returns the module configurator: the modules' services and store migrations.
func (app *App) Configurator() module.Configurator { return app.configurator }

// GetKey returns a store key, for tests.
func (app *App) GetKey(name string) *storetypes.KVStoreKey { return app.keys[name] }

// StoreNames lists the app's KV stores by name, sorted, for tests.
func (app *App) StoreNames() []string {
	names := make([]string, 0, len(app.keys))
	for n := range app.keys {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultGenesis returns flops' default genesis (see genesis.go for its chain-wide
// choices).
func (app *App) DefaultGenesis() GenesisState {
	return app.BasicModuleManager.DefaultGenesis(app.appCodec)
}

// AutoCliOpts returns the autocli options of every module, for flopsd's root command.
func (app *App) AutoCliOpts() autocli.AppOptions {
	modules := make(map[string]appmodule.AppModule)
	for name, m := range app.ModuleManager.Modules {
		if am, ok := m.(appmodule.AppModule); ok {
			modules[name] = am
		}
	}
	return autocli.AppOptions{
		Modules:               modules,
		ModuleOptions:         runtimeservices.ExtractAutoCLIOptions(app.ModuleManager.Modules),
		AddressCodec:          authcodec.NewBech32Codec(sdk.GetConfig().GetBech32AccountAddrPrefix()),
		ValidatorAddressCodec: authcodec.NewBech32Codec(sdk.GetConfig().GetBech32ValidatorAddrPrefix()),
		ConsensusAddressCodec: authcodec.NewBech32Codec(sdk.GetConfig().GetBech32ConsensusAddrPrefix()),
	}
}

// RegisterAPIRoutes mounts the REST (grpc-gateway) routes of every module.
func (app *App) RegisterAPIRoutes(apiSvr *api.Server, apiConfig config.APIConfig) {
	clientCtx := apiSvr.ClientCtx
	authtx.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	cmtservice.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	nodeservice.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	app.BasicModuleManager.RegisterGRPCGatewayRoutes(clientCtx, apiSvr.GRPCGatewayRouter)
	if err := server.RegisterSwaggerAPI(apiSvr.ClientCtx, apiSvr.Router, apiConfig.Swagger); err != nil {
		panic(err)
	}
}

// RegisterTxService registers the tx gRPC service.
func (app *App) RegisterTxService(clientCtx client.Context) {
	authtx.RegisterTxService(app.GRPCQueryRouter(), clientCtx, app.Simulate, app.interfaceRegistry)
}

// RegisterTendermintService registers the CometBFT gRPC service.
func (app *App) RegisterTendermintService(clientCtx client.Context) {
	cmtApp := server.NewCometABCIWrapper(app)
	cmtservice.RegisterTendermintService(clientCtx, app.GRPCQueryRouter(), app.interfaceRegistry, cmtApp.Query)
}

// RegisterNodeService registers the node gRPC service.
func (app *App) RegisterNodeService(clientCtx client.Context, cfg config.Config) {
	nodeservice.RegisterNodeService(clientCtx, app.GRPCQueryRouter(), cfg, func() int64 {
		return app.CommitMultiStore().EarliestVersion()
	})
}

// GetMaccPerms returns a copy of the module account permissions.
func GetMaccPerms() map[string][]string {
	perms := make(map[string][]string, len(maccPerms))
	maps.Copy(perms, maccPerms)
	return perms
}

// BlockedAddresses are the module accounts that may not receive coins by bank send: all
// but x/gov's (deposits). Coins reach the others only through their modules.
func BlockedAddresses() map[string]bool {
	blocked := make(map[string]bool, len(maccPerms))
	for name := range maccPerms {
		blocked[authtypes.NewModuleAddress(name).String()] = true
	}
	delete(blocked, authtypes.NewModuleAddress(govtypes.ModuleName).String())
	return blocked
}

// ModuleAccountAddrs returns every module account address.
func ModuleAccountAddrs() map[string]bool {
	addrs := make(map[string]bool, len(maccPerms))
	for name := range maccPerms {
		addrs[authtypes.NewModuleAddress(name).String()] = true
	}
	return addrs
}
