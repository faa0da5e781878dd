package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/config"
)

// The commented file init writes loads back to exactly the defaults, and validates.
func TestTemplateLoadsToDefaults(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "worker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(config.Template(home)), 0o600))
	got, err := config.Load(path, home)
	require.NoError(t, err)
	require.Equal(t, config.Default(home), got)
}

// A bad value is refused with the field's name; an unknown field is an error.
func TestValidate(t *testing.T) {
	home := t.TempDir()
	for name, tc := range map[string]struct {
		edit func(c *config.Config)
		want string
	}{
		"no grpc":       {func(c *config.Config) { c.Chain.GRPC = "" }, "chain.grpc"},
		"backend":       {func(c *config.Config) { c.Key.Backend = "memory" }, "keyring_backend"},
		"endpoint":      {func(c *config.Config) { c.Node.Endpoint = "ftp://x" }, "node.endpoint"},
		"workload":      {func(c *config.Config) { c.Node.Workloads = []string{"MINING"} }, "node.workloads"},
		"ask":           {func(c *config.Config) { c.Node.AskPerGPUHour = "-1" }, "ask_per_gpu_hour"},
		"bond":          {func(c *config.Config) { c.Bond.Amount = "lots" }, "bond.amount"},
		"solver":        {func(c *config.Config) { c.PoCP.Solver = "magic" }, "pocp.solver"},
		"external path": {func(c *config.Config) { c.PoCP.Solver = "external" }, "pocp.external"},
	} {
		c := config.Default(home)
		tc.edit(&c)
		err := c.Validate()
		require.ErrorContains(t, err, tc.want, name)
	}
	path := filepath.Join(home, "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("chain:\n  grcp: x\n"), 0o600))
	_, err := config.Load(path, home)
	require.ErrorContains(t, err, "grcp")
	classes, err := config.Default(home).Node.WorkloadClasses()
	require.NoError(t, err)
	require.Len(t, classes, 4)
}
