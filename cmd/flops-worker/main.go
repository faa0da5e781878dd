// Command flops-worker is a flops provider's daemon: it sells a machine's GPUs on the
// flops market (DESIGN.md section 6).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/crypto/keyring"
	"github.com/spf13/cobra"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/daemon"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/outputs"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

func main() {
	if err := root().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

type globals struct {
	home, config, logLevel string
	logJSON                bool
}

func root() *cobra.Command {
	g := &globals{}
	cmd := &cobra.Command{
		Use:           "flops-worker",
		Short:         "Sell a machine's GPUs on the flops market",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	home, _ := os.UserHomeDir()
	cmd.PersistentFlags().StringVar(&g.home, "home", filepath.Join(home, ".flops-worker"), "the worker's directory (config, keyring, state)")
	cmd.PersistentFlags().StringVar(&g.config, "config", "", "config file (default <home>/worker.yaml)")
	cmd.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.PersistentFlags().BoolVar(&g.logJSON, "log-json", false, "JSON logs")
	cmd.AddCommand(initCmd(g), runCmd(g), inventoryCmd(g), statusCmd(g), drainCmd(g), benchmarkCmd(g), fetchCmd(g), logsCmd(g), revokeSessionsCmd(g), versionCmd())
	return cmd
}

func (g *globals) configPath() string {
	if g.config != "" {
		return g.config
	}
	return filepath.Join(g.home, "worker.yaml")
}

func (g *globals) logger() *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(g.logLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if g.logJSON {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// load reads the config and applies the flags that were set.
func (g *globals) load(cmd *cobra.Command) (config.Config, error) {
	cfg, err := config.Load(g.configPath(), g.home)
	if errors.Is(err, os.ErrNotExist) {
		// the defaults and the flags: enough to point a worker at a local chain
		fmt.Fprintf(os.Stderr, "no config at %s: using the defaults and the flags (`flops-worker init` writes a commented one)\n", g.configPath())
	} else if err != nil {
		return cfg, err
	}
	f := cmd.Flags()
	str := func(name string, dst *string) {
		if f.Changed(name) {
			*dst, _ = f.GetString(name)
		}
	}
	str("grpc", &cfg.Chain.GRPC)
	str("chain-id", &cfg.Chain.ChainID)
	str("key", &cfg.Key.Name)
	str("keyring-backend", &cfg.Key.Backend)
	str("keyring-dir", &cfg.Key.Dir)
	str("endpoint", &cfg.Node.Endpoint)
	str("region", &cfg.Node.Region)
	if f.Changed("runtimes") {
		cfg.Node.Runtimes, _ = f.GetStringSlice("runtimes")
	}
	str("ask", &cfg.Node.AskPerGPUHour)
	str("bond", &cfg.Bond.Amount)
	str("outputs-listen", &cfg.Outputs.Listen)
	str("telemetry-listen", &cfg.Telemetry.Listen)
	str("solver", &cfg.PoCP.Solver)
	str("external-solver", &cfg.PoCP.External)
	str("checkpoint-upload-url", &cfg.Outputs.CheckpointUploadURL)
	if f.Changed("mock-gpus") {
		cfg.Node.MockGPUs, _ = f.GetInt("mock-gpus")
	}
	if f.Changed("no-nvml") {
		cfg.Node.NoNVML, _ = f.GetBool("no-nvml")
	}
	if f.Changed("gas-price") {
		cfg.Chain.GasPrice, _ = f.GetFloat64("gas-price")
	}
	if f.Changed("cheat") {
		cfg.Cheat, _ = f.GetBool("cheat")
	}
	return cfg, cfg.Validate()
}

func chainFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("grpc", "", "node gRPC address (chain.grpc)")
	f.String("chain-id", "", "chain id (chain.chain_id)")
	f.Float64("gas-price", 0, "udps per gas (chain.gas_price)")
	f.String("key", "", "key name (key.name)")
	f.String("keyring-backend", "", "test, file or os (key.keyring_backend)")
	f.String("keyring-dir", "", "keyring directory (key.keyring_dir)")
}

func initCmd(g *globals) *cobra.Command {
	var newKey bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented config file (and create the provider key)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(g.home, 0o700); err != nil {
				return err
			}
			path := g.configPath()
			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("%s exists: edit it, or remove it to start over", path)
			}
			if err := os.WriteFile(path, []byte(config.Template(g.home)), 0o600); err != nil {
				return err
			}
			fmt.Println("wrote", path)
			if !newKey {
				return nil
			}
			cfg := config.Default(g.home)
			enc, err := encoding.Make()
			if err != nil {
				return err
			}
			if err := ensurePassphrase(cfg.Key); err != nil {
				return err
			}
			kr, err := keyringOf(cfg.Key, enc.Codec)
			if err != nil {
				return err
			}
			if priv, err := chain.LoadKey(kr, cfg.Key.Name); err == nil {
				fmt.Printf("key %q exists: %s\n", cfg.Key.Name, sdk.AccAddress(priv.PubKey().Address()).String())
				return nil
			}
			priv, mnemonic, err := chain.NewKey(kr, cfg.Key.Name)
			if err != nil {
				return err
			}
			fmt.Printf("created key %q: %s\nfund it with DPS (udps) before `flops-worker run`.\nmnemonic (write it down, it is shown once):\n%s\n",
				cfg.Key.Name, sdk.AccAddress(priv.PubKey().Address()).String(), mnemonic)
			fmt.Printf("the key is in an encrypted keyring in %s, its passphrase in %s (or $%s).\n"+
				"back up that directory and the passphrase (or the mnemonic) on another machine:\n"+
				"  tar -C %s -czf flops-worker-key.tgz %s %s\n"+
				"tasks never see them (PROCESS tasks run in a sandbox, containers see only their own directories).\n",
				cfg.Key.Dir, cfg.Key.PassphraseFile, config.PassphraseEnv,
				g.home, filepath.Base(cfg.Key.Dir), filepath.Base(cfg.Key.PassphraseFile))
			return nil
		},
	}
	cmd.Flags().BoolVar(&newKey, "new-key", true, "create the provider key in an encrypted keyring under --home if it does not exist")
	return cmd
}

// keyringOf opens the worker's keyring with its passphrase (file backend).
func keyringOf(k config.Key, cdc codec.Codec) (keyring.Keyring, error) {
	pass, err := k.Passphrase()
	if err != nil {
		return nil, err
	}
	return chain.KeyringWithPassphrase(k.Backend, k.Dir, pass, cdc)
}

// ensurePassphrase writes a random passphrase (32 bytes, hex) to the file keyring's
// passphrase file, mode 0600, when neither it nor the environment variable exists.
func ensurePassphrase(k config.Key) error {
	if k.Backend != "file" || os.Getenv(config.PassphraseEnv) != "" || k.PassphraseFile == "" {
		return nil
	}
	if _, err := os.Stat(k.PassphraseFile); err == nil {
		return nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	f, err := os.OpenFile(k.PassphraseFile, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(hex.EncodeToString(b[:]) + "\n"); err != nil {
		f.Close()
		return err
	}
	fmt.Println("wrote the keyring's passphrase to", k.PassphraseFile)
	return f.Close()
}

func runCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Bond, register the node and sell its GPUs until interrupted",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load(cmd)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return daemon.Run(ctx, cfg, g.logger(), nil)
		},
	}
	chainFlags(cmd)
	f := cmd.Flags()
	f.String("endpoint", "", "public URL of the output server (node.endpoint)")
	f.String("region", "", "node.region")
	f.StringSlice("runtimes", nil, "runtimes the node accepts, e.g. BUILTIN,CONTAINER,PROCESS (node.runtimes; PROCESS runs jobs' commands here, sandboxed)")
	f.String("ask", "", "udps per GPU-hour (node.ask_per_gpu_hour)")
	f.String("bond", "", "udps to keep bonded (bond.amount)")
	f.Int("mock-gpus", 0, "register this many mock A100 GPUs when the machine has none (demos, tests)")
	f.Bool("no-nvml", false, "ignore the machine's GPUs (node.no_nvml; with --mock-gpus, a second worker on one machine)")
	f.String("outputs-listen", "", "output server address (outputs.listen)")
	f.String("telemetry-listen", "", "metrics and health address (telemetry.listen)")
	f.String("solver", "", "go or external (pocp.solver)")
	f.String("external-solver", "", "external PoCP solver program (pocp.external)")
	f.String("checkpoint-upload-url", "", "PUT checkpoints to <url>/<sha256> (outputs.checkpoint_upload_url)")
	if config.CheatBuild { // only a test build (-tags flopscheat) has it
		f.Bool("cheat", false, "commit wrong results (tests of the chain's verification only: the node WILL be slashed)")
		_ = f.MarkHidden("cheat")
	}
	return cmd
}

func inventoryCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inventory",
		Short: "Print the GPUs NVML sees",
		RunE: func(cmd *cobra.Command, _ []string) error {
			inv, err := gpu.Open(g.logger())
			if err != nil {
				return err
			}
			defer func() { _ = inv.Close() }()
			devs, err := inv.Devices(cmd.Context())
			if err != nil {
				return err
			}
			if len(devs) == 0 {
				fmt.Printf("no GPU: %s\n", gpu.FallbackReason(inv))
				return nil
			}
			fmt.Printf("backend %s, %d GPUs\n%s", inv.Backend(), len(devs), gpu.Describe(devs))
			for _, d := range devs {
				s, err := inv.Sample(cmd.Context(), d.UUID)
				if err != nil {
					fmt.Printf("%s: sample: %v\n", d.UUID, err)
					continue
				}
				fmt.Printf("%s: %d%% busy, %d MiB used, %.1f W, %d C, energy counter %d mJ\n",
					d.UUID, s.UtilizationGPU, s.MemoryUsedMiB, float64(s.PowerMilliwatts)/1000, s.TemperatureC, s.EnergyMillijoules)
			}
			return nil
		},
	}
}

func statusCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the provider's node, collateral, tasks and challenges on chain",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			_, priv, c, err := operatorConn(cmd, g)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			op := sdk.AccAddress(priv.PubKey().Address()).String()
			h, bt, err := c.Height(ctx)
			if err != nil {
				return err
			}
			fmt.Printf("chain %s at height %d (%s)\noperator %s\n", c.ChainID(), h, bt.Format(time.RFC3339), op)
			if coll, err := c.Collateral.Collateral(ctx, &sstypes.QueryCollateralRequest{Provider: op}); err == nil {
				cl := coll.Collateral
				fmt.Printf("collateral: %s udps bonded, %s udps reserved by tasks in flight, jailed %v, slashed %s udps in all\n",
					cl.Bonded, cl.Exposure, cl.Jailed, cl.SlashedTotal)
			}
			nodes, err := chain.NodesOf(ctx, c.GFL, op)
			if err != nil {
				return err
			}
			for _, n := range nodes {
				class := n.GpuClass
				if n.ClaimedClass != "" {
					// re-classed by its measured power per GPU
					class = fmt.Sprintf("class %q by its measured power (claimed %s)", n.GpuClass, n.ClaimedClass)
				}
				fmt.Printf("node %d: %s, %s, %d GPUs, power %d GFLOP/s (median %d, availability %d ppm)\n",
					n.Id, class, n.Status, len(n.Gpus), n.PowerGflops, n.MedianGflops, n.AvailabilityPpm)
				tasks, err := chain.TasksInFlight(ctx, c.Market, n.Id)
				if err != nil {
					return err
				}
				fmt.Printf("  %d tasks in flight\n", len(tasks))
				for _, t := range tasks {
					fmt.Printf("  task %d (job %d, shard %d, %s): %s, price %s udps\n", t.Id, t.JobId, t.Index, t.Role, t.Status, t.Price)
				}
			}
			chs, err := c.GFL.OpenChallenges(ctx, &gfltypes.QueryOpenChallengesRequest{Operator: op})
			if err == nil {
				for _, ch := range chs.Challenges {
					fmt.Printf("challenge %d (node %d, n %d, r %d): %s\n", ch.Id, ch.NodeId, ch.N, ch.R, ch.Status)
				}
			}
			return nil
		},
	}
	chainFlags(cmd)
	return cmd
}

// operatorConn loads the worker's config (with cmd's flags), opens its key and dials its
// chain as the daemon does (chain.tls, chain.gas_price).
func operatorConn(cmd *cobra.Command, g *globals) (config.Config, cryptotypes.PrivKey, *chain.Client, error) {
	cfg, err := g.load(cmd)
	if err != nil {
		return cfg, nil, nil, err
	}
	enc, err := encoding.Make()
	if err != nil {
		return cfg, nil, nil, err
	}
	kr, err := keyringOf(cfg.Key, enc.Codec)
	if err != nil {
		return cfg, nil, nil, err
	}
	priv, err := chain.LoadKey(kr, cfg.Key.Name)
	if err != nil {
		return cfg, nil, nil, err
	}
	clientTLS, err := cfg.Chain.ClientTLS()
	if err != nil {
		return cfg, nil, nil, err
	}
	c, err := chain.Dial(cmd.Context(), chain.Config{GRPC: cfg.Chain.GRPC, TLS: clientTLS, ChainID: cfg.Chain.ChainID, GasPrice: cfg.Chain.GasPrice}, g.logger())
	if err != nil {
		return cfg, nil, nil, err
	}
	return cfg, priv, c, nil
}

func drainCmd(g *globals) *cobra.Command {
	var o agent.DrainOptions
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Take the node off the market without abandoning its work: no new task, deactivated once its tasks in flight end",
		Long: "A busy node may never be idle (the scheduler refills its GPUs), and a deactivation is refused " +
			"while tasks are in flight; stopping the worker instead abandons them, each slashed. drain asks the " +
			"chain to take the node off the market now: it gets no new task, unit or auction, its GFL power is " +
			"burned and it is not challenged, while its collateral stays locked under its tasks in flight. The " +
			"running worker finishes them (and withdraws its open bids, leaves its pools once its claims there " +
			"are revealed); when the last one ends the chain deactivates the node and unlocks its collateral. " +
			"An idle node is deactivated at once. --cancel puts the node back; so does starting the worker " +
			"again once the node is inactive. The request is handed to the worker running on the same state " +
			"directory, which sends it with its own transactions (two processes signing with one key race " +
			"for its sequence); with no worker running it is signed here.",
		Example: "flops-worker drain --wait\nflops-worker drain --cancel",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, priv, c, err := operatorConn(cmd, g)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			signer := chain.NewSigner(c, priv, g.logger())
			sctx, stop := context.WithCancel(ctx)
			defer stop()
			go func() { _ = signer.Run(sctx) }()
			o.StateDir = cfg.StateDir // handed to the worker running there, if one does
			return agent.Drain(ctx, agent.Remote{Client: c, Signer: signer}, o, cmd.OutOrStdout())
		},
	}
	chainFlags(cmd)
	cmd.Flags().Uint64Var(&o.NodeID, "node", 0, "the node (default: the key's one node on the market, or with --cancel its one draining or inactive node)")
	cmd.Flags().BoolVar(&o.Cancel, "cancel", false, "put a draining or inactive node back on the market")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "wait until the node is deactivated, saying how many tasks in flight it waits for")
	return cmd
}

func benchmarkCmd(g *globals) *cobra.Command {
	var sizes []uint
	var rounds uint
	cmd := &cobra.Command{
		Use:   "benchmark",
		Short: "Time the PoCP solver on this machine and print GFLOP/s",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(g.configPath(), g.home)
			if errors.Is(err, os.ErrNotExist) {
				cfg, err = config.Default(g.home), nil
			}
			if err != nil {
				return err
			}
			if f := cmd.Flags(); f.Changed("solver") {
				cfg.PoCP.Solver, _ = f.GetString("solver")
			}
			if f := cmd.Flags(); f.Changed("external-solver") {
				cfg.PoCP.External, _ = f.GetString("external-solver")
			}
			// the GPUs NVML lists: auto's choice, and the devices the solver spreads over
			var inv gpu.Inventory = gpu.NewCPUOnly("node.no_nvml is set: the machine's GPUs are ignored")
			if !cfg.Node.NoNVML {
				if inv, err = gpu.Open(g.logger()); err != nil {
					return err
				}
			}
			defer func() { _ = inv.Close() }()
			devs, err := inv.Devices(cmd.Context())
			if err != nil {
				return err
			}
			solver := daemon.Solver(cmd.Context(), cfg, inv, g.logger())
			ctx := wpocp.OnDevices(cmd.Context(), gpu.SchedulableUUIDs(devs))
			for _, n := range sizes {
				gflops, took, err := wpocp.Benchmark(ctx, solver, uint32(n), uint32(rounds))
				if err != nil {
					return err
				}
				c := gflpocp.Challenge{N: uint32(n), R: uint32(rounds)}
				fmt.Printf("%s solver: n=%d r=%d: %.1f GFLOP in %s: %d GFLOP/s\n", solver.Name(), n, rounds, float64(c.FLOPs())/1e9, took.Round(time.Millisecond), gflops)
			}
			return nil
		},
	}
	cmd.Flags().UintSliceVar(&sizes, "n", []uint{512, 1024, 2048}, "GEMM sizes (multiples of 256)")
	cmd.Flags().UintVar(&rounds, "r", 1, "rounds")
	cmd.Flags().String("solver", "auto", "auto (the GPU solver where there are GPUs and one is found), go (the CPU solver) or external")
	cmd.Flags().String("external-solver", "", "the external solver program")
	return cmd
}

func fetchCmd(g *globals) *cobra.Command {
	var owner ownerFlags
	var dir string
	cmd := &cobra.Command{
		Use:   "fetch <task-id>",
		Short: "Download a task's outputs as the job's owner and check them against the result root on chain",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var id uint64
			if _, err := fmt.Sscan(args[0], &id); err != nil {
				return fmt.Errorf("task id %q: %w", args[0], err)
			}
			ctx := cmd.Context()
			priv, c, err := owner.open(ctx, g)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			t, err := c.Market.Task(ctx, &markettypes.QueryTaskRequest{TaskId: id})
			if err != nil {
				return err
			}
			if t.Task.OutputUri == "" {
				return fmt.Errorf("task %d has no revealed output yet (%s)", id, t.Task.Status)
			}
			base, _, ok := strings.Cut(t.Task.OutputUri, "/v1/tasks/")
			if !ok {
				return fmt.Errorf("task %d: output URI %q is not a flops-worker output server", id, t.Task.OutputUri)
			}
			if dir == "" {
				dir = fmt.Sprintf("task-%d", id)
			}
			want := outputs.Committed{ResultRoot: t.Task.ResultRoot}
			how := "the root of the files is the result root revealed on chain"
			job, err := c.Market.Job(ctx, &markettypes.QueryJobRequest{JobId: t.Task.JobId})
			if err != nil {
				return fmt.Errorf("job %d of task %d: %w", t.Task.JobId, id, err)
			}
			switch {
			case markettypes.IsFailedRoot(t.Task.ResultRoot):
				want.FailedRun = true
				how = "the job failed on this verification run, which answered the failed-run root: that root binds no file, so its files and logs are checked against the server's manifest only"
			case job.Job.Spec.Runtime == markettypes.RUNTIME_BUILTIN && job.Job.Spec.Image == markettypes.BuiltinGemm:
				want.GemmN = job.Job.Spec.Builtin.GemmN
				how = "the product's Merkle root, rebuilt here, is the one verified on chain"
			}
			m, err := outputs.Fetch(ctx, outputs.NewClient(outputs.ProviderHeaderTimeout), base, id, priv, dir, want)
			if err != nil {
				return err
			}
			fmt.Printf("task %d: %d file(s) in %s; result root %s: %s\n", id, len(m.Files), dir, hex.EncodeToString(t.Task.ResultRoot), how)
			return nil
		},
	}
	owner.add(cmd)
	cmd.Flags().StringVar(&dir, "out", "", "where to put the files (default task-<id>)")
	return cmd
}

// ownerFlags are a job owner's key and node, for the commands that sign as the owner.
type ownerFlags struct{ key, keyringDir, backend, grpc string }

func (o *ownerFlags) add(cmd *cobra.Command) {
	home, _ := os.UserHomeDir()
	cmd.Flags().StringVar(&o.key, "key", "client", "the job owner's key")
	cmd.Flags().StringVar(&o.keyringDir, "keyring-dir", filepath.Join(home, ".flops"), "keyring directory (flopsd's --home)")
	cmd.Flags().StringVar(&o.backend, "keyring-backend", "test", "test, file or os")
	cmd.Flags().StringVar(&o.grpc, "grpc", "localhost:9090", "node gRPC address")
}

// open loads the owner's key and dials the node.
func (o *ownerFlags) open(ctx context.Context, g *globals) (cryptotypes.PrivKey, *chain.Client, error) {
	enc, err := encoding.Make()
	if err != nil {
		return nil, nil, err
	}
	kr, err := chain.Keyring(o.backend, o.keyringDir, enc.Codec)
	if err != nil {
		return nil, nil, err
	}
	priv, err := chain.LoadKey(kr, o.key)
	if err != nil {
		return nil, nil, err
	}
	c, err := chain.Dial(ctx, chain.Config{GRPC: o.grpc}, g.logger())
	return priv, c, err
}

func logsCmd(g *globals) *cobra.Command {
	var owner ownerFlags
	var stream string
	var follow bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "logs <task-id>",
		Short: "Print a task's stdout or stderr as the job's owner, live while it runs (--follow)",
		Long: "Reads the task's captured log from the machine that runs it (or, for a task that " +
			"failed and waits to run again, the machine that reported the failure), with a request " +
			"signed by the owner's key: nobody else is served.",
		Example: "flops-worker logs 12 --follow --key client",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var id uint64
			if _, err := fmt.Sscan(args[0], &id); err != nil {
				return fmt.Errorf("task id %q: %w", args[0], err)
			}
			if stream != "stdout" && stream != "stderr" {
				return fmt.Errorf("--stream %q: must be stdout or stderr", stream)
			}
			ctx := cmd.Context()
			priv, c, err := owner.open(ctx, g)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			t, err := c.Market.Task(ctx, &markettypes.QueryTaskRequest{TaskId: id})
			if err != nil {
				return err
			}
			node := t.Task.NodeId
			if fs := t.Task.Failures; node == 0 && len(fs) > 0 {
				node = fs[len(fs)-1].NodeId
			}
			if node == 0 {
				return fmt.Errorf("task %d has not run anywhere yet (%s)", id, t.Task.Status)
			}
			n, err := c.GFL.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: node})
			if err != nil {
				return fmt.Errorf("task %d: node %d: %w", id, node, err)
			}
			return outputs.CopyLog(ctx, outputs.NewClient(outputs.ProviderHeaderTimeout), n.Node.Endpoint, id, stream, priv, follow, poll, cmd.OutOrStdout())
		},
	}
	owner.add(cmd)
	cmd.Flags().StringVar(&stream, "stream", "stdout", "stdout or stderr")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing while the task runs")
	cmd.Flags().DurationVar(&poll, "poll", 2*time.Second, "how often --follow asks for more")
	return cmd
}

func revokeSessionsCmd(g *globals) *cobra.Command {
	var owner ownerFlags
	cmd := &cobra.Command{
		Use:   "revoke-sessions [task-id...]",
		Short: "End the owner's output sessions (session keys a dashboard delegated its reads to) at its tasks' providers",
		Long: "A dashboard reads a job's outputs and logs with a session key its owner's wallet delegated " +
			"them to, for up to a day. If that key may have leaked, this signs, once with the owner's key, " +
			"the end of every delegation issued before now and sends it to each provider that may hold " +
			"something of the tasks named (where their outputs were published, where they run, where a run " +
			"failed), or, with no task named, of the tasks of the owner's newest 100 jobs. Those providers " +
			"refuse the old sessions from then on, also after a restart; the dashboard asks the wallet for a " +
			"new one.",
		Example: "flops-worker revoke-sessions --key client\nflops-worker revoke-sessions 12 13 --key client",
		RunE: func(cmd *cobra.Command, args []string) error {
			var ids []uint64
			for _, a := range args {
				var id uint64
				if _, err := fmt.Sscan(a, &id); err != nil {
					return fmt.Errorf("task id %q: %w", a, err)
				}
				ids = append(ids, id)
			}
			ctx := cmd.Context()
			priv, c, err := owner.open(ctx, g)
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			addr := sdk.AccAddress(priv.PubKey().Address()).String()
			held, err := outputs.OwnerProviders(ctx, c.Market, c.GFL, addr, ids)
			if err != nil {
				return err
			}
			if len(held) == 0 {
				return fmt.Errorf("no provider holds anything of %s's tasks: nothing to revoke", addr)
			}
			rv, err := outputs.Revoke(priv, addr, outputs.RevokeAllUntil(time.Now()))
			if err != nil {
				return err
			}
			var failed []string
			for _, r := range outputs.RevokeEverywhere(ctx, outputs.NewClient(outputs.ProviderHeaderTimeout), rv, held) {
				if r.Err != nil {
					failed = append(failed, r.Endpoint)
					_, _ = fmt.Fprintf(cmd.OutOrStdout(), "%s: not revoked: %v\n", r.Endpoint, r.Err)
					continue
				}
				_, _ = fmt.Fprintf(cmd.OutOrStdout(), "%s: sessions issued before %s refused (task %d)\n", r.Endpoint, time.Unix(r.Before, 0).UTC().Format(time.RFC3339), r.Task)
			}
			if len(failed) > 0 {
				return fmt.Errorf("not revoked at %d of %d providers: %s", len(failed), len(held), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	owner.add(cmd)
	return cmd
}

func versionCmd() *cobra.Command {
	return &cobra.Command{Use: "version", Short: "Print the version", Run: func(*cobra.Command, []string) { fmt.Println(daemon.Version) }}
}
