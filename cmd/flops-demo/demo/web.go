package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/crypto/hd"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/internal/chain"
)

// WebMnemonic is the dashboard's local test key on the demo chain: BIP-39's public test
// vector, so a newcomer can sign from the page without a wallet. Only a localnet funds it.
const WebMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// webFunds: what the demo gives the dashboard's test key, udps.
const webFunds = 1_000_000_000

// WebConfig is the config.json the dashboard reads beside its index.html.
type WebConfig struct {
	ChainID     string `json:"chainId"`
	RPC         string `json:"rpc"`
	REST        string `json:"rest"`
	GasPrice    string `json:"gasPrice"`
	DevMnemonic string `json:"devMnemonic,omitempty"`
}

// WebAddress is WebMnemonic's account (HD path m/44'/118'/0'/0/0).
func WebAddress() (sdk.AccAddress, error) {
	seed, err := hd.Secp256k1.Derive()(WebMnemonic, "", hd.CreateHDPath(sdk.CoinType, 0, 0).String())
	if err != nil {
		return nil, err
	}
	return sdk.AccAddress(hd.Secp256k1.Generate()(seed).(*secp256k1.PrivKey).PubKey().Address()), nil
}

// serveWeb serves the dashboard's static build (web/dist, from `make web`) on
// 127.0.0.1:8800 plus the port offset, with a config.json for this chain, and funds its
// test key. Without a build it says how to make one and goes on.
func (d *Demo) serveWeb(ctx context.Context) error {
	dir := d.o.WebDir
	if dir == "" {
		dir = filepath.Join(d.o.Root, "web", "dist")
	}
	if !isFile(filepath.Join(dir, "index.html")) {
		d.say("web", "the dashboard is not built (make web builds it): not served")
		return nil
	}
	addr, err := WebAddress()
	if err != nil {
		return err
	}
	to, from := addr.String(), addrOf(d.keys["client"])
	if _, err := d.client.Submit(ctx, &banktypes.MsgSend{FromAddress: from, ToAddress: to,
		Amount: sdk.NewCoins(sdk.NewInt64Coin(chain.BondDenom, webFunds))}); err != nil {
		return fmt.Errorf("fund the dashboard's test key: %w", err)
	}
	cfg, err := json.Marshal(WebConfig{
		ChainID:     d.c.ChainID(),
		RPC:         fmt.Sprintf("http://127.0.0.1:%d", d.port(26657)),
		REST:        d.restURL(),
		GasPrice:    "0" + chain.BondDenom,
		DevMnemonic: WebMnemonic,
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(cfg)
	})
	mux.Handle("GET /", http.FileServer(http.Dir(dir)))
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", d.port(8800)))
	if err != nil {
		return fmt.Errorf("serve the dashboard: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	d.web = srv
	d.waits.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.say("web", "dashboard server: %v", err)
		}
		return nil
	})
	d.sum.WebURL = fmt.Sprintf("http://%s/", ln.Addr())
	d.say("web", "dashboard at %s (its local test key %s holds %s)", d.sum.WebURL, to, dps(sdkmath.NewInt(webFunds)))
	return nil
}

// stopWeb stops the dashboard's server.
func (d *Demo) stopWeb() {
	if d.web != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.web.Shutdown(ctx)
	}
}

// isFile says whether p is a regular file.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
