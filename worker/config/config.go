// Package config is flops-worker's configuration: one YAML file (written commented by
// `flops-worker init`), which command-line flags override.
package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"sigs.k8s.io/yaml"

	sdkmath "cosmossdk.io/math"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// Config is the whole worker configuration.
type Config struct {
	Chain     Chain     `json:"chain"`
	Key       Key       `json:"key"`
	Node      Node      `json:"node"`
	Bond      Bond      `json:"bond"`
	Executor  Executor  `json:"executor"`
	PoCP      PoCP      `json:"pocp"`
	Bidder    Bidder    `json:"bidder"`
	Pools     Pools     `json:"pools"`
	Outputs   Outputs   `json:"outputs"`
	Telemetry Telemetry `json:"telemetry"`
	Beacon    Beacon    `json:"beacon"`
	// Cheat makes the worker commit wrong results: for tests of the chain's verification
	// only, and only in a test build (CheatBuild); Validate refuses it otherwise.
	Cheat bool `json:"cheat,omitempty"`
	// StateDir keeps the worker's own state (task results and salts awaiting reveal) so a
	// restart can finish what it committed to.
	StateDir string `json:"state_dir"`
}

// Chain: the node the worker talks to.
type Chain struct {
	GRPC string `json:"grpc"`
	// TLS connects to the node's gRPC over TLS (a node elsewhere); TLSCA is a PEM file of
	// the certificates to trust (empty: the system's).
	TLS      bool    `json:"tls"`
	TLSCA    string  `json:"tls_ca,omitempty"`
	ChainID  string  `json:"chain_id,omitempty"`
	GasPrice float64 `json:"gas_price"`
	// PollInterval between looks at the chain's height.
	PollInterval Duration `json:"poll_interval"`
}

// Key: the provider's account key.
type Key struct {
	Name string `json:"name"`
	// Backend is "file" (encrypted with a passphrase: the default), "os" (the system's
	// keychain) or "test" (unencrypted: the demo and local chains only).
	Backend string `json:"keyring_backend"`
	Dir     string `json:"keyring_dir"`
	// PassphraseFile holds the "file" keyring's passphrase (mode 0600 or stricter); the
	// environment variable PassphraseEnv, when set, is used instead.
	PassphraseFile string `json:"passphrase_file,omitempty"`
}

// PassphraseEnv names the environment variable that can hold the file keyring's
// passphrase instead of key.passphrase_file.
const PassphraseEnv = "FLOPS_KEYRING_PASSPHRASE"

// Passphrase is the "file" keyring's passphrase: PassphraseEnv, else the first line of
// PassphraseFile, which no one but its owner may read. Other backends have none ("").
func (k Key) Passphrase() (string, error) {
	if k.Backend != "file" {
		return "", nil
	}
	if v := os.Getenv(PassphraseEnv); v != "" {
		return v, nil
	}
	if k.PassphraseFile == "" {
		return "", fmt.Errorf("key.passphrase_file: required with the file keyring (or set %s)", PassphraseEnv)
	}
	st, err := os.Stat(k.PassphraseFile)
	if err != nil {
		return "", fmt.Errorf("key.passphrase_file: %w (flops-worker init creates it)", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("key.passphrase_file %s: mode %s lets others read it: chmod 600 %s", k.PassphraseFile, st.Mode().Perm(), k.PassphraseFile)
	}
	bz, err := os.ReadFile(k.PassphraseFile)
	if err != nil {
		return "", fmt.Errorf("key.passphrase_file: %w", err)
	}
	line, _, _ := strings.Cut(string(bz), "\n")
	return strings.TrimSpace(line), nil
}

// Node: what the worker registers.
type Node struct {
	// ID of the node once registered (0: find it by the GPUs' UUIDs, or register one).
	ID        uint64   `json:"id,omitempty"`
	Region    string   `json:"region"`
	Endpoint  string   `json:"endpoint"`
	Workloads []string `json:"workloads"`
	// Runtimes the node accepts: BUILTIN, CONTAINER, PROCESS. PROCESS runs a job's own
	// command on this machine (in the executor's sandbox): list it only to opt in.
	Runtimes []string `json:"runtimes"`
	// AskPerGPUHour in udps.
	AskPerGPUHour string `json:"ask_per_gpu_hour"`
	// ClaimedGflops: 0 runs the benchmark at the first start.
	ClaimedGflops uint64 `json:"claimed_gflops"`
	// DiskMiBPerGPU is the disk the node offers a task for each GPU it takes, for jobs
	// that name their disk (requirements.disk_mib_per_gpu): 0 offers none, and the node
	// takes only the jobs that name none (held to the market's task_disk_mib_per_gpu).
	// The work directory needs that much free for each GPU; a declaration the disk
	// cannot hold fails the jobs that count on it here, and their failure reports are
	// refuted by runs elsewhere.
	DiskMiBPerGPU uint64 `json:"disk_mib_per_gpu,omitempty"`
	// MockGPUs > 0 registers that many mock A100 GPUs when the machine has none (demos,
	// tests); 0 uses what NVML sees.
	MockGPUs int `json:"mock_gpus,omitempty"`
	// NoNVML ignores the machine's GPUs (a second worker on a GPU machine in a demo: the
	// chain refuses a GPU UUID registered twice).
	NoNVML bool `json:"no_nvml,omitempty"`
}

// Bond: collateral management.
type Bond struct {
	// Amount (udps) the worker keeps bonded: it bonds the difference at start.
	Amount string `json:"amount"`
}

// Executor: running tasks.
type Executor struct {
	WorkDir          string `json:"work_dir"`
	ContainerRuntime string `json:"container_runtime,omitempty"`
	IPFSGateway      string `json:"ipfs_gateway,omitempty"`
	Workers          int    `json:"workers"`
	// MaxTasks running at once (0: one per GPU).
	MaxTasks int `json:"max_tasks,omitempty"`
	// Sandbox confines PROCESS tasks and limits CONTAINER ones.
	Sandbox Sandbox `json:"sandbox"`
	// PrivateInputs lets jobs fetch inputs, and name container images (whose manifests
	// the worker reads before a pull), at loopback, private and link-local addresses (a
	// provider's own network): off by default.
	PrivateInputs bool `json:"private_inputs"`
	// RegistryLogins are the registries (host or host:port; "docker.io" for Docker Hub)
	// whose logins in the docker and podman login files may read a job's image before its
	// pull, once the registry shows it serves the image without a login; elsewhere it is
	// read anonymously, so that a job cannot run a private image by the provider's login.
	// Empty: none.
	RegistryLogins []string `json:"registry_logins,omitempty"`
	// LocalImages lets a job run any image docker or podman holds under the name the job
	// gives (your own builds on localhost/ and your own pulls included); without it such
	// an image runs only if the worker pulled it for a task or its registry serves it
	// without a login. For a local chain, or a machine whose images are all public.
	LocalImages bool `json:"local_images,omitempty"`
	// ImageCacheGiB bounds the container images the worker pulled for tasks that it keeps
	// for later tasks (their size in the runtime's storage); past it the least recently
	// used are removed as tasks end. 0: each is removed after its task. The runtime's
	// other images are never touched.
	ImageCacheGiB uint64 `json:"image_cache_gib"`
	// InputCacheGiB bounds the inputs and checkpoints kept for later tasks; past it the
	// least recently used (and unused for an hour) are removed as tasks end. 0: no bound.
	InputCacheGiB uint64 `json:"input_cache_gib"`
}

// DefaultInputCacheGiB is executor.input_cache_gib when the file does not set it.
const DefaultInputCacheGiB = 200

// DefaultImageCacheGiB is executor.image_cache_gib when the file does not set it.
const DefaultImageCacheGiB = 100

// maxCacheGiB bounds executor.image_cache_gib and input_cache_gib (1 PiB).
const maxCacheGiB = 1 << 20

// Sandbox: limits of a task (executor.Sandbox).
type Sandbox struct {
	// Network gives tasks the machine's network (default: none).
	Network bool `json:"network"`
	// MemoryMiBPerGPU bounds a task's memory per GPU (0: the machine's memory / GPUs).
	MemoryMiBPerGPU uint64 `json:"memory_mib_per_gpu"`
	// CPUsPerGPU bounds a task's CPUs per GPU: a CONTAINER task's always, a PROCESS task's
	// with a cgroup (0: the machine's CPUs / GPUs).
	CPUsPerGPU uint64 `json:"cpus_per_gpu"`
	// Processes bounds a task's processes and threads (0: 4096).
	Processes uint64 `json:"processes"`
	// ReadOnly are the system directories a PROCESS task sees (empty: /usr, /bin, /sbin,
	// /lib, /lib32, /lib64, /etc, /opt).
	ReadOnly []string `json:"read_only"`
	// MaxFileMiB bounds the size of any file a PROCESS task writes (0: none).
	MaxFileMiB uint64 `json:"max_file_mib"`
	// Cgroup is a cgroup v2 directory delegated to the worker: each PROCESS task then gets
	// a cgroup of its own under it with memory, pids and CPU limits (empty: rlimits only).
	Cgroup string `json:"cgroup,omitempty"`
}

// PoCP: the challenge solver, which BUILTIN gemm tasks use too.
type PoCP struct {
	// Solver is "auto" (the GPU solver where NVML lists GPUs and one is found, the CPU
	// solver otherwise: daemon.Solver), "go" (the CPU solver) or "external" (External).
	Solver       string   `json:"solver"`
	External     string   `json:"external,omitempty"`
	ExternalArgs []string `json:"external_args,omitempty"`
	Workers      int      `json:"workers"`
	Timeout      Duration `json:"timeout"`
}

// Bidder: auctions.
type Bidder struct {
	Enabled bool `json:"enabled"`
	// Script prices offers when set (JSON in, JSON out); else the ask policy.
	Script        string            `json:"script,omitempty"`
	PerGPUHour    map[string]string `json:"per_gpu_hour,omitempty"`
	LoadMarkupPPM uint64            `json:"load_markup_ppm"`
}

// Pools: POOL mode.
type Pools struct {
	// Join lists pool ids to join; Auto joins the open pools the node is eligible for
	// that have work posted (open units), while fewer than MaxJoined of its pools have.
	Join []uint64 `json:"join,omitempty"`
	Auto bool     `json:"auto"`
	// MaxJoined bounds the pools with work Auto keeps the node in (each a join paid for,
	// and read every block); the pools in Join are joined beside them.
	MaxJoined int `json:"max_joined"`
	// LeaveIdleBlocks: Auto leaves a pool that has had no work for this many blocks (its
	// credits withdrawn), and joins it again when work comes; 0: never.
	LeaveIdleBlocks int64 `json:"leave_idle_blocks"`
	// MaxClaims in flight at once.
	MaxClaims int `json:"max_claims"`
}

// Outputs: the output server.
type Outputs struct {
	Listen string `json:"listen"`
	// PublicURL is how job owners reach it (the node's endpoint by default).
	PublicURL string `json:"public_url,omitempty"`
	// TLSCert and TLSKey (PEM files) serve the outputs over HTTPS; the node's endpoint is
	// then an https URL.
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	// CheckpointUploadURL (optional): checkpoints are also PUT to <url>/<sha256>, so the
	// node that takes a task over can resume it even when this machine is gone.
	CheckpointUploadURL string `json:"checkpoint_upload_url,omitempty"`
	// Retention is how long a task's stored outputs and logs are kept for its owner after
	// its run ends (then forgotten, checked hourly); 0 keeps them for good.
	Retention Duration `json:"retention"`
}

// DefaultOutputsRetention is outputs.retention when the file does not set it.
const DefaultOutputsRetention = 7 * 24 * time.Hour

// Beacon: the drand relay. With the chain's drand beacon on (x/gfl params.drand), the
// draws of a block wait until someone puts the drand round bound to it on chain; the
// worker does it for the rounds the chain awaits, fetched from DrandURLs (each a drand
// HTTP API base with the chain's hash, e.g.
// https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971
// for quicknet; tried in order) and checked against the chain's group key before sending.
// Empty: no relay (a local chain, which cannot reach drand, keeps drand off).
type Beacon struct {
	DrandURLs []string `json:"drand_urls"`
}

// Telemetry: metrics and health.
type Telemetry struct {
	Listen        string   `json:"listen"`
	SampleEvery   Duration `json:"sample_every"`
	DisableNVMLUp bool     `json:"-"`
}

// Duration is a time.Duration written as "1s" in YAML.
type Duration struct{ time.Duration }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := time.ParseDuration(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// Default is the configuration `init` writes.
func Default(home string) Config {
	return Config{
		Chain: Chain{GRPC: "localhost:9090", GasPrice: 0, PollInterval: Duration{250 * time.Millisecond}},
		Key:   Key{Name: "provider", Backend: "file", Dir: filepath.Join(home, "keyring"), PassphraseFile: filepath.Join(home, "keyring-passphrase")},
		Node:  Node{Region: "local", Endpoint: "http://127.0.0.1:8470", Workloads: []string{"TRAINING", "INFERENCE", "BATCH", "RENDERING"}, Runtimes: []string{"BUILTIN", "CONTAINER"}, AskPerGPUHour: "1000000"},
		Bond:  Bond{Amount: "100000000"},
		Executor: Executor{WorkDir: filepath.Join(home, "work"), Workers: 2, Sandbox: Sandbox{ReadOnly: []string{}}, RegistryLogins: []string{},
			ImageCacheGiB: DefaultImageCacheGiB, InputCacheGiB: DefaultInputCacheGiB},
		PoCP:      PoCP{Solver: "auto", Workers: 2, Timeout: Duration{10 * time.Minute}, ExternalArgs: []string{}},
		Bidder:    Bidder{Enabled: true, LoadMarkupPPM: 50_000, PerGPUHour: map[string]string{}},
		Pools:     Pools{Auto: true, MaxJoined: 8, LeaveIdleBlocks: 600, MaxClaims: 4, Join: []uint64{}},
		Outputs:   Outputs{Listen: "127.0.0.1:8470", Retention: Duration{DefaultOutputsRetention}},
		Telemetry: Telemetry{Listen: "127.0.0.1:9470", SampleEvery: Duration{time.Second}},
		Beacon:    Beacon{DrandURLs: []string{}},
		StateDir:  filepath.Join(home, "state"),
	}
}

// Load reads a YAML config file over the defaults.
func Load(path, home string) (Config, error) {
	c := Default(home)
	bz, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(bz, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, c.Validate()
}

// Validate checks the configuration, naming the first bad field.
func (c Config) Validate() error {
	var errs []error
	if c.Chain.GRPC == "" {
		errs = append(errs, errors.New("chain.grpc: required"))
	}
	if c.Cheat && !CheatBuild {
		errs = append(errs, errors.New("cheat: only a test build of flops-worker (-tags flopscheat) can cheat"))
	}
	if c.Chain.PollInterval.Duration <= 0 {
		errs = append(errs, errors.New("chain.poll_interval: must be positive"))
	}
	if c.Key.Name == "" {
		errs = append(errs, errors.New("key.name: required"))
	}
	switch c.Key.Backend {
	case "test", "file", "os":
	default:
		errs = append(errs, fmt.Errorf("key.keyring_backend %q: test, file or os", c.Key.Backend))
	}
	if u, err := url.Parse(c.Node.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("node.endpoint %q: an http(s) URL", c.Node.Endpoint))
	}
	if _, err := c.Node.WorkloadClasses(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.Node.RuntimeList(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range c.Beacon.DrandURLs {
		if u, err := url.Parse(d); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("beacon.drand_urls %q: an http(s) URL of a drand API with the chain hash", d))
		}
	}
	if (c.Outputs.TLSCert == "") != (c.Outputs.TLSKey == "") {
		errs = append(errs, errors.New("outputs.tls_cert and outputs.tls_key: both or neither"))
	}
	if c.Outputs.TLSCert != "" && !strings.HasPrefix(c.Node.Endpoint, "https://") {
		errs = append(errs, fmt.Errorf("node.endpoint %q: must be https:// when outputs.tls_cert is set", c.Node.Endpoint))
	}
	if c.Chain.TLSCA != "" && !c.Chain.TLS {
		errs = append(errs, errors.New("chain.tls_ca: set chain.tls too"))
	}
	for _, ro := range c.Executor.Sandbox.ReadOnly {
		if !filepath.IsAbs(ro) || filepath.Clean(ro) == "/" {
			errs = append(errs, fmt.Errorf("executor.sandbox.read_only %q: an absolute directory other than /", ro))
		}
	}
	if d := c.Node.DiskMiBPerGPU; d != 0 && (d < gfltypes.MinDiskMiBPerGPU || d > gfltypes.MaxDiskMiBPerGPU) {
		errs = append(errs, fmt.Errorf("node.disk_mib_per_gpu %d: 0 (none offered) or %d to %d", d, gfltypes.MinDiskMiBPerGPU, gfltypes.MaxDiskMiBPerGPU))
	}
	if _, err := amount("node.ask_per_gpu_hour", c.Node.AskPerGPUHour); err != nil {
		errs = append(errs, err)
	}
	if _, err := amount("bond.amount", c.Bond.Amount); err != nil {
		errs = append(errs, err)
	}
	switch c.PoCP.Solver {
	case "auto", "go":
	case "external":
		if c.PoCP.External == "" {
			errs = append(errs, errors.New("pocp.external: required with solver external"))
		}
	default:
		errs = append(errs, fmt.Errorf("pocp.solver %q: auto, go or external", c.PoCP.Solver))
	}
	for class, v := range c.Bidder.PerGPUHour {
		if _, err := amount("bidder.per_gpu_hour."+class, v); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Pools.Auto && c.Pools.MaxJoined < 1 {
		errs = append(errs, fmt.Errorf("pools.max_joined %d: at least 1 with pools.auto (or auto: false)", c.Pools.MaxJoined))
	}
	if c.Pools.LeaveIdleBlocks < 0 {
		errs = append(errs, fmt.Errorf("pools.leave_idle_blocks %d: 0 (never) or more", c.Pools.LeaveIdleBlocks))
	}
	if (c.Pools.Auto || len(c.Pools.Join) > 0) && c.Pools.MaxClaims < 1 {
		errs = append(errs, fmt.Errorf("pools.max_claims %d: at least 1 when the node takes part in pools", c.Pools.MaxClaims))
	}
	for _, h := range c.Executor.RegistryLogins {
		if _, err := name.NewRegistry(h, name.StrictValidation); err != nil || h == "" || strings.ContainsAny(h, "/@") {
			errs = append(errs, fmt.Errorf("executor.registry_logins %q: a registry's host or host:port (docker.io for Docker Hub)", h))
		}
	}
	if c.Executor.ImageCacheGiB > maxCacheGiB {
		errs = append(errs, fmt.Errorf("executor.image_cache_gib %d: at most %d", c.Executor.ImageCacheGiB, maxCacheGiB))
	}
	if c.Outputs.Retention.Duration < 0 {
		errs = append(errs, fmt.Errorf("outputs.retention %s: 0 (for good) or more", c.Outputs.Retention.Duration))
	}
	if c.Executor.InputCacheGiB > maxCacheGiB {
		errs = append(errs, fmt.Errorf("executor.input_cache_gib %d: at most %d", c.Executor.InputCacheGiB, maxCacheGiB))
	}
	if c.Executor.WorkDir == "" || c.StateDir == "" {
		errs = append(errs, errors.New("executor.work_dir and state_dir: required"))
	}
	return errors.Join(errs...)
}

// WorkloadClasses parses node.workloads.
func (n Node) WorkloadClasses() ([]gfltypes.WorkloadClass, error) {
	var out []gfltypes.WorkloadClass
	for _, w := range n.Workloads {
		v, ok := gfltypes.WorkloadClass_value["WORKLOAD_CLASS_"+strings.ToUpper(w)]
		if !ok {
			return nil, fmt.Errorf("node.workloads: %q is not TRAINING, INFERENCE, BATCH or RENDERING", w)
		}
		out = append(out, gfltypes.WorkloadClass(v))
	}
	if len(out) == 0 {
		return nil, errors.New("node.workloads: at least one")
	}
	return out, nil
}

// AcceptsProcess says whether node.runtimes lists PROCESS.
func (n Node) AcceptsProcess() bool {
	rs, _ := n.RuntimeList()
	return slices.Contains(rs, gfltypes.RUNTIME_PROCESS)
}

// ClientTLS is the TLS configuration of the connection to the node (nil: plaintext).
func (c Chain) ClientTLS() (*tls.Config, error) {
	if !c.TLS {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("chain.tls_ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("chain.tls_ca %s: no PEM certificate in it", c.TLSCA)
		}
	}
	return conf, nil
}

// ServerTLS is the output server's TLS configuration (nil: plain HTTP).
func (o Outputs) ServerTLS() (*tls.Config, error) {
	if o.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("outputs.tls_cert/tls_key: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// RuntimeList parses node.runtimes, sorted as the chain stores them.
func (n Node) RuntimeList() ([]gfltypes.Runtime, error) {
	var out []gfltypes.Runtime
	for _, r := range n.Runtimes {
		v, ok := gfltypes.Runtime_value["RUNTIME_"+strings.ToUpper(r)]
		if !ok || v == int32(gfltypes.RUNTIME_UNSPECIFIED) {
			return nil, fmt.Errorf("node.runtimes: %q is not BUILTIN, CONTAINER or PROCESS", r)
		}
		if slices.Contains(out, gfltypes.Runtime(v)) {
			return nil, fmt.Errorf("node.runtimes: %q is listed twice", r)
		}
		out = append(out, gfltypes.Runtime(v))
	}
	if len(out) == 0 {
		return nil, errors.New("node.runtimes: at least one (BUILTIN, CONTAINER, PROCESS)")
	}
	slices.Sort(out)
	return out, nil
}

// Ask is node.ask_per_gpu_hour.
func (n Node) Ask() sdkmath.Int { a, _ := amount("", n.AskPerGPUHour); return a }

// BondAmount is bond.amount.
func (b Bond) BondAmount() sdkmath.Int { a, _ := amount("", b.Amount); return a }

func amount(field, s string) (sdkmath.Int, error) {
	a, ok := sdkmath.NewIntFromString(s)
	if !ok || a.IsNegative() {
		return sdkmath.Int{}, fmt.Errorf("%s %q: a non-negative integer of udps", field, s)
	}
	return a, nil
}
