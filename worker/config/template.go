package config

import (
	"bytes"
	"text/template"
)

// Template is the commented configuration `flops-worker init` writes; every value is the
// default.
func Template(home string) string {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, Default(home)); err != nil {
		panic(err) // the template and Default are both ours
	}
	return b.String()
}

var tmpl = template.Must(template.New("config").Parse(`# flops-worker configuration. Flags given to "flops-worker run" override these values.

chain:
  # gRPC endpoint of a flops node (flopsd's app.toml [grpc] address).
  grpc: "{{.Chain.GRPC}}"
  # chain id; empty: read it from the node.
  chain_id: ""
  # fee per unit of gas, in udps (at least the node's minimum-gas-prices).
  gas_price: {{.Chain.GasPrice}}
  # how often the worker looks for a new block.
  poll_interval: "{{.Chain.PollInterval}}"

key:
  # the provider's account key: it bonds, registers the node and signs every tx.
  # create it with "flopsd keys add provider --keyring-backend test --home <keyring_dir>"
  name: "{{.Key.Name}}"
  keyring_backend: "{{.Key.Backend}}"
  keyring_dir: "{{.Key.Dir}}"

node:
  # id of the registered node; 0: found by its GPUs' UUIDs, or registered at the first start.
  id: 0
  region: "{{.Node.Region}}"
  # public URL of this machine's output server (job owners fetch results there).
  endpoint: "{{.Node.Endpoint}}"
  # workload classes the node accepts: TRAINING, INFERENCE, BATCH, RENDERING.
  workloads: [{{range $i, $w := .Node.Workloads}}{{if $i}}, {{end}}{{$w}}{{end}}]
  # price per GPU-hour in udps (1 DPS = 1,000,000 udps); the scheduler pays ask x GPUs x hours.
  ask_per_gpu_hour: "{{.Node.AskPerGPUHour}}"
  # claimed power in GFLOP/s; 0: measured with the PoCP solver at the first start.
  claimed_gflops: 0
  # >0: register that many mock A100 GPUs when the machine has none (demos and tests only).
  mock_gpus: 0
  # true: ignore the machine's GPUs (NVML not opened); with mock_gpus, a second demo worker.
  no_nvml: false

bond:
  # collateral (udps) the worker keeps bonded; the chain requires a minimum per GPU, and each
  # task in flight reserves 20x its value of it (x/market result_penalty_multiple).
  amount: "{{.Bond.Amount}}"

executor:
  # each task runs in work_dir/tasks/<id> (inputs, outputs, checkpoints).
  work_dir: "{{.Executor.WorkDir}}"
  # docker or podman for CONTAINER jobs; empty: whichever is installed.
  container_runtime: ""
  # gateway for ipfs:// inputs, e.g. https://ipfs.io
  ipfs_gateway: ""
  # CPU threads for BUILTIN workloads.
  workers: {{.Executor.Workers}}
  # tasks at once; 0: one per GPU.
  max_tasks: 0

pocp:
  # "go" (the CPU solver) or "external" (a GPU solver speaking docs/pocp.md section 9).
  solver: "{{.PoCP.Solver}}"
  external: ""
  external_args: []
  workers: {{.PoCP.Workers}}
  timeout: "{{.PoCP.Timeout}}"

bidder:
  # bid in AUCTION jobs the node can run.
  enabled: {{.Bidder.Enabled}}
  # an executable that prices offers (the offer as JSON on stdin, {"price":"..","quantity":N} on stdout);
  # empty: ask per GPU-hour (per_gpu_hour by GPU class, else node.ask_per_gpu_hour) x GPUs x hours.
  script: ""
  per_gpu_hour: {}
  # +5% per tenth of the node's GPUs already in use.
  load_markup_ppm: {{.Bidder.LoadMarkupPPM}}

pools:
  # pool ids to join; auto joins every open pool the node is eligible for.
  join: []
  auto: {{.Pools.Auto}}
  # units claimed and not yet revealed at once.
  max_claims: {{.Pools.MaxClaims}}

outputs:
  # where the output server listens (served to each job's owner only, requests signed by its key).
  listen: "{{.Outputs.Listen}}"
  public_url: ""
  # also PUT checkpoints to <url>/<sha256> (a store that outlives this machine); empty: served here only.
  checkpoint_upload_url: ""

telemetry:
  # Prometheus /metrics, /healthz and /readyz.
  listen: "{{.Telemetry.Listen}}"
  sample_every: "{{.Telemetry.SampleEvery}}"

# the worker's own state (results awaiting reveal), kept across restarts.
state_dir: "{{.StateDir}}"
`))
