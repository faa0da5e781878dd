// Package network configures the SDK's in-process test network (testutil/network) for
// flops: every validator runs a real flops app, with udps as the bond denom.
package network

import (
	"time"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client/flags"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	pruningtypes "github.com/cosmos/cosmos-sdk/store/v2/pruning/types"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"

	"github.com/flopsnet/flops/app"
)

// Network and Validator are the SDK's.
type (
	Network   = sdknetwork.Network
	Validator = sdknetwork.Validator
)

// ChainID is the in-process network's chain id.
const ChainID = "flops-e2e-1"

// DefaultConfig is a network of numValidators flops validators with 500 ms blocks and
// zero gas prices.
func DefaultConfig(numValidators int) sdknetwork.Config {
	tempApp := app.New(log.NewNopLogger(), dbm.NewMemDB(), false, simtestutil.NewAppOptionsWithFlagHome(app.DefaultNodeHome))
	cfg := sdknetwork.DefaultConfig(func() sdknetwork.TestFixture {
		return sdknetwork.TestFixture{
			AppConstructor: func(val sdknetwork.ValidatorI) servertypes.Application {
				return app.New(val.GetCtx().Logger, dbm.NewMemDB(), true,
					simtestutil.NewAppOptionsWithFlagHome(val.GetCtx().Viper.GetString(flags.FlagHome)),
					baseapp.SetPruning(pruningtypes.NewPruningOptionsFromString(val.GetAppConfig().Pruning)),
					baseapp.SetMinGasPrices(val.GetAppConfig().MinGasPrices),
					baseapp.SetChainID(ChainID),
				)
			},
			GenesisState: tempApp.DefaultGenesis(),
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
