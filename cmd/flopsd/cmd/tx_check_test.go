package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"
)

// run executes flopsd with args in a fresh home and returns its output and error, as
// main reports it.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := NewRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--home", t.TempDir()))
	ran, _, _ := root.Find(args)
	// the client context prints to the process's stdout
	stdout := os.Stdout
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	require.NoError(t, err)
	os.Stdout = f
	err = Explain(svrcmd.Execute(root, "FLOPSD", t.TempDir()), ran)
	os.Stdout = stdout
	printed, readErr := os.ReadFile(f.Name())
	require.NoError(t, readErr)
	return out.String() + string(printed), err
}

// The spec is checked with the chain's own Validate before it is signed: with
// --generate-only a bad spec prints nothing to sign and names its field; a good one
// prints the unsigned tx. (--offline: the default params and the local clock.)
func TestSpecCheckedBeforeSigning(t *testing.T) {
	example, err := os.ReadFile("../../../examples/job.yaml")
	require.NoError(t, err)
	pool, err := os.ReadFile("../../../examples/pool.yaml")
	require.NoError(t, err)
	node, err := os.ReadFile("../../../examples/node.yaml")
	require.NoError(t, err)
	const from = "flops1jkq3mjllcqvwfv3t3ansvles4m4mfwe5w9rmsy"
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	flags := []string{"--from", from, "--generate-only", "--offline", "-a", "1", "-s", "1"}

	for _, c := range []struct {
		name, cmd, spec, want string
	}{
		{"past deadline", "submit-job", strings.Replace(string(example), "2030-01-01", "2020-01-01", 1), "deadline 2020-01-01T00:00:00Z"},
		{"negative price", "submit-job", strings.Replace(string(example), `amount: "5000000"`, `amount: "-5"`, 1), "max_price_per_task -5udps"},
		{"no task", "submit-job", strings.Replace(string(example), "task_count: 4", "task_count: 0", 1), "task_count"},
		{"pool without budget", "create-pool", strings.Replace(string(pool), `budget: {denom: udps, amount: "10000000"}`, `budget: {denom: udps, amount: "0"}`, 1), "budget 0udps"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, append([]string{"tx", "market", c.cmd, write(c.name+".yaml", c.spec)}, flags...)...)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
			require.NotContains(t, err.Error(), ".go:", "no source locations")
			require.NotContains(t, out, "MsgSubmitJob")
			require.NotContains(t, out, "Usage:", "the error, not the usage")
		})
	}
	t.Run("node without GPUs", func(t *testing.T) {
		spec := string(node)[:strings.Index(string(node), "gpus:")] + "gpus: []\nregion: eu-west\n"
		_, err := run(t, append([]string{"tx", "gfl", "register-node", write("node.yaml", spec)}, flags...)...)
		require.ErrorContains(t, err, "gpus: 0 GPUs")
	})

	out, err := run(t, append([]string{"tx", "market", "submit-job", write("job.yaml", string(example))}, flags...)...)
	require.NoError(t, err)
	require.Contains(t, out, "/flops.market.v1.MsgSubmitJob")
	// offline, nothing can be simulated: the SDK's fixed gas
	require.Contains(t, out, `"gas_limit":"200000"`)
}

// A flops tx estimates its gas unless told otherwise.
func TestFlopsTxsEstimateGas(t *testing.T) {
	root := NewRootCmd()
	for _, path := range [][]string{{"tx", "market", "cancel-job"}, {"tx", "market", "submit-job"}, {"tx", "gfl", "register-node"}, {"tx", "stakingslash", "bond"}} {
		c, _, err := root.Find(path)
		require.NoError(t, err)
		require.Equal(t, "auto", c.Flags().Lookup("gas").DefValue, path)
		require.Equal(t, "1.5", c.Flags().Lookup("gas-adjustment").DefValue, path)
	}
	c, _, err := root.Find([]string{"tx", "bank", "send"})
	require.NoError(t, err)
	require.NotEqual(t, "auto", c.Flags().Lookup("gas").DefValue, "other modules keep the SDK's default")
}

// Every list query asks for a page of 100 unless told otherwise, and counts the list only
// when --page-count-total asks: with autocli's limit of 0 the SDK counted every entry,
// which a node refuses past its query gas limit on a big chain (checkQueryPageDefault in
// tests/e2e runs one against a network).
func TestListQueriesAskForAPageWithoutACount(t *testing.T) {
	root := NewRootCmd()
	q, _, err := root.Find([]string{"query"})
	require.NoError(t, err)
	var lists []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("page-limit"); f != nil {
			lists = append(lists, c.CommandPath())
			require.Equal(t, "100", f.DefValue, c.CommandPath())
			require.Equal(t, "100", f.Value.String(), c.CommandPath())
			require.Equal(t, "false", c.Flags().Lookup("page-count-total").DefValue, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(q)
	for _, want := range []string{"flopsd query market tasks", "flopsd query market tasks-by-provider", "flopsd query gfl nodes", "flopsd query bank balances"} {
		require.Contains(t, lists, want)
	}
}
