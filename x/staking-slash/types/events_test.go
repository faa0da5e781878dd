package types_test

import (
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// The hand-built exposure event is exactly what sdk.TypedEventToEvent makes of the typed
// event, and reads back as it.
func TestExposureEventIsTheTypedEvent(t *testing.T) {
	for _, e := range []*types.EventExposure{
		{Exposure: sdkmath.ZeroInt()},
		{Provider: "flops1qyqszqgpqyqszqgpqyqszqgpqyqszqgpjnp7du", Exposure: sdkmath.NewInt(16_667)},
		{Provider: "x", Exposure: sdkmath.NewIntWithDecimal(123, 60)},
		{Provider: `a"b\c<d>&é`, Exposure: sdkmath.NewInt(-5)},
		{Provider: "p"}, // a nil exposure
	} {
		want, err := sdk.TypedEventToEvent(e)
		require.NoError(t, err)
		got, err := e.Event()
		require.NoError(t, err)
		require.Equal(t, want, got)

		back, err := sdk.ParseTypedEvent(abci.Event(got))
		require.NoError(t, err)
		if !e.Exposure.IsNil() {
			require.Equal(t, e, back)
		}
	}
}
