package app

import (
	"os"

	"cosmossdk.io/log/v2"
	dbm "github.com/cosmos/cosmos-db"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/types"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
)

// Encoding is what a client of the chain (the CLI, flops-worker, load tools) needs to
// build, sign and decode transactions: the app's own codecs.
type Encoding struct {
	Codec             codec.Codec
	InterfaceRegistry types.InterfaceRegistry
	TxConfig          client.TxConfig
	Amino             *codec.LegacyAmino
}

// MakeEncoding builds a throw-away app in memory and returns its codecs.
func MakeEncoding() (Encoding, error) {
	dir, err := os.MkdirTemp("", "flops-encoding")
	if err != nil {
		return Encoding{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	a := New(log.NewNopLogger(), dbm.NewMemDB(), false, simtestutil.NewAppOptionsWithFlagHome(dir))
	return Encoding{Codec: a.AppCodec(), InterfaceRegistry: a.InterfaceRegistry(), TxConfig: a.TxConfig(), Amino: a.LegacyAmino()}, nil
}
