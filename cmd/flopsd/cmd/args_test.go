package cmd

import (
	"errors"
	"testing"

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
	err := Explain(cause)
	require.EqualError(t, err, `invalid argument "NOPE" for argument 1: NOPE is not a valid value`)
	require.ErrorIs(t, err, cause)
	other := errors.New(`unknown flag: --nope`)
	require.Equal(t, other, Explain(other))
	require.NoError(t, Explain(nil))
}
