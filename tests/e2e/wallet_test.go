package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/testutil/network"
)

// keplrCurrency is a Keplr ChainInfo currency.
type keplrCurrency struct {
	CoinDenom        string `json:"coinDenom"`
	CoinMinimalDenom string `json:"coinMinimalDenom"`
	CoinDecimals     uint32 `json:"coinDecimals"`
	GasPriceStep     *struct {
		Low     float64 `json:"low"`
		Average float64 `json:"average"`
		High    float64 `json:"high"`
	} `json:"gasPriceStep,omitempty"`
}

// keplrChainInfo is what Keplr's experimentalSuggestChain takes.
type keplrChainInfo struct {
	ChainID       string                    `json:"chainId"`
	ChainName     string                    `json:"chainName"`
	RPC           string                    `json:"rpc"`
	REST          string                    `json:"rest"`
	BIP44         struct{ CoinType uint32 } `json:"bip44"`
	Bech32Config  map[string]string         `json:"bech32Config"`
	Currencies    []keplrCurrency           `json:"currencies"`
	FeeCurrencies []keplrCurrency           `json:"feeCurrencies"`
	StakeCurrency keplrCurrency             `json:"stakeCurrency"`
	Features      []string                  `json:"features"`
}

// registryChain is the part of the chain registry's chain.json schema flops fills (the
// schema forbids other properties; strict decoding refuses a misspelt one).
type registryChain struct {
	Schema       string   `json:"$schema"`
	ChainName    string   `json:"chain_name"`
	Status       string   `json:"status"`
	NetworkType  string   `json:"network_type"`
	PrettyName   string   `json:"pretty_name"`
	ChainType    string   `json:"chain_type"`
	ChainID      string   `json:"chain_id"`
	Bech32Prefix string   `json:"bech32_prefix"`
	DaemonName   string   `json:"daemon_name"`
	NodeHome     string   `json:"node_home"`
	KeyAlgos     []string `json:"key_algos"`
	Slip44       uint32   `json:"slip44"`
	Fees         struct {
		FeeTokens []struct {
			Denom            string  `json:"denom"`
			FixedMinGasPrice float64 `json:"fixed_min_gas_price"`
			LowGasPrice      float64 `json:"low_gas_price"`
			AverageGasPrice  float64 `json:"average_gas_price"`
			HighGasPrice     float64 `json:"high_gas_price"`
		} `json:"fee_tokens"`
	} `json:"fees"`
	Staking struct {
		StakingTokens []struct {
			Denom string `json:"denom"`
		} `json:"staking_tokens"`
	} `json:"staking"`
	Codebase struct {
		GitRepo   string                         `json:"git_repo"`
		SDK       struct{ Type, Version string } `json:"sdk"`
		Consensus struct{ Type, Version string } `json:"consensus"`
		IBC       struct{ Type, Version string } `json:"ibc"`
	} `json:"codebase"`
	APIs map[string][]struct {
		Address  string `json:"address"`
		Provider string `json:"provider"`
	} `json:"apis"`
}

// registryAssets is the chain registry's assetlist.json.
type registryAssets struct {
	Schema    string `json:"$schema"`
	ChainName string `json:"chain_name"`
	Assets    []struct {
		Description string `json:"description"`
		DenomUnits  []struct {
			Denom    string `json:"denom"`
			Exponent uint32 `json:"exponent"`
		} `json:"denom_units"`
		Base      string `json:"base"`
		Name      string `json:"name"`
		Display   string `json:"display"`
		Symbol    string `json:"symbol"`
		TypeAsset string `json:"type_asset"`
	} `json:"assets"`
}

func readStrict(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), path)
}

// localnetPorts are the base ports scripts/localnet.sh gives its rpc, api and grpc listeners.
func localnetPorts(t *testing.T) map[string]int {
	t.Helper()
	raw, err := os.ReadFile("../../scripts/localnet.sh")
	require.NoError(t, err)
	out := map[string]int{}
	re := regexp.MustCompile(`\("(rpc|api|grpc)", "(laddr|address)", '"(?:tcp://)?127\.0\.0\.1:%d"' % p\((\d+)\)\)`)
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		out[m[1]], _ = strconv.Atoi(m[3])
	}
	require.Len(t, out, 3, "localnet.sh's rpc, api and grpc addresses")
	return out
}

// checkWalletMetadata checks the wallet metadata in chain/ (Keplr chain info for the
// localnet and a public network's template, the chain registry's chain.json and
// assetlist.json) against the running chain: bech32 prefixes against its addresses, the
// coin type against the keyring's HD path, every currency against the bank's denom
// metadata (base, display exponent, symbol), the fee and staking denoms, the gas prices
// against the node's minimum; and the localnet files' chain id and endpoints against
// scripts/localnet.sh, the software versions against the binary's.
func checkWalletMetadata(t *testing.T, val *network.Validator) {
	t.Helper()
	t.Run("WalletMetadata", func(t *testing.T) {
		conn, err := grpc.NewClient(val.AppConfig.GRPC.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer func() { _ = conn.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		md, err := banktypes.NewQueryClient(conn).DenomsMetadata(ctx, &banktypes.QueryDenomsMetadataRequest{})
		require.NoError(t, err)
		meta := map[string]banktypes.Metadata{}
		for _, m := range md.Metadatas {
			meta[m.Base] = m
		}
		sp, err := stakingtypes.NewQueryClient(conn).Params(ctx, &stakingtypes.QueryParamsRequest{})
		require.NoError(t, err)
		bondDenom := sp.Params.BondDenom

		displayExp := func(m banktypes.Metadata) uint32 {
			for _, u := range m.DenomUnits {
				if u.Denom == m.Display {
					return u.Exponent
				}
			}
			t.Fatalf("%s: no unit for its display denom %s", m.Base, m.Display)
			return 0
		}
		checkCurrency := func(where string, c keplrCurrency) {
			m, ok := meta[c.CoinMinimalDenom]
			require.Truef(t, ok, "%s: %s is not a denom of the chain", where, c.CoinMinimalDenom)
			require.Equal(t, m.Symbol, c.CoinDenom, where)
			require.Equal(t, displayExp(m), c.CoinDecimals, where)
		}
		minGas, err := sdk.ParseDecCoins(chain.DefaultMinGasPrice)
		require.NoError(t, err)
		ports := localnetPorts(t)

		for _, f := range []string{"localnet.json", "public.template.json"} {
			var ci keplrChainInfo
			readStrict(t, filepath.Join("../../chain/keplr", f), &ci)
			cfg := sdk.GetConfig()
			require.Equal(t, cfg.GetCoinType(), ci.BIP44.CoinType, f)
			require.Equal(t, map[string]string{
				"bech32PrefixAccAddr":  cfg.GetBech32AccountAddrPrefix(),
				"bech32PrefixAccPub":   cfg.GetBech32AccountPubPrefix(),
				"bech32PrefixValAddr":  cfg.GetBech32ValidatorAddrPrefix(),
				"bech32PrefixValPub":   cfg.GetBech32ValidatorPubPrefix(),
				"bech32PrefixConsAddr": cfg.GetBech32ConsensusAddrPrefix(),
				"bech32PrefixConsPub":  cfg.GetBech32ConsensusPubPrefix(),
			}, ci.Bech32Config, f)
			require.True(t, strings.HasPrefix(val.Address.String(), ci.Bech32Config["bech32PrefixAccAddr"]+"1"), f)
			require.True(t, strings.HasPrefix(val.ValAddress.String(), ci.Bech32Config["bech32PrefixValAddr"]+"1"), f)
			require.Len(t, ci.Currencies, len(meta), "%s: every denom of the chain", f)
			for _, c := range ci.Currencies {
				checkCurrency(f+" currencies", c)
			}
			require.Len(t, ci.FeeCurrencies, 1, f)
			checkCurrency(f+" feeCurrencies", ci.FeeCurrencies[0])
			require.Equal(t, minGas[0].Denom, ci.FeeCurrencies[0].CoinMinimalDenom, f)
			checkCurrency(f+" stakeCurrency", ci.StakeCurrency)
			require.Equal(t, bondDenom, ci.StakeCurrency.CoinMinimalDenom, f)
			step := ci.FeeCurrencies[0].GasPriceStep
			require.NotNil(t, step, f)
			require.True(t, step.Low <= step.Average && step.Average <= step.High && step.High > 0, f)
			if f == "localnet.json" {
				require.Equal(t, chain.LocalChainID, ci.ChainID)
				require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", ports["rpc"]), ci.RPC)
				require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", ports["api"]), ci.REST)
			} else {
				// a public node's minimum (flopsd init's default) must be met at "low"
				require.True(t, sdkmath.LegacyMustNewDecFromStr(strconv.FormatFloat(step.Low, 'f', -1, 64)).GTE(minGas[0].Amount), "%s: low %v", f, step.Low)
			}
		}

		// the versions go.mod requires (a test binary carries no dependency list)
		gomod, err := os.ReadFile("../../go.mod")
		require.NoError(t, err)
		deps := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^\s*(\S+) v(\S+)`).FindAllStringSubmatch(string(gomod), -1) {
			deps[m[1]] = m[2]
		}
		for _, dir := range []string{"flopslocal", "_template"} {
			var c registryChain
			readStrict(t, filepath.Join("../../chain/registry", dir, "chain.json"), &c)
			require.Equal(t, "../chain.schema.json", c.Schema)
			require.Regexp(t, `^[a-z0-9]+$`, c.ChainName)
			require.Equal(t, "cosmos", c.ChainType)
			require.Contains(t, []string{"live", "upcoming", "killed"}, c.Status)
			require.Contains(t, []string{"mainnet", "testnet", "devnet"}, c.NetworkType)
			require.Equal(t, chain.Bech32Prefix, c.Bech32Prefix)
			require.Equal(t, sdk.GetConfig().GetCoinType(), c.Slip44)
			require.Equal(t, []string{"secp256k1"}, c.KeyAlgos)
			require.Equal(t, "flopsd", c.DaemonName)
			require.Len(t, c.Fees.FeeTokens, 1)
			ft := c.Fees.FeeTokens[0]
			require.Equal(t, minGas[0].Denom, ft.Denom)
			require.True(t, ft.FixedMinGasPrice <= ft.LowGasPrice && ft.LowGasPrice <= ft.AverageGasPrice && ft.AverageGasPrice <= ft.HighGasPrice)
			require.Len(t, c.Staking.StakingTokens, 1)
			require.Equal(t, bondDenom, c.Staking.StakingTokens[0].Denom)
			require.Equal(t, "cosmos", c.Codebase.SDK.Type)
			require.Equal(t, deps["github.com/cosmos/cosmos-sdk"], c.Codebase.SDK.Version)
			require.Equal(t, "cometbft", c.Codebase.Consensus.Type)
			require.Equal(t, deps["github.com/cometbft/cometbft"], c.Codebase.Consensus.Version)
			require.Equal(t, "go", c.Codebase.IBC.Type)
			require.Equal(t, deps["github.com/cosmos/ibc-go/v11"], c.Codebase.IBC.Version)
			for kind := range c.APIs {
				require.Contains(t, []string{"rpc", "rest", "grpc"}, kind)
			}
			if dir == "flopslocal" {
				require.Equal(t, chain.LocalChainID, c.ChainID)
				require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", ports["rpc"]), c.APIs["rpc"][0].Address)
				require.Equal(t, fmt.Sprintf("http://127.0.0.1:%d", ports["api"]), c.APIs["rest"][0].Address)
				require.Equal(t, fmt.Sprintf("127.0.0.1:%d", ports["grpc"]), c.APIs["grpc"][0].Address)
			} else {
				require.Equal(t, minGas[0].Amount.MustFloat64(), ft.FixedMinGasPrice, "the template's minimum is flopsd init's")
			}

			var a registryAssets
			readStrict(t, filepath.Join("../../chain/registry", dir, "assetlist.json"), &a)
			require.Equal(t, "../assetlist.schema.json", a.Schema)
			require.Equal(t, c.ChainName, a.ChainName)
			require.Len(t, a.Assets, len(meta))
			for _, as := range a.Assets {
				m, ok := meta[as.Base]
				require.Truef(t, ok, "%s: %s is not a denom of the chain", dir, as.Base)
				require.Equal(t, m.Display, as.Display)
				require.Equal(t, m.Symbol, as.Symbol)
				require.Equal(t, m.Name, as.Name)
				require.Equal(t, m.Description, as.Description)
				require.Equal(t, "sdk.coin", as.TypeAsset)
				require.Len(t, as.DenomUnits, len(m.DenomUnits))
				for i, u := range m.DenomUnits {
					require.Equal(t, u.Denom, as.DenomUnits[i].Denom)
					require.Equal(t, u.Exponent, as.DenomUnits[i].Exponent)
				}
			}
		}
	})
}
