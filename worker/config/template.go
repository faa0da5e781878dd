package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"text/template"
)

// Template is the commented configuration `flops-worker init` writes; every value is the
// default.
func Template(home string) string { return Render(Default(home)) }

// Render is the commented configuration file holding c: every field is written, so the
// file loads back to exactly c.
func Render(c Config) string {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, c); err != nil {
		panic(err) // the template and Config are both ours
	}
	return b.String()
}

// yamlValue writes v as JSON, which YAML reads as is: strings quoted and escaped, lists
// and maps in flow style (empty, not null, when nil), durations as their strings.
func yamlValue(v any) (string, error) {
	if s, ok := v.(fmt.Stringer); ok {
		v = s.String()
	}
	if rv := reflect.ValueOf(v); (rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map) && rv.Len() == 0 {
		if rv.Kind() == reflect.Slice {
			return "[]", nil
		}
		return "{}", nil
	}
	bz, err := json.Marshal(v)
	return string(bz), err
}

var tmpl = template.Must(template.New("config").Funcs(template.FuncMap{"y": yamlValue}).Parse(`# flops-worker configuration. Flags given to "flops-worker run" override these values.

chain:
  # gRPC endpoint of a flops node (flopsd's app.toml [grpc] address).
  grpc: {{y .Chain.GRPC}}
  # chain id; empty: read it from the node.
  chain_id: {{y .Chain.ChainID}}
  # connect over TLS (a node on another machine); tls_ca: PEM certificates to trust (empty: the system's).
  tls: {{y .Chain.TLS}}
  tls_ca: {{y .Chain.TLSCA}}
  # fee per unit of gas, in udps (at least the node's minimum-gas-prices).
  gas_price: {{y .Chain.GasPrice}}
  # how often the worker looks for a new block.
  poll_interval: {{y .Chain.PollInterval}}

key:
  # the provider's account key: it bonds, registers the node and signs every tx.
  # "flops-worker init" creates it in an encrypted file keyring, with a random passphrase in
  # passphrase_file (or set FLOPS_KEYRING_PASSPHRASE). Back up keyring_dir and the
  # passphrase (or the mnemonic init prints) somewhere else: they are the provider's funds.
  # keyring_backend: file (encrypted), os (the system keychain), or test (unencrypted:
  # local chains and the demo only).
  name: {{y .Key.Name}}
  keyring_backend: {{y .Key.Backend}}
  keyring_dir: {{y .Key.Dir}}
  passphrase_file: {{y .Key.PassphraseFile}}

node:
  # id of the registered node; 0: found by its GPUs' UUIDs, or registered at the first start.
  id: {{y .Node.ID}}
  region: {{y .Node.Region}}
  # public URL of this machine's output server (job owners fetch results there).
  endpoint: {{y .Node.Endpoint}}
  # workload classes the node accepts: TRAINING, INFERENCE, BATCH, RENDERING.
  workloads: {{y .Node.Workloads}}
  # runtimes the node accepts: BUILTIN (flops' own workloads), CONTAINER (an image pinned by
  # digest, run by podman or docker without a network), PROCESS (the job's own command, run
  # in a bubblewrap sandbox on this machine: add it only if you accept that).
  runtimes: {{y .Node.Runtimes}}
  # price per GPU-hour in udps (1 DPS = 1,000,000 udps); the scheduler pays ask x GPUs x hours.
  ask_per_gpu_hour: {{y .Node.AskPerGPUHour}}
  # claimed power in GFLOP/s; 0: measured with the PoCP solver at the first start.
  claimed_gflops: {{y .Node.ClaimedGflops}}
  # disk (MiB) the node offers a task for each GPU, for jobs that name theirs
  # (requirements.disk_mib_per_gpu); 0: none, and the node takes only jobs that name none
  # (they may fill the market's task_disk_mib_per_gpu). work_dir needs that much free per GPU.
  disk_mib_per_gpu: {{y .Node.DiskMiBPerGPU}}
  # >0: register that many mock A100 GPUs when the machine has none (demos and tests only).
  mock_gpus: {{y .Node.MockGPUs}}
  # true: ignore the machine's GPUs (NVML not opened); with mock_gpus, a second demo worker.
  no_nvml: {{y .Node.NoNVML}}

bond:
  # collateral (udps) the worker keeps bonded; the chain requires a minimum per GPU, and each
  # task in flight reserves 20x its value of it (x/market result_penalty_multiple).
  amount: {{y .Bond.Amount}}

executor:
  # each task runs in work_dir/tasks/<id> (inputs, outputs, checkpoints).
  work_dir: {{y .Executor.WorkDir}}
  # docker or podman for CONTAINER jobs; empty: whichever is installed.
  container_runtime: {{y .Executor.ContainerRuntime}}
  # gateway for ipfs:// inputs, e.g. https://ipfs.io
  ipfs_gateway: {{y .Executor.IPFSGateway}}
  # CPU threads for BUILTIN workloads.
  workers: {{y .Executor.Workers}}
  # tasks at once; 0: one per GPU.
  max_tasks: {{y .Executor.MaxTasks}}
  # let jobs fetch inputs, and name container images, at loopback, private and link-local
  # addresses (your own network).
  private_inputs: {{y .Executor.PrivateInputs}}
  # registries whose logins (docker login, podman login) may read a job's image before
  # it is pulled, e.g. [docker.io] for Docker Hub's higher rate limits, once the registry
  # shows it serves the image without a login; elsewhere images are read anonymously, so
  # that no job runs a private image by your login.
  registry_logins: {{y .Executor.RegistryLogins}}
  # true lets a job run any image docker or podman holds under the name it gives, your
  # own builds (localhost/...) and private pulls included: for a local chain only. false:
  # a held image runs if the worker pulled it for a task or its registry serves it
  # without a login.
  local_images: {{y .Executor.LocalImages}}
  # container images pulled for tasks stay for later tasks up to this many GiB (their size
  # in docker's or podman's storage), the least recently used removed first; 0 removes
  # each after its task. Images you pulled yourself are never removed.
  image_cache_gib: {{y .Executor.ImageCacheGiB}}
  # inputs and checkpoints downloaded for tasks stay in work_dir/cache for later tasks up
  # to this many GiB, the least recently used (and unused for an hour) removed first; 0
  # keeps them all.
  input_cache_gib: {{y .Executor.InputCacheGiB}}
  # PROCESS tasks run in a bubblewrap sandbox (apt-get install bubblewrap): their own
  # namespaces, a read-only view of read_only, their own directories and GPUs only, as
  # nobody when the worker runs as root. CONTAINER tasks get the same limits.
  sandbox:
    # give tasks the machine's network.
    network: {{y .Executor.Sandbox.Network}}
    # memory per GPU of the task (MiB); 0: the machine's memory / its GPUs.
    memory_mib_per_gpu: {{y .Executor.Sandbox.MemoryMiBPerGPU}}
    # CPUs per GPU of a CONTAINER task; 0: the machine's CPUs / its GPUs.
    cpus_per_gpu: {{y .Executor.Sandbox.CPUsPerGPU}}
    # processes and threads of a task; 0: 4096.
    processes: {{y .Executor.Sandbox.Processes}}
    # system directories a PROCESS task sees, read-only; []: /usr /bin /sbin /lib /lib32 /lib64 /etc /opt.
    read_only: {{y .Executor.Sandbox.ReadOnly}}
    # largest file a PROCESS task may write (MiB); 0: no bound.
    max_file_mib: {{y .Executor.Sandbox.MaxFileMiB}}
    # a cgroup v2 directory delegated to the worker (systemd: Delegate=yes, or one made and
    # chowned for it): each PROCESS task then gets its own cgroup under it with memory, pids
    # and CPU limits, killed as a whole when the task ends; empty: rlimits only.
    cgroup: {{y .Executor.Sandbox.Cgroup}}

pocp:
  # "auto": on a machine with NVIDIA GPUs, the GPU solver (external below, else
  # flops-gpu-solver next to flops-worker or in PATH: make gpu-solver builds it with the
  # CUDA toolkit), spread over the node's GPUs, the CPU solver if it fails; the CPU solver
  # where there is no GPU. "go": the CPU solver. "external": the program below (a solver
  # speaking docs/pocp.md section 9). PoCP challenges and BUILTIN gemm tasks use it.
  solver: {{y .PoCP.Solver}}
  external: {{y .PoCP.External}}
  external_args: {{y .PoCP.ExternalArgs}}
  workers: {{y .PoCP.Workers}}
  timeout: {{y .PoCP.Timeout}}

bidder:
  # bid in AUCTION jobs the node can run.
  enabled: {{y .Bidder.Enabled}}
  # an executable that prices offers (the offer as JSON on stdin, {"price":"..","quantity":N} on stdout);
  # empty: ask per GPU-hour (per_gpu_hour by GPU class, else node.ask_per_gpu_hour) x GPUs x hours.
  script: {{y .Bidder.Script}}
  per_gpu_hour: {{y .Bidder.PerGPUHour}}
  # +5% per tenth of the node's GPUs already in use.
  load_markup_ppm: {{y .Bidder.LoadMarkupPPM}}

pools:
  # pool ids to join; auto joins the open pools the node is eligible for that have work
  # posted (open units), while fewer than max_joined of its pools have work (each join is
  # a tx you pay for), and leaves a pool idle for leave_idle_blocks (0: never).
  join: {{y .Pools.Join}}
  auto: {{y .Pools.Auto}}
  max_joined: {{y .Pools.MaxJoined}}
  leave_idle_blocks: {{y .Pools.LeaveIdleBlocks}}
  # units claimed and not yet revealed at once.
  max_claims: {{y .Pools.MaxClaims}}

outputs:
  # where the output server listens (served to each job's owner only, requests signed by its key).
  listen: {{y .Outputs.Listen}}
  public_url: {{y .Outputs.PublicURL}}
  # serve over HTTPS with this certificate and key (PEM); node.endpoint is then https://.
  tls_cert: {{y .Outputs.TLSCert}}
  tls_key: {{y .Outputs.TLSKey}}
  # also PUT checkpoints to <url>/<sha256> (a store that outlives this machine); empty: served here only.
  checkpoint_upload_url: {{y .Outputs.CheckpointUploadURL}}
  # how long a task's outputs and logs stay for its owner to fetch after its run ends (then
  # removed, checked hourly); 0 keeps them for good.
  retention: {{y .Outputs.Retention}}

telemetry:
  # Prometheus /metrics, /healthz and /readyz.
  listen: {{y .Telemetry.Listen}}
  sample_every: {{y .Telemetry.SampleEvery}}

beacon:
  # drand relay: with the chain's drand beacon on, put the rounds it awaits on chain (any
  # account may; the signature is checked, not the sender). Each entry is a drand HTTP API
  # with the chain hash, tried in order, e.g. for quicknet:
  # ["https://api.drand.sh/52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971"]
  # empty: no relay.
  drand_urls: {{y .Beacon.DrandURLs}}

# the worker's own state (results awaiting reveal), kept across restarts.
state_dir: {{y .StateDir}}
{{- if .Cheat}}
# commit wrong results: tests of the chain's verification only, the node WILL be slashed.
cheat: true
{{- end}}
`))
