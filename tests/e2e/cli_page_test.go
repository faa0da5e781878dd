//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/testutil/network"
)

// checkQueryPageDefault: a list query from flopsd's CLI asks the node for a page of 100
// without counting the list, and counts it when --page-count-total asks
// (cmd/flopsd queryPageDefaults). autocli used to send a limit of 0, with which the SDK
// counts every entry: on a big chain a count the node refuses past its query gas limit.
// flopsd runs as a user runs it, a process of its own with its own home (in this process
// its config templates would replace the SDK's that the in-process networks write).
func checkQueryPageDefault(t *testing.T, val *network.Validator) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(binaries(t, root), "flopsd")
	total := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args = append([]string{"query", "auth", "accounts", "--node", val.RPCAddress, "--home", t.TempDir(), "--output", "json"}, args...)
		out, err := exec.CommandContext(ctx, bin, args...).Output() //nolint:gosec // our binary
		require.NoError(t, err, string(out))
		var res struct {
			Accounts   []json.RawMessage `json:"accounts"`
			Pagination struct {
				Total string `json:"total"`
			} `json:"pagination"`
		}
		require.NoError(t, json.Unmarshal(out, &res), string(out))
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
