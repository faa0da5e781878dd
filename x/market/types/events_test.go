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

// The submission's hand-built event is exactly what sdk.TypedEventToEvent makes of it, and
// reads back as it.
func TestJobSubmittedEventIsTheTypedEvent(t *testing.T) {
	for _, e := range []*types.EventJobSubmitted{
		{Escrow: sdkmath.ZeroInt()},
		{JobId: 1, Owner: "flops1qyqszqgpqyqszqgpqyqszqgpqyqszqgpjnp7du", Mode: types.ALLOCATION_MODE_ASSIGN, Tasks: 3, Escrow: sdkmath.NewInt(5_100_000)},
		{JobId: ^uint64(0), Owner: "x", Mode: types.ALLOCATION_MODE_AUCTION, Tasks: ^uint32(0), Escrow: sdkmath.NewIntWithDecimal(123, 60)},
		{JobId: 2, Owner: `a"b\c<d>&é`, Mode: types.ALLOCATION_MODE_UNSPECIFIED, Escrow: sdkmath.NewInt(-5)},
		{JobId: 3, Owner: "p", Mode: types.AllocationMode(99), Escrow: sdkmath.NewInt(1)}, // an unknown mode
		{JobId: 4, Owner: "p"}, // a nil escrow
	} {
		want, err := sdk.TypedEventToEvent(e)
		require.NoError(t, err)
		got, err := e.Event()
		require.NoError(t, err)
		require.Equal(t, want, got)

		back, err := sdk.ParseTypedEvent(abci.Event(got))
		require.NoError(t, err)
		if !e.Escrow.IsNil() {
			require.Equal(t, e, back)
		}
	}
}

// BenchmarkJobSubmittedEvent: the submission's event through sdk.TypedEventToEvent (proto
// JSON and back) and hand-built (Event).
func BenchmarkJobSubmittedEvent(b *testing.B) {
	e := &types.EventJobSubmitted{JobId: 12345, Owner: "flops1qyqszqgpqyqszqgpqyqszqgpqyqszqgpjnp7du", Mode: types.ALLOCATION_MODE_ASSIGN, Tasks: 1, Escrow: sdkmath.NewInt(5_100_000)}
	b.Run("typed", func(b *testing.B) {
		for b.Loop() {
			if _, err := sdk.TypedEventToEvent(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hand-built", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Event(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
