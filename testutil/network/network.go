// Package network configures the SDK's in-process test network (testutil/network) for
// flops: every validator runs a real flops app, with udps as the bond denom.
package network

import (
	"fmt"
	"time"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/baseapp"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	pruningtypes "github.com/cosmos/cosmos-sdk/store/v2/pruning/types"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/internal/appdb"
	"github.com/flopsnet/flops/internal/chain"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// Network and Validator are the SDK's.
type (
	Network   = sdknetwork.Network
	Validator = sdknetwork.Validator
)

// ChainID is the in-process network's chain id.
const ChainID = "flops-e2e-1"

// DefaultConfig is a network of numValidators flops validators with 500 ms blocks and
// zero gas prices, each keeping its state in memory.
func DefaultConfig(numValidators int) sdknetwork.Config {
	return config(numValidators, func(string) dbm.DB { return dbm.NewMemDB() })
}

// OnDiskConfig is DefaultConfig with each validator's state on disk under its home, in
// backend (goleveldb or pebbledb; CometBFT's block store, state and tx index too), for
// long, query-heavy runs: under the large load the in-memory DB deadlocked (a gRPC
// query's MemDB iterator held the DB's read lock waiting for iavl's node DB lock, which
// the block's Commit held while it waited to write the DB), and every query hung.
func OnDiskConfig(numValidators int, backend dbm.BackendType) sdknetwork.Config {
	cfg := config(numValidators, func(home string) dbm.DB {
		// opened as flopsd start opens it (internal/appdb)
		db, err := appdb.Open(home, backend, appdb.DefaultOptions())
		if err != nil {
			panic(fmt.Sprintf("validator state in %s: %v", home, err))
		}
		return db
	})
	inner := cfg.AppConstructor
	cfg.AppConstructor = func(val sdknetwork.ValidatorI) servertypes.Application {
		// the node is built from this same config after its app
		val.GetCtx().Config.DBBackend = string(backend)
		return inner(val)
	}
	return cfg
}

func config(numValidators int, newDB func(home string) dbm.DB) sdknetwork.Config {
	tempApp := app.New(log.NewNopLogger(), dbm.NewMemDB(), false, simtestutil.NewAppOptionsWithFlagHome(app.DefaultNodeHome))
	genesis := tempApp.DefaultGenesis()
	// the network's "GPUs" are mocks answering PoCP with the CPU solver: the launch class
	// table's power floors would re-class every node at its first rebalance
	var gfl gfltypes.GenesisState
	tempApp.AppCodec().MustUnmarshalJSON(genesis[gfltypes.ModuleName], &gfl)
	gfl.Params.GpuClasses = gfltypes.WithoutPowerRanges(gfl.Params.GpuClasses)
	genesis[gfltypes.ModuleName] = tempApp.AppCodec().MustMarshalJSON(&gfl)
	cfg := sdknetwork.DefaultConfig(func() sdknetwork.TestFixture {
		return sdknetwork.TestFixture{
			AppConstructor: func(val sdknetwork.ValidatorI) servertypes.Application {
				home := val.GetCtx().Config.RootDir // the validator's node directory
				// no inter-block cache, as flopsd runs by default (cmd/flopsd/cmd: noInterBlockCache);
				// queries bounded as flopsd init sets a node up (query-gas-limit)
				return app.New(val.GetCtx().Logger, newDB(home), true,
					simtestutil.NewAppOptionsWithFlagHome(home),
					baseapp.SetPruning(pruningtypes.NewPruningOptionsFromString(val.GetAppConfig().Pruning)),
					baseapp.SetMinGasPrices(val.GetAppConfig().MinGasPrices),
					baseapp.SetChainID(ChainID),
					baseapp.SetQueryGasLimit(chain.DefaultQueryGasLimit),
				)
			},
			GenesisState: genesis,
			EncodingConfig: moduletestutil.TestEncodingConfig{
				InterfaceRegistry: tempApp.InterfaceRegistry(),
				Codec:             tempApp.AppCodec(),
				TxConfig:          tempApp.TxConfig(),
				Amino:             tempApp.LegacyAmino(),
			},
		}
	})
	cfg.ChainID = ChainID
	cfg.NumValidators = numValidators
	cfg.BondDenom = app.BondDenom
	cfg.MinGasPrices = "0" + app.BondDenom
	cfg.TimeoutCommit = 500 * time.Millisecond
	return cfg
}
