package types_test

import (
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// The scheduler's hand-built assignment event is exactly what sdk.TypedEventToEvent
// makes of the typed event, and reads back as it.
func TestTaskAssignedEventIsTheTypedEvent(t *testing.T) {
	for _, e := range []*types.EventTaskAssigned{
		{Price: sdkmath.ZeroInt()},
		{TaskId: 1, JobId: 2, NodeId: 3, Provider: "flops1qyqszqgpqyqszqgpqyqszqgpqyqszqgpjnp7du", Price: sdkmath.NewInt(166_667)},
		{TaskId: ^uint64(0), JobId: ^uint64(0) - 1, NodeId: 1 << 40, Provider: "x", Price: sdkmath.NewIntWithDecimal(123, 60), Reassignment: true},
		{TaskId: 7, Provider: `a"b\c<d>&é`, Price: sdkmath.NewInt(-5)},
		{TaskId: 8, Provider: "p"}, // a nil price
	} {
		want, err := sdk.TypedEventToEvent(e)
		require.NoError(t, err)
		got, err := e.Event()
		require.NoError(t, err)
		require.Equal(t, want, got)

		back, err := sdk.ParseTypedEvent(abci.Event(got))
		require.NoError(t, err)
		if !e.Price.IsNil() {
			require.Equal(t, e, back)
		}
	}
}
