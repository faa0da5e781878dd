package specfile_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/internal/specfile"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A coin is taken as the CLI's flags take one or as {denom, amount}; a coin or a nested
// message in another form fails naming its field.
func TestDecodeCoinsAndNestedFields(t *testing.T) {
	cdc := encoding.MustMake().Codec
	var spec markettypes.JobSpec
	require.NoError(t, specfile.Decode(cdc, []byte("max_price_per_task: 5000000udps\npriority_tip: {denom: udps, amount: \"7\"}\nmax_duration: 10m\n"), &spec))
	require.Equal(t, "5000000udps", spec.MaxPricePerTask.String())
	require.Equal(t, "7udps", spec.PriorityTip.String())
	require.Equal(t, "10m0s", spec.MaxDuration.String())

	for in, want := range map[string]string{
		"max_price_per_task: five dps\n": `max_price_per_task: "five dps": a coin is an amount and a denom`,
		"priority_tip: 7\n":              `priority_tip: want a coin`,
		"requirements: 7\n":              `requirements: want an object, got 7`,
		"env: {name: A}\n":               `env: want a list`,
		"env: [{name: A}, 3]\n":          `env[1]: want an object, got 3`,
		"verificationBudget: [1]\n":      `verificationBudget: want a coin`,
		"no_such_field: 1\n":             `no_such_field`,
	} {
		var s markettypes.JobSpec
		err := specfile.Decode(cdc, []byte(in), &s)
		require.ErrorContains(t, err, want, in)
	}
}
