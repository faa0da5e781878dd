package sdkint_test

import (
	"testing"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/internal/sdkint"
)

func TestOrZero(t *testing.T) {
	require.True(t, sdkint.OrZero(sdkmath.Int{}).IsZero(), "nil")
	require.Equal(t, sdkmath.NewInt(-7), sdkint.OrZero(sdkmath.NewInt(-7)))
	require.NotPanics(t, func() { sdkint.OrZero(sdkmath.Int{}).AddRaw(1) })
}
