package cmd

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	_ "github.com/flopsnet/flops/x/gfl/types"    // the enums' descriptors
	_ "github.com/flopsnet/flops/x/market/types" // the enums' descriptors
)

// An enum as every output prints it is accepted where a query takes it, positional or as a
// flag; a tx's arguments are never touched.
func TestQueryArgsAcceptPrintedEnums(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"q", "market", "jobs-by-status", "JOB_STATUS_ACTIVE"}, []string{"q", "market", "jobs-by-status", "active"}},
		{[]string{"--home", "/h", "query", "gfl", "nodes-by-status", "NODE_STATUS_PENDING"}, []string{"--home", "/h", "query", "gfl", "nodes-by-status", "pending"}},
		{[]string{"q", "market", "jobs", "--status=JOB_STATUS_COMPLETED"}, []string{"q", "market", "jobs", "--status=completed"}},
		{[]string{"q", "market", "all-tasks", "--status", "TASK_STATUS_RUNNING"}, []string{"q", "market", "all-tasks", "--status", "running"}},
		{[]string{"q", "market", "jobs-by-status", "active"}, []string{"q", "market", "jobs-by-status", "active"}},
		{[]string{"tx", "bank", "send", "a", "b", "1udps", "--note", "JOB_STATUS_ACTIVE"}, []string{"tx", "bank", "send", "a", "b", "1udps", "--note", "JOB_STATUS_ACTIVE"}},
	} {
		require.Equal(t, c.want, QueryArgs(c.in))
	}
	require.Equal(t, "builtin-gemm", enumNames()["VERIFICATION_CLASS_BUILTIN_GEMM"])
}

// autocli's "--0" for a positional argument becomes the argument's position.
func TestExplainNamesThePositionalArgument(t *testing.T) {
	cause := errors.New(`invalid argument "NOPE" for "--0" flag: NOPE is not a valid value`)
	err := Explain(cause, nil)
	require.EqualError(t, err, `invalid argument "NOPE" for argument 1: NOPE is not a valid value`)
	require.ErrorIs(t, err, cause)
	other := errors.New(`unknown flag: --nope`)
	require.Equal(t, other, Explain(other, nil))
	require.NoError(t, Explain(nil, nil))
}

// A coin or a duration in the wrong form: the error names the argument and the form.
func TestExplainNamesTheArgumentAndItsForm(t *testing.T) {
	bond := &cobra.Command{Use: "bond [amount]"}
	err := Explain(errors.New(`invalid argument "100" for "--0" flag: invalid input format`), bond)
	require.EqualError(t, err, `invalid argument "100" for argument 1 (amount): invalid input format: a coin is an amount and a denom, e.g. 100000000udps (100 DPS)`)
	err = Explain(errors.New(`invalid argument "ten" for "--timeout" flag: time: invalid duration "ten"`), bond)
	require.EqualError(t, err, `invalid argument "ten" for "--timeout" flag: time: invalid duration "ten": a duration is a number and a unit, e.g. 90s, 10m or 1h30m`)
}

// A Msg the chain refuses while --gas auto simulates it: the refusal, without the gRPC
// wrapping and the source locations.
func TestExplainSimulationRefusal(t *testing.T) {
	err := Explain(errors.New(`rpc error: code = Unknown desc = rpc error: code = Unknown desc = failed to execute message; message index: 0: job 1 belongs to flops1x: signer is not the job's owner [flopsnet/flops/x/market/keeper/job.go:149] with gas used: '33182': unknown request`), nil)
	require.EqualError(t, err, `the tx fails (simulated, nothing was sent): failed to execute message; message index: 0: job 1 belongs to flops1x: signer is not the job's owner`)
	err = Explain(errors.New(`job.yaml: max_price_per_task -5udps: negative coin amount: -5: invalid job spec [/work/main/x/market/types/spec.go:62]`), nil)
	require.EqualError(t, err, `job.yaml: max_price_per_task -5udps: negative coin amount: -5: invalid job spec`)
}
