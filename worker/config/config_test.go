package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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

// Render writes every field: a config with no default value left loads back exactly.
func TestRenderLoadsBack(t *testing.T) {
	home := t.TempDir()
	c := config.Default(home)
	c.Chain = config.Chain{GRPC: "node.example:9090", ChainID: "flops-1", GasPrice: 0.025, PollInterval: config.Duration{Duration: 400 * time.Millisecond}}
	c.Key = config.Key{Name: "p \"2\"", Backend: "file", Dir: filepath.Join(home, "keys")}
	c.Node = config.Node{ID: 7, Region: "eu-west", Endpoint: "https://gpu.example:8470", Workloads: []string{"TRAINING"}, Runtimes: []string{"BUILTIN", "PROCESS"},
		AskPerGPUHour: "2500000", ClaimedGflops: 900, DiskMiBPerGPU: 512 << 10, MockGPUs: 2, NoNVML: true}
	c.Bond.Amount = "500000000"
	c.Executor = config.Executor{WorkDir: filepath.Join(home, "w"), ContainerRuntime: "podman", IPFSGateway: "https://ipfs.io", Workers: 8, MaxTasks: 3,
		PrivateInputs: true, RegistryLogins: []string{"docker.io", "registry.example:5000"}, ImageCacheGiB: 7, InputCacheGiB: 9, Sandbox: config.Sandbox{Network: true, MemoryMiBPerGPU: 4096, CPUsPerGPU: 2, Processes: 100, ReadOnly: []string{"/usr", "/etc"}, MaxFileMiB: 1024, Cgroup: "/sys/fs/cgroup/flops"}}
	c.PoCP = config.PoCP{Solver: "external", External: "/usr/bin/flops-gpu-solver", ExternalArgs: []string{"--device", "0"}, Workers: 4,
		Timeout: config.Duration{Duration: time.Minute}}
	c.Bidder = config.Bidder{Enabled: false, Script: "/bin/price", PerGPUHour: map[string]string{"A100-40GB": "1200000", "H100-80GB": "2000000"}, LoadMarkupPPM: 1}
	c.Pools = config.Pools{Join: []uint64{3, 5}, Auto: false, MaxJoined: 3, LeaveIdleBlocks: 50, MaxClaims: 9}
	c.Outputs = config.Outputs{Listen: "0.0.0.0:8470", PublicURL: "https://gpu.example", CheckpointUploadURL: "https://store.example/ckpt",
		TLSCert: "/etc/flops/cert.pem", TLSKey: "/etc/flops/key.pem", Retention: config.Duration{Duration: 36 * time.Hour}}
	c.Chain.TLS, c.Chain.TLSCA = true, "/etc/flops/ca.pem"
	c.Telemetry.Listen, c.Telemetry.SampleEvery = "0.0.0.0:9470", config.Duration{Duration: 5 * time.Second}
	c.StateDir = filepath.Join(home, "s")
	c.Cheat = config.CheatBuild
	path := filepath.Join(home, "worker.yaml")
	require.NoError(t, os.WriteFile(path, []byte(config.Render(c)), 0o600))
	got, err := config.Load(path, home)
	require.NoError(t, err)
	require.Equal(t, c, got)
}

// A bad value is refused with the field's name; an unknown field is an error.
func TestValidate(t *testing.T) {
	home := t.TempDir()
	for name, tc := range map[string]struct {
		edit func(c *config.Config)
		want string
	}{
		"no grpc":        {func(c *config.Config) { c.Chain.GRPC = "" }, "chain.grpc"},
		"backend":        {func(c *config.Config) { c.Key.Backend = "memory" }, "keyring_backend"},
		"endpoint":       {func(c *config.Config) { c.Node.Endpoint = "ftp://x" }, "node.endpoint"},
		"workload":       {func(c *config.Config) { c.Node.Workloads = []string{"MINING"} }, "node.workloads"},
		"ask":            {func(c *config.Config) { c.Node.AskPerGPUHour = "-1" }, "ask_per_gpu_hour"},
		"disk low":       {func(c *config.Config) { c.Node.DiskMiBPerGPU = 1023 }, "node.disk_mib_per_gpu"},
		"disk high":      {func(c *config.Config) { c.Node.DiskMiBPerGPU = 16<<20 + 1 }, "node.disk_mib_per_gpu"},
		"bond":           {func(c *config.Config) { c.Bond.Amount = "lots" }, "bond.amount"},
		"solver":         {func(c *config.Config) { c.PoCP.Solver = "magic" }, "pocp.solver"},
		"external path":  {func(c *config.Config) { c.PoCP.Solver = "external" }, "pocp.external"},
		"max joined":     {func(c *config.Config) { c.Pools.MaxJoined = 0 }, "pools.max_joined"},
		"leave idle":     {func(c *config.Config) { c.Pools.LeaveIdleBlocks = -1 }, "pools.leave_idle_blocks"},
		"max claims":     {func(c *config.Config) { c.Pools.Auto, c.Pools.Join, c.Pools.MaxClaims = false, []uint64{4}, 0 }, "pools.max_claims"},
		"image cache":    {func(c *config.Config) { c.Executor.ImageCacheGiB = 1<<20 + 1 }, "executor.image_cache_gib"},
		"registry login": {func(c *config.Config) { c.Executor.RegistryLogins = []string{"https://docker.io/v2"} }, "executor.registry_logins"},
		"input cache":    {func(c *config.Config) { c.Executor.InputCacheGiB = 1<<20 + 1 }, "executor.input_cache_gib"},
		"retention":      {func(c *config.Config) { c.Outputs.Retention.Duration = -time.Hour }, "outputs.retention"},
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
	// a file written before executor.image_cache_gib existed keeps pulled images within
	// the default, not none
	require.NoError(t, os.WriteFile(path, []byte("chain:\n  grpc: x:9090\nexecutor:\n  work_dir: /w\n"), 0o600))
	old, err := config.Load(path, home)
	require.NoError(t, err)
	require.Equal(t, uint64(config.DefaultImageCacheGiB), old.Executor.ImageCacheGiB)
	require.Equal(t, uint64(config.DefaultInputCacheGiB), old.Executor.InputCacheGiB)
	require.Equal(t, config.DefaultOutputsRetention, old.Outputs.Retention.Duration)
	classes, err := config.Default(home).Node.WorkloadClasses()
	require.NoError(t, err)
	require.Len(t, classes, 4)
}

// Only a test build can cheat: a production worker refuses a config that asks it to.
func TestCheatOnlyInTestBuilds(t *testing.T) {
	c := config.Default(t.TempDir())
	c.Cheat = true
	err := c.Validate()
	if config.CheatBuild {
		require.NoError(t, err)
		return
	}
	require.ErrorContains(t, err, "cheat: only a test build")
}

// The file keyring's passphrase comes from the environment or from a file no one else
// can read; the test keyring needs none.
func TestKeyringPassphrase(t *testing.T) {
	home := t.TempDir()
	k := config.Default(home).Key
	require.Equal(t, "file", k.Backend, "the default keyring is encrypted")
	t.Setenv(config.PassphraseEnv, "")
	_, err := k.Passphrase()
	require.ErrorContains(t, err, "flops-worker init creates it")
	require.NoError(t, os.WriteFile(k.PassphraseFile, []byte("s3cret-passphrase\n"), 0o644))
	_, err = k.Passphrase()
	require.ErrorContains(t, err, "lets others read it")
	require.NoError(t, os.Chmod(k.PassphraseFile, 0o600))
	p, err := k.Passphrase()
	require.NoError(t, err)
	require.Equal(t, "s3cret-passphrase", p)
	t.Setenv(config.PassphraseEnv, "from-the-environment")
	p, err = k.Passphrase()
	require.NoError(t, err)
	require.Equal(t, "from-the-environment", p)
	k.Backend = "test"
	p, err = k.Passphrase()
	require.NoError(t, err)
	require.Empty(t, p)
}
