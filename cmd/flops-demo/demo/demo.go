//go:build unix

// Package demo runs the whole market on one machine, as a newcomer meets it: a localnet
// (scripts/localnet.sh), two flops-worker processes, and a client that submits an ASSIGN
// job, an AUCTION job and a POOL, follows them to settlement, fetches a result as its
// owner and prints the money, the reputation table and the epoch's rewards. `make demo`
// runs it through cmd/flops-demo; the end-to-end tests run it headless and assert on
// its Summary.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Options of a demo run.
type Options struct {
	// Root is the repository: scripts/localnet.sh, and the binaries in Root/build/.
	Root string
	// BinDir holds flopsd and flops-worker (default Root/build).
	BinDir string
	// Home is the demo's directory, wiped at the start (default Root/.demo).
	Home string
	// Validators of the localnet (1 or more).
	Validators int
	// PortOffset shifts every port (chain and workers), so runs can sit side by side.
	PortOffset int
	// Epoch is the x/epochs epoch (default 20 s).
	Epoch time.Duration
	// Headless stops everything once the scenario is over; otherwise Run waits for ctx.
	Headless bool
	// KillValidator > 0 kills that validator (SIGKILL) once the jobs are submitted.
	KillValidator int
	// CrashWorker > 0 kills that provider's flops-worker (SIGKILL to its process group:
	// a crash, its sandboxed tasks with it) once a task is in flight on its node, and
	// starts it again on its home.
	CrashWorker int
	// ChallengeWindowBlocks is market.challenge_window_blocks, the blocks an owner has to
	// challenge a result before it settles (default 3: the scenario settles fast; a person
	// trying the dashboard's Challenge button wants 30 or more).
	ChallengeWindowBlocks int
	// CrashChain kills every validator (SIGKILL) once the jobs are submitted and starts
	// them again on their homes: the workers and the client lose their gRPC endpoint for
	// a few seconds.
	CrashChain bool
	// Out receives the progress lines (default stdout).
	Out io.Writer
	// Timeout bounds the scenario (default 6 min).
	Timeout time.Duration
	// WebDir is the dashboard's static build (default Root/web/dist); the demo serves it
	// when it is built.
	WebDir string
	// AfterScenario, when set, runs once the scenario is over, with everything still up
	// (tests drive the dashboard here); its error fails the run.
	AfterScenario func(ctx context.Context, s Summary) error
}

// Demo is one run.
type Demo struct {
	o       Options
	out     io.Writer
	started time.Time
	waits   errgroup.Group
	procs   []*proc
	workers []*proc

	c       *chain.Client
	client  *chain.Signer
	keys    map[string]cryptotypes.PrivKey
	sum     Summary
	mockGPU bool
	web     *http.Server
}

const (
	demoDPSPerGFL = "10000"
	providers     = 2
	gpusPerNode   = 2
)

// Provider names in the localnet's keyring.
var providerKeys = [providers]string{"provider", "provider2"}

// Run runs the demo. With Headless it returns the Summary once the scenario is over,
// everything stopped; otherwise it prints where things are and waits for ctx (Ctrl-C).
func Run(ctx context.Context, o Options) (Summary, error) {
	if o.Home == "" {
		o.Home = filepath.Join(o.Root, ".demo")
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(o.Root, "build")
	}
	if o.Validators < 1 {
		o.Validators = 1
	}
	if o.Epoch == 0 {
		o.Epoch = 20 * time.Second
	}
	if o.ChallengeWindowBlocks == 0 {
		o.ChallengeWindowBlocks = 3
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Timeout == 0 {
		o.Timeout = 6 * time.Minute
	}
	d := &Demo{o: o, out: o.Out, started: time.Now(), keys: map[string]cryptotypes.PrivKey{}}
	defer d.shutdown()
	sctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := d.scenario(sctx); err != nil {
		if ctx.Err() != nil {
			return d.sum, ctx.Err()
		}
		d.say("demo", "FAILED: %v", err)
		d.say("demo", "logs: %s", d.logs())
		return d.sum, err
	}
	d.sum.Wall = time.Since(d.started)
	d.printSummary()
	if o.AfterScenario != nil {
		if err := o.AfterScenario(ctx, d.sum); err != nil {
			return d.sum, err
		}
	}
	if o.Headless {
		return d.sum, nil
	}
	d.printNext()
	<-ctx.Done()
	pf(d.out, "\n")
	d.say("demo", "stopping the workers and the chain")
	return d.sum, nil
}

// shutdown stops the workers, then the chain.
func (d *Demo) shutdown() {
	d.stopWeb()
	for _, p := range d.workers {
		p.stop(15 * time.Second)
	}
	if d.c != nil {
		_ = d.c.Close()
	}
	d.stopChain()
	_ = d.waits.Wait()
}

func (d *Demo) scenario(ctx context.Context) error {
	for _, b := range []string{"flopsd", "flops-worker"} {
		if _, err := os.Stat(d.bin(b)); err != nil {
			return fmt.Errorf("%s not built: run `make build` first", d.bin(b))
		}
	}
	// an earlier run killed outright left its chain running on these ports, and its pids
	// in the home about to be wiped: stop it first (localnet.sh stops only the processes
	// of that home, and refuses to start while anything else holds a port)
	d.stopChain()
	if err := os.RemoveAll(d.o.Home); err != nil {
		return err
	}
	if err := os.MkdirAll(d.o.Home, 0o755); err != nil {
		return err
	}
	if err := d.startChain(ctx); err != nil {
		return err
	}
	if err := d.startWorkers(ctx); err != nil {
		return err
	}
	if err := d.supply(ctx); err != nil {
		return err
	}
	if err := d.demand(ctx); err != nil {
		return err
	}
	if err := d.fetch(ctx); err != nil {
		return err
	}
	if err := d.rewards(ctx); err != nil {
		return err
	}
	return d.serveWeb(ctx)
}

// startChain starts the localnet and connects the client.
func (d *Demo) startChain(ctx context.Context) error {
	d.say("chain", "starting %d validator(s) on 127.0.0.1 (1 s blocks, %s epochs) in %s", d.o.Validators, d.o.Epoch, d.chainHome())
	err := d.localnet(ctx, "--detach", "--validators", strconv.Itoa(d.o.Validators), "--epoch", d.o.Epoch.String(),
		"--port-offset", strconv.Itoa(d.o.PortOffset),
		// PoCP: a challenge every 12 blocks, sized for ~2 s; short market windows.
		"--set", "gfl.challenge_interval_blocks=12", "--set", "gfl.challenge_target_seconds=2",
		"--set", "market.auction_window_blocks=4", "--set", fmt.Sprintf("market.challenge_window_blocks=%d", d.o.ChallengeWindowBlocks),
		// The demo's jobs write kilobytes: a task's disk of 1 GiB a GPU (the minimum; 100
		// by default) fits a laptop, and its workers have no free space to warn of.
		"--set", fmt.Sprintf("market.task_disk_mib_per_gpu=%d", markettypes.MinTaskDiskMiBPerGPU),
		// A CPU's few GFLOP/s are a millionth of a GPU's: the dev chain pays 1 DPS per 100
		// ugfl-epochs (mainnet: 1 DPS per 100 GFL), so the epoch's rewards show.
		"--set", "dps.dps_per_gfl="+demoDPSPerGFL)
	if err != nil {
		return err
	}
	enc, err := encoding.Make()
	if err != nil {
		return err
	}
	kr, err := chain.Keyring("test", filepath.Join(d.chainHome(), "node0"), enc.Codec)
	if err != nil {
		return err
	}
	for _, name := range append([]string{"client"}, providerKeys[:]...) {
		if d.keys[name], err = chain.LoadKey(kr, name); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if d.c, err = chain.Dial(ctx, chain.Config{GRPC: d.grpcAddr()}, log); err != nil {
		return err
	}
	d.client = chain.NewSigner(d.c, d.keys["client"], log)
	d.waits.Go(func() error {
		_ = d.client.Run(ctx)
		return nil
	})
	h, _, err := d.c.Height(ctx)
	if err != nil {
		return err
	}
	d.say("chain", "%s is making blocks (height %d); gRPC %s, REST %s", d.c.ChainID(), h, d.grpcAddr(), d.restURL())
	return nil
}

// startWorkers starts one flops-worker per provider. With an NVIDIA GPU, the first sells
// it and the second runs on mock GPUs (a GPU cannot be registered twice).
func (d *Demo) startWorkers(ctx context.Context) error {
	inv, err := gpu.Open(nil)
	if err != nil {
		return err
	}
	devs, _ := inv.Devices(ctx)
	reason := gpu.FallbackReason(inv)
	_ = inv.Close()
	d.mockGPU = len(devs) == 0
	if d.mockGPU {
		d.say("gpu", "no NVIDIA GPU here (%s): each provider registers %d mock A100 GPUs and computes on the CPU", reason, gpusPerNode)
	} else {
		d.say("gpu", "NVML sees %d GPU(s) (%s): provider 1 sells them, provider 2 runs on %d mock GPUs", len(devs), devs[0].Model, gpusPerNode)
	}
	d.sum.MockGPUs = d.mockGPU
	// provider 2 also runs PROCESS jobs (a client's own command, in bubblewrap's sandbox)
	// when bubblewrap is installed: the dashboard follows such a task's log live
	if _, err := exec.LookPath("bwrap"); err == nil {
		d.sum.ProcessRuntime = true
		d.say("provider2", "bubblewrap is installed: its node also takes PROCESS jobs, each run in a sandbox")
	}
	for i, key := range providerKeys {
		home := filepath.Join(d.o.Home, fmt.Sprintf("provider%d", i+1))
		out, tel := d.port(8471+i), d.port(9471+i)
		// the settings go into worker.yaml (not flags), so `flops-worker status --home`
		// and a restart by hand see them too
		cfg := config.Default(home)
		cfg.Chain.GRPC = d.grpcAddr()
		// the demo's keys are in the local chain's test keyring (unencrypted: demo only)
		cfg.Key = config.Key{Name: key, Backend: "test", Dir: filepath.Join(d.chainHome(), "node0")}
		cfg.Node.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", out)
		cfg.Node.MockGPUs, cfg.Node.NoNVML = gpusPerNode, i > 0 && !d.mockGPU
		cfg.Node.AskPerGPUHour = strconv.Itoa(1_000_000 + 500_000*i) // different asks: the auction has a price to discover
		if i == 0 {
			// the first node offers 2 GiB of disk a GPU: a job that names its disk
			// (requirements.disk_mib_per_gpu, up to that) runs there
			cfg.Node.DiskMiBPerGPU = 2 << 10
		}
		cfg.Outputs.Listen = fmt.Sprintf("127.0.0.1:%d", out)
		cfg.Telemetry.Listen = fmt.Sprintf("127.0.0.1:%d", tel)
		// a local chain: examples/container-job.yaml runs a localhost/ image
		// (scripts/example-image.sh) the provider's podman holds
		cfg.Executor.LocalImages = true
		perm := os.FileMode(0o700)
		if i == 1 && d.sum.ProcessRuntime {
			cfg.Node.Runtimes = append(cfg.Node.Runtimes, "PROCESS")
			perm = 0o711 // the sandbox's unprivileged user reaches its task's directories
		}
		if err := os.MkdirAll(home, perm); err != nil {
			return err
		}
		if err := os.Chmod(home, perm); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(home, "worker.yaml"), []byte(config.Render(cfg)), 0o600); err != nil {
			return err
		}
		args := []string{"run", "--home", home}
		p, err := d.start(key, home+".log", d.bin("flops-worker"), args...)
		if err != nil {
			return err
		}
		d.workers = append(d.workers, p)
		d.say(d.name(i), "flops-worker started (config %s/worker.yaml, log %s.log, metrics http://127.0.0.1:%d/metrics)", home, home, tel)
	}
	return nil
}

// logs says where the logs are.
func (d *Demo) logs() string {
	return fmt.Sprintf("%s/node*.log, %s/provider*.log", d.chainHome(), d.o.Home)
}

// say prints one progress line.
func (d *Demo) say(who, format string, args ...any) {
	pf(d.out, "[%5.1fs] %-10s %s\n", time.Since(d.started).Seconds(), who, fmt.Sprintf(format, args...))
}

func (d *Demo) name(i int) string { return fmt.Sprintf("provider%d", i+1) }

func (d *Demo) chainHome() string      { return filepath.Join(d.o.Home, "chain") }
func (d *Demo) bin(name string) string { return filepath.Join(d.o.BinDir, name) }
func (d *Demo) port(base int) int      { return base + d.o.PortOffset }
func (d *Demo) grpcAddr() string       { return fmt.Sprintf("127.0.0.1:%d", d.port(9090)) }
func (d *Demo) restURL() string        { return fmt.Sprintf("http://127.0.0.1:%d", d.port(1317)) }
func (d *Demo) rpcURL() string         { return fmt.Sprintf("tcp://127.0.0.1:%d", d.port(26657)) }

// waitFor polls cond every interval until it holds, fails, or limit passes. Meanwhile a
// worker that exited is an error.
func (d *Demo) waitFor(ctx context.Context, limit time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		for _, p := range d.workers {
			if !p.running() {
				return fmt.Errorf("%s exited (%s) while waiting for %s; its log ends:\n%s", p.name, exitStatus(p.err), what, tail(p.log, 15))
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// exitStatus says how a process ended.
func exitStatus(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}
