package chain

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// The pinned scope is the one the SDK computes itself: with the variable emptied, the
// SDK's own lookup finds the same config object, flops' prefixes on it. A pin that
// differed would hand later callers a fresh config with the cosmos prefixes.
func TestPinnedConfigScopeIsTheSDKsOwn(t *testing.T) {
	scope := os.Getenv(sdk.EnvConfigScope)
	require.NotEmpty(t, scope, "init pins the scope")
	pinned := sdk.GetConfig()
	require.Equal(t, Bech32Prefix, pinned.GetBech32AccountAddrPrefix())

	t.Setenv(sdk.EnvConfigScope, "") // the SDK computes host|executable|pid again
	require.Same(t, pinned, sdk.GetConfig())

	PinConfigScope()
	require.Equal(t, scope, os.Getenv(sdk.EnvConfigScope))
}

// A scope the operator set is left alone.
func TestPinConfigScopeKeepsAScopeAlreadySet(t *testing.T) {
	t.Setenv(sdk.EnvConfigScope, "operator-scope")
	PinConfigScope()
	require.Equal(t, "operator-scope", os.Getenv(sdk.EnvConfigScope))
}

// BenchmarkGetConfig: the SDK's config lookup with the scope pinned, as flops runs, and
// with it computed on every call, as the SDK does by default.
func BenchmarkGetConfig(b *testing.B) {
	b.Run("pinned", func(b *testing.B) {
		for b.Loop() {
			_ = sdk.GetConfig()
		}
	})
	b.Run("computed", func(b *testing.B) {
		b.Setenv(sdk.EnvConfigScope, "")
		for b.Loop() {
			_ = sdk.GetConfig()
		}
	})
}
