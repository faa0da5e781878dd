package app

import (
	"os"
	"path/filepath"

	"github.com/flopsnet/flops/internal/chain"
)

// Chain-wide constants, re-exported for callers of the app.
const (
	Name            = chain.Name
	Bech32Prefix    = chain.Bech32Prefix
	BondDenom       = chain.BondDenom
	GFLDenom        = chain.GFLDenom
	EpochIdentifier = chain.EpochIdentifier
)

// DefaultNodeHome is flopsd's default home directory.
var DefaultNodeHome string

func init() {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	DefaultNodeHome = filepath.Join(home, ".flops")
}
