package e2e

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"
	"github.com/cosmos/cosmos-sdk/testutil/network"

	flopsdcmd "github.com/flopsnet/flops/cmd/flopsd/cmd"
)

// checkQueryPageDefault: a list query from flopsd's CLI asks the node for a page of 100
// without counting the list, and counts it when --page-count-total asks
// (cmd/flopsd queryPageDefaults). autocli used to send a limit of 0, with which the SDK
// counts every entry: on a big chain a count the node refuses past its query gas limit.
func checkQueryPageDefault(t *testing.T, val *network.Validator) {
	t.Helper()
	total := func(args ...string) (string, int) {
		t.Helper()
		// flopsd as a user runs it: its own home, the node named
		root := flopsdcmd.NewRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"query", "auth", "accounts", "--node", val.RPCAddress, "--output", "json"}, args...))
		require.NoError(t, svrcmd.Execute(root, "FLOPSD", t.TempDir()), out.String())
		var res struct {
			Accounts   []json.RawMessage `json:"accounts"`
			Pagination struct {
				Total string `json:"total"`
			} `json:"pagination"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
		return res.Pagination.Total, len(res.Accounts)
	}
	counted, n := total("--page-count-total")
	require.Greater(t, n, 1, "accounts listed")
	require.NotEmpty(t, counted, "a count when asked for")
	require.NotEqual(t, "0", counted)
	plain, m := total()
	require.Equal(t, n, m, "the same page")
	require.Contains(t, []string{"", "0"}, plain, "no count unless asked for")
}
