package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/crypto/hd"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	clitestutil "github.com/cosmos/cosmos-sdk/testutil/cli"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authcodec "github.com/cosmos/cosmos-sdk/x/auth/codec"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/network"
)

// tsClientMnemonic is the TypeScript client tests' account (HD index 0 signs direct, index
// 1 amino); test-only, funded by the test.
const tsClientMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// checkTSClient runs the TypeScript client's live tests (clients/ts/test/live.test.ts, built
// by make test) against val: queries, a bank send, the lifecycle a client and a provider
// start with and every flops Msg, each signed SIGN_MODE_DIRECT and
// SIGN_MODE_LEGACY_AMINO_JSON, and a tampered amino-signed tx refused.
func checkTSClient(t *testing.T, net *network.Network, val *network.Validator) {
	t.Helper()
	t.Run("TypeScriptClient", func(t *testing.T) {
		script, err := filepath.Abs("../../clients/ts/dist/test/live.test.js")
		require.NoError(t, err)
		node, lookErr := exec.LookPath("node")
		if _, err := os.Stat(script); err != nil || lookErr != nil {
			if os.Getenv("FLOPS_CI") != "" {
				t.Fatalf("the TypeScript client is not built (make test builds it): %v %v", err, lookErr)
			}
			t.Skipf("the TypeScript client is not built (cd clients/ts && npm ci && npm run build): %v %v", err, lookErr)
		}

		// fund the direct-signing account (HD index 0); it funds the amino one itself
		seed, err := hd.Secp256k1.Derive()(tsClientMnemonic, "", hd.CreateHDPath(sdk.CoinType, 0, 0).String())
		require.NoError(t, err)
		addr := sdk.AccAddress(hd.Secp256k1.Generate()(seed).(*secp256k1.PrivKey).PubKey().Address())
		amount := sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 350_000_000))
		out, err := clitestutil.MsgSendExec(val.ClientCtx, val.Address, addr, amount, authcodec.NewBech32Codec(app.Bech32Prefix),
			"--yes", "--broadcast-mode=sync", fmt.Sprintf("--fees=%s", sdk.NewInt64Coin(app.BondDenom, 10)))
		require.NoError(t, err, out.String())
		require.NoError(t, net.RetryForBlocks(func() error {
			if got := balance(t, val, addr); !got.Equal(amount.AmountOf(app.BondDenom)) {
				var txr struct {
					TxHash string `json:"txhash"`
				}
				_ = json.Unmarshal(out.Bytes(), &txr)
				hash, _ := hex.DecodeString(txr.TxHash)
				r, err := val.RPCClient.Tx(context.Background(), hash, false)
				if err == nil {
					return fmt.Errorf("balance %s after code %d %s", got, r.TxResult.Code, r.TxResult.Log)
				}
				return fmt.Errorf("balance %s after %s: %w", got, out.String(), err)
			}
			return nil
		}, 10))

		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", "--test-force-exit", "--test-reporter=spec", script)
		cmd.Env = append(os.Environ(),
			"FLOPS_RPC="+strings.Replace(val.RPCAddress, "tcp://", "http://", 1),
			"FLOPS_MNEMONIC="+tsClientMnemonic)
		res, err := cmd.CombinedOutput()
		require.NoError(t, err, string(res))
		t.Logf("TypeScript client against the network:\n%s", res)
		require.Contains(t, string(res), "ℹ fail 0")
		require.NotContains(t, string(res), "ℹ skipped 1")
	})
}
