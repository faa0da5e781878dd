// Package chain holds flops' chain-wide constants (address prefix, denoms, the epoch
// identifier) so that the app, the worker and test fixtures agree without importing the
// app.
package chain

import (
	"fmt"
	"os"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

const (
	// Name is the application's name.
	Name = "flops"
	// Bech32Prefix is the account address prefix.
	Bech32Prefix = "flops"
	// BondDenom is the staking, fee and payment denom: 1 DPS = 10^6 udps.
	BondDenom = "udps"
	// GFLDenom is the non-transferable power index denom (x/gfl): 1 ugfl = 1 GFLOP/s.
	GFLDenom = "ugfl"
	// EpochIdentifier is the x/epochs epoch that drives the GFL rebalance, reputation and
	// DPS emission.
	EpochIdentifier = "flops"
	// LocalChainID is the chain id of localnets and the demo.
	LocalChainID = "flops-local-1"
	// DefaultMinGasPrice is the minimum gas price `flopsd init` writes in app.toml: a public
	// node that took zero would relay and include spam for free. A bank send (~100k gas)
	// then costs 0.001 DPS, a job submission (~250k) 0.0025 DPS. Localnets and the demo
	// set 0 (scripts/localnet.sh). Wallets: chain/keplr, chain/registry.
	DefaultMinGasPrice = "0.01" + BondDenom
	// DefaultQueryGasLimit is the gas one query may spend on a node (app.toml's
	// query-gas-limit, which `flopsd init` writes, and flopsd start's default where
	// app.toml has none). The SDK's own default is 0, no limit: one unauthenticated gRPC,
	// REST or ABCI query could make a public node read a whole table (a filtered page of
	// tasks reads tasks until it is full, about 600 gas and 2 µs a task, and a page's
	// limit is the caller's) and hold the answer in memory. At this limit a query stops,
	// with "Query gas limit exceeded", after about 80,000 tasks read (about 0.15 s here),
	// or 14,000 with the longest output URIs; a page of 1,000 of those, the dashboard's
	// largest, spends under a tenth of it (TestWholeTableScanStopsAtQueryGasLimit). The
	// SDK's app.toml template suggests this value for public nodes. An operator sets 0
	// for no limit.
	DefaultQueryGasLimit uint64 = 50_000_000
)

// SetAddressPrefixes sets flops' bech32 prefixes on an SDK config that is not yet sealed.
func SetAddressPrefixes(cfg *sdk.Config) {
	val := Bech32Prefix + sdk.PrefixValidator
	cfg.SetBech32PrefixForAccount(Bech32Prefix, Bech32Prefix+sdk.PrefixPublic)
	cfg.SetBech32PrefixForValidator(val+sdk.PrefixOperator, val+sdk.PrefixOperator+sdk.PrefixPublic)
	cfg.SetBech32PrefixForConsensusNode(val+sdk.PrefixConsensus, val+sdk.PrefixConsensus+sdk.PrefixPublic)
}

// PinConfigScope makes sdk.GetConfig cheap for the rest of the process. This SDK version
// keeps one config per scope, and without COSMOS_SDK_CONFIG_SCOPE set it computes the
// scope ("host|executable|pid") on every call: a readlink of /proc/self/exe and a read
// of the hostname, two system calls and a file open. The SDK calls it for every address
// it verifies and every account address it decodes, several times a transaction in
// CheckTx and again in DeliverTx (about 90 us a transaction under make load, 5% of the
// node's CPU). PinConfigScope sets the variable to the very scope the SDK computes, so a
// config set up before it (by an earlier init) is the one found after it; it leaves a
// scope the operator set alone. The worker's job containers get an environment of their
// own, not this one.
func PinConfigScope() {
	if os.Getenv(sdk.EnvConfigScope) != "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "unknown-exe"
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	_ = os.Setenv(sdk.EnvConfigScope, fmt.Sprintf("%s|%s|%d", host, exe, os.Getpid()))
}

func init() {
	PinConfigScope()
	// The SDK modules' default genesis reads the bond denom from here.
	sdk.DefaultBondDenom = BondDenom
	SetAddressPrefixes(sdk.GetConfig())
}
