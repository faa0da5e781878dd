package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/internal/specfile"
	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/testutil/testimage"
	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/bidder"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/gpu"
	"github.com/flopsnet/flops/worker/outputs"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	"github.com/flopsnet/flops/worker/telemetry"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// appChain is the agent's Chain on an in-process app: every Submit is a block of its own.
type appChain struct {
	mu   *sync.Mutex
	a    *apptest.App
	name string
	sent *[]string // the type URLs of the msgs submitted, under mu
	conn grpc.ClientConnInterface
	// fail, if set, may fail a submission before it reaches the chain (a node that
	// cannot be reached, a tx lost): called under mu
	fail func(msgs []sdk.Msg) error
}

func (c appChain) Address() sdk.AccAddress { return c.a.Account(c.name).Address }

func (c appChain) Height(context.Context) (int64, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.a.Height(), c.a.BlockTime(), nil
}

// Conn is the app's query router, or the connection the worker was given (workerWith).
func (c appChain) Conn() grpc.ClientConnInterface {
	if c.conn != nil {
		return c.conn
	}
	return c.a.QueryConn()
}

func (c appChain) Submit(_ context.Context, msgs ...sdk.Msg) (*chain.TxResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		*c.sent = append(*c.sent, sdk.MsgTypeURL(m))
	}
	if c.fail != nil {
		if err := c.fail(msgs); err != nil {
			return nil, err
		}
	}
	r := c.a.Deliver(c.name, msgs...)
	res := &chain.TxResult{Height: c.a.Height(), Code: r.Code, Codespace: r.Codespace, Log: r.Log, GasUsed: r.GasUsed, Events: r.Events}
	return res, res.Err()
}

// worker is one provider's agent on the app, with mock GPUs.
type worker struct {
	name  string
	agent *agent.Agent
	store *outputs.Store
	sent  *[]string   // the type URLs of the msgs it submitted (read under the test's mu)
	mu    *sync.Mutex // the test's mutex, which its chain calls hold
}

func newWorker(t *testing.T, mu *sync.Mutex, a *apptest.App, name string, edit func(c *config.Config)) *worker {
	t.Helper()
	return newWorkerIn(t, mu, a, name, t.TempDir(), edit)
}

// newWorkerIn is a worker whose directories (state, work, outputs) are under home: a
// second one on the same home is the first one restarted.
func newWorkerIn(t *testing.T, mu *sync.Mutex, a *apptest.App, name, home string, edit func(c *config.Config)) *worker {
	t.Helper()
	return newWorkerOn(t, mu, a, name, home, gpu.NewCPUOnly("test"), workerWith{}, edit)
}

// workerWith is what newWorkerOn gives a worker besides its config: the connection it
// queries the app through (nil: the app's query router; apptest's GRPCConn: the node's
// gRPC server and its query gas limit) and its bidding policy (nil: the ask policy).
type workerWith struct {
	conn   grpc.ClientConnInterface
	bidder bidder.Policy
	// log also gets the worker's log lines (nil: only the test's log, when verbose)
	log io.Writer
	// solver answers PoCP (nil: the Go solver)
	solver wpocp.Solver
	// beside: the worker's reads of the chain and of its clock take the test's mutex, so
	// that its runs may go on beside the test's blocks (lockedTick)
	beside bool
	// metrics the worker reports to (nil: none)
	metrics *telemetry.Metrics
	// fail may fail the worker's submissions (appChain.fail)
	fail func(msgs []sdk.Msg) error
}

// lockedConn is a connection whose calls hold mu.
type lockedConn struct {
	grpc.ClientConnInterface
	mu *sync.Mutex
}

func (c lockedConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

// newWorkerWith is newWorker with what w gives.
func newWorkerWith(t *testing.T, mu *sync.Mutex, a *apptest.App, name string, w workerWith) *worker {
	t.Helper()
	return newWorkerOn(t, mu, a, name, t.TempDir(), gpu.NewCPUOnly("test"), w, nil)
}

// newWorkerOn is a worker whose GPU inventory is gpus (with none listed, node.mock_gpus
// of them), with what with gives.
func newWorkerOn(t *testing.T, mu *sync.Mutex, a *apptest.App, name, home string, gpus gpu.Inventory, with workerWith, edit func(c *config.Config)) *worker {
	t.Helper()
	cfg := config.Default(home)
	cfg.Node.Runtimes = []string{"BUILTIN", "CONTAINER", "PROCESS"}
	cfg.Node.MockGPUs = 2
	cfg.Node.Region = "eu-west"
	cfg.Node.Endpoint = "https://" + name + ".example.com"
	cfg.Node.ClaimedGflops = 10
	cfg.Bond.Amount = "400000000"
	cfg.Executor.Workers = 1
	cfg.Executor.LocalImages = true // the tests' images are localhost/ builds
	if edit != nil {
		edit(&cfg)
	}
	logTo := testWriter(t)
	if with.log != nil {
		logTo = io.MultiWriter(logTo, with.log)
	}
	log := slog.New(slog.NewTextHandler(logTo, nil))
	// Unsandboxed: these tests follow the agent, and their PROCESS jobs talk to the test
	// through host paths; the executor's and the end-to-end tests run the sandbox.
	exec, err := executor.New(executor.Options{WorkDir: cfg.Executor.WorkDir, Log: log, Workers: 1, LocalImages: cfg.Executor.LocalImages,
		Sandbox: executor.Sandbox{Off: true, Devices: func([]string) ([]string, error) { return nil, nil }}}) // mock GPUs: no device nodes
	require.NoError(t, err)
	store, err := outputs.Open(home + "/outputs")
	require.NoError(t, err)
	sent := new([]string)
	solver := with.solver
	if solver == nil {
		solver = wpocp.NewGoSolver(1)
	}
	conn, now := with.conn, a.BlockTime
	if with.beside {
		if conn == nil {
			conn = a.QueryConn()
		}
		conn = lockedConn{ClientConnInterface: conn, mu: mu}
		now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return a.BlockTime()
		}
	}
	opts := agent.Options{
		Config: cfg, Log: log, Chain: appChain{mu: mu, a: a, name: name, sent: sent, conn: conn, fail: with.fail}, Bidder: with.bidder, GPUs: gpus, Executor: exec,
		Solver: solver, Publisher: &agent.LocalPublisher{Store: store, BaseURL: cfg.Node.Endpoint, Dir: home + "/ckpt"},
		Now: now,
	}
	if with.metrics != nil {
		opts.Metrics = with.metrics
	}
	ag, err := agent.New(opts)
	require.NoError(t, err)
	require.NoError(t, ag.Setup(context.Background()))
	return &worker{name: name, agent: ag, store: store, sent: sent, mu: mu}
}

// tick runs one block and lets every worker act on it.
func tick(t *testing.T, a *apptest.App, ws ...*worker) {
	t.Helper()
	a.NextBlock()
	for _, w := range ws {
		require.NoError(t, w.agent.Tick(context.Background(), a.Height(), a.BlockTime()))
	}
}

func until(t *testing.T, a *apptest.App, limit int, what string, done func() bool, ws ...*worker) {
	t.Helper()
	for i := 0; i < limit; i++ {
		if done() {
			return
		}
		tick(t, a, ws...)
	}
	require.Truef(t, done(), "%s: not after %d blocks", what, limit)
}

func appWithProviders(t *testing.T, names ...string) *apptest.App {
	return appWithProvidersEdit(t, names, nil)
}

// appWithProvidersEdit is appWithProviders with x/market's params edited.
func appWithProvidersEdit(t *testing.T, names []string, edit func(m *markettypes.Params)) *apptest.App {
	return apptest.New(t, apptest.WithAccounts(append([]string{"client"}, names...)...),
		apptest.WithGenesis(apptest.SmallPoCP(60*time.Second)),
		apptest.WithGenesis(func(e apptest.GenesisEditor) {
			// every Submit here is a block of its own: windows counted in blocks are wide
			var g gfltypes.GenesisState
			e.Edit(gfltypes.ModuleName, &g, func() {
				g.Params.ChallengeIntervalBlocks = 30
				g.Params.ChallengeRevealBlocks = 40
			})
			var m markettypes.GenesisState
			e.Edit(markettypes.ModuleName, &m, func() {
				m.Params.ChallengeWindowBlocks = 3
				m.Params.AuctionWindowBlocks = 8
				if edit != nil {
					edit(&m.Params)
				}
			})
		}))
}

func job(t *testing.T, a *apptest.App, spec markettypes.JobSpec) markettypes.Job {
	t.Helper()
	a.MustDeliver("client", &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: spec})
	res, err := markettypesQuery(a).JobsByOwner(a.Ctx(), &markettypes.QueryJobsByOwnerRequest{Owner: a.Account("client").String()})
	require.NoError(t, err)
	return res.Jobs[len(res.Jobs)-1]
}

func markettypesQuery(a *apptest.App) markettypes.QueryClient {
	return markettypes.NewQueryClient(a.QueryConn())
}

func gemmSpec(a *apptest.App, mode markettypes.AllocationMode) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, TaskCount: 2, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM,
		MaxPricePerTask: sdk.NewInt64Coin("udps", 2_000_000), MaxDuration: 10 * time.Minute, Deadline: a.BlockTime().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin("udps", 0), Mode: mode, VerificationBudget: sdk.NewInt64Coin("udps", 0),
	}
}

// Two workers on mock GPUs register and bond, answer their PoCP challenges, and run a
// BUILTIN GEMM job under ASSIGN and another under AUCTION to settlement: the chain
// verified every product by sampling, the owner paid, the providers were paid.
func TestWorkersRunJobsToSettlement(t *testing.T) {
	a := appWithProviders(t, "p1", "p2")
	var mu sync.Mutex
	w1, w2 := newWorker(t, &mu, a, "p1", nil), newWorker(t, &mu, a, "p2", nil)
	require.NotEqual(t, w1.agent.Node().Id, w2.agent.Node().Id)
	require.Len(t, w1.agent.Node().Gpus, 2)
	q := markettypesQuery(a)
	gq := gfltypes.NewQueryClient(a.QueryConn())
	before := map[string]sdkmath.Int{"p1": a.Balance(a.Account("p1").Address, "udps"), "p2": a.Balance(a.Account("p2").Address, "udps")}

	// a PoCP challenge answered by each
	passed := func(node uint64) bool {
		res, err := gq.NodeStats(a.Ctx(), &gfltypes.QueryNodeStatsRequest{NodeId: node})
		require.NoError(t, err)
		return res.Stats.Passed > 0
	}
	until(t, a, 40, "challenges passed", func() bool { return passed(w1.agent.Node().Id) && passed(w2.agent.Node().Id) }, w1, w2)

	done := func(id uint64) func() bool {
		return func() bool {
			res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: id})
			require.NoError(t, err)
			return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
		}
	}
	assign := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_ASSIGN))
	until(t, a, 40, "ASSIGN job completed", done(assign.Id), w1, w2)
	auction := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	until(t, a, 60, "AUCTION job completed", done(auction.Id), w1, w2)

	won := map[uint64]bool{}
	at, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: auction.Id})
	require.NoError(t, err)
	for _, tk := range at.Tasks {
		require.NotZero(t, tk.BidNode, "won by a bid")
		won[tk.NodeId] = true
	}
	require.NotEmpty(t, won) // equal asks: the clearing fills the better-ranked bid first
	for _, id := range []uint64{assign.Id, auction.Id} {
		tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: id})
		require.NoError(t, err)
		for _, tk := range tasks.Tasks {
			require.Equal(t, markettypes.TASK_STATUS_SETTLED, tk.Status)
			require.Len(t, tk.ResultRoot, 32)
			require.Contains(t, tk.OutputUri, fmt.Sprintf("/v1/tasks/%d/outputs", tk.Id))
			require.NotEmpty(t, hex.EncodeToString(tk.ResultRoot))
		}
	}
	for _, n := range []string{"p1", "p2"} {
		require.True(t, a.Balance(a.Account(n).Address, "udps").GT(before[n].Sub(sdkmath.NewInt(1))), "%s was paid", n)
	}
	a.AssertInvariants()
}

// testWriter sends logs to t.Log with -v (io.Discard otherwise).
func testWriter(t *testing.T) io.Writer {
	if testing.Verbose() {
		return tw{t}
	}
	return io.Discard
}

type tw struct{ t *testing.T }

func (w tw) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// A slashed and jailed provider's worker tops its bond back up and unjails itself once
// the term is over, and not before.
func TestWorkerUnjailsAfterItsTerm(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	op := a.Account("p1").Address
	until := a.BlockTime().Add(40 * time.Second)
	a.Prepare(func(ctx sdk.Context) {
		ev := sstypes.SlashEvidence{NodeId: w.agent.Node().Id}
		_, err := a.StakingSlashKeeper.Slash(ctx, op, 500_000, sstypes.SLASH_REASON_WRONG_RESULT, sstypes.Beneficiaries{}, ev)
		require.NoError(t, err)
		require.NoError(t, a.StakingSlashKeeper.Jail(ctx, op, until, ev))
	})
	a.NextBlock()
	col := func() sstypes.Collateral {
		c, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), op)
		require.NoError(t, err)
		return c
	}
	require.True(t, col().Jailed)
	require.Equal(t, "200000000", col().Bonded.String(), "half of the 400 DPS slashed")

	for a.BlockTime().Before(until) {
		tick(t, a, w)
		require.True(t, col().Jailed, "still jailed at %s", a.BlockTime())
	}
	until2 := func() bool { return !col().Jailed }
	for i := 0; i < 2*10 && !until2(); i++ {
		tick(t, a, w)
	}
	require.False(t, col().Jailed, "unjailed after the term")
	require.Equal(t, "400000000", col().Bonded.String(), "the bond topped back up to bond.amount")
}

// A worker that shuts down while a PROCESS task runs leaves its process running; the
// worker's next start on the same directories re-attaches to it, and the task completes
// and settles on this node without a reassignment, run by the process started first.
func TestWorkerRestartKeepsProcessTask(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	home := t.TempDir()
	w := newWorkerIn(t, &mu, a, "p1", home, nil)
	pidLog := filepath.Join(t.TempDir(), "pids")
	spec := markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS,
		Command:   []string{"sh", "-c", `echo "start $$" >> "$PID_LOG"; sleep 3; echo "end $$" >> "$PID_LOG"; echo done > "$FLOPS_OUTPUT_DIR/out"`},
		Env:       []markettypes.EnvVar{{Name: "PID_LOG", Value: pidLog}},
		TaskCount: 1, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin("udps", 2_000_000), MaxDuration: 10 * time.Minute, Deadline: a.BlockTime().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin("udps", 0), Mode: markettypes.ALLOCATION_MODE_ASSIGN, VerificationBudget: sdk.NewInt64Coin("udps", 0),
	}
	j := job(t, a, spec)

	// The worker shuts down once the task's process has started.
	ctx, shutdown := context.WithCancelCause(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		defer shutdown(executor.ErrWorkerShutdown)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(pidLog); err == nil && strings.HasSuffix(string(b), "\n") {
				return
			}
		}
	})
	for i := 0; i < 20 && ctx.Err() == nil; i++ {
		a.NextBlock()
		_ = w.agent.Tick(ctx, a.Height(), a.BlockTime()) // the task runs in line: Tick returns once detached
	}
	wg.Wait()
	b, err := os.ReadFile(pidLog)
	require.NoError(t, err)
	first := strings.TrimSpace(string(b))
	require.True(t, strings.HasPrefix(first, "start "), "the task started: %q", first)
	pid, err := strconv.Atoi(strings.TrimPrefix(first, "start "))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	require.NoError(t, syscall.Kill(pid, 0), "the task's process outlives the worker")

	// The next start, on the same directories.
	w2 := newWorkerIn(t, &mu, a, "p1", home, nil)
	q := markettypesQuery(a)
	until(t, a, 40, "job completed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w2)
	tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
	require.NoError(t, err)
	require.Len(t, tasks.Tasks, 1)
	tk := tasks.Tasks[0]
	require.Equal(t, markettypes.TASK_STATUS_SETTLED, tk.Status)
	require.Zero(t, tk.Reassignments, "kept on this node")
	require.Equal(t, w.agent.Node().Id, tk.NodeId)
	b, err = os.ReadFile(pidLog)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("start %d\nend %d\n", pid, pid), string(b), "one process, started once, ran the task to its end")
}

// Every field of a job does what it says: a 2-shard PROCESS job with task_args runs each
// shard with its own arguments after the job's command (the job's issue: both shards ran
// with none).
func TestWorkerShardsGetTheirArgs(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorkerIn(t, &mu, a, "p1", t.TempDir(), nil)
	argLog := filepath.Join(t.TempDir(), "args")
	spec := markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS,
		Command:   []string{"sh", "-c", `echo "$FLOPS_SHARD_INDEX $*" >> "$ARG_LOG"; echo ok > "$FLOPS_OUTPUT_DIR/out"`, "shard"},
		Env:       []markettypes.EnvVar{{Name: "ARG_LOG", Value: argLog}},
		TaskCount: 2, TaskArgs: []markettypes.TaskArgs{{Args: []string{"--shard-a", "x y"}}, {Args: []string{"--shard-b"}}},
		Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin("udps", 2_000_000), MaxDuration: 10 * time.Minute, Deadline: a.BlockTime().Add(time.Hour),
		PriorityTip: sdk.NewInt64Coin("udps", 0), Mode: markettypes.ALLOCATION_MODE_ASSIGN, VerificationBudget: sdk.NewInt64Coin("udps", 0),
	}
	j := job(t, a, spec)
	q := markettypesQuery(a)
	until(t, a, 40, "job completed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w)
	b, err := os.ReadFile(argLog)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Strings(lines)
	require.Equal(t, []string{"0 --shard-a x y", "1 --shard-b"}, lines)
}

// A pool unit runs like a task on the GPUs pinned for it (its command sees them in
// CUDA_VISIBLE_DEVICES; the job's issue: empty) and within the pool's unit_max_duration.
func TestWorkerPoolUnitSeesItsGPU(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", func(c *config.Config) { c.Pools.Auto = true; c.Pools.MaxClaims = 1 })
	seen := filepath.Join(t.TempDir(), "seen")
	runOneUnitPool(t, a, w, `echo "gpus=$CUDA_VISIBLE_DEVICES" >> "$SEEN"; echo ok > "$FLOPS_OUTPUT_DIR/out"`,
		markettypes.EnvVar{Name: "SEEN", Value: seen})
	b, err := os.ReadFile(seen)
	require.NoError(t, err)
	require.Regexp(t, `^gpus=\S+\n$`, string(b), "the unit ran once, on a pinned GPU")
}

// runOneUnitPool has the client open pool 1 of PROCESS units running script (one GPU
// each, no verification), post one unit with an input, and ticks w until the unit is
// paid.
func runOneUnitPool(t *testing.T, a *apptest.App, w *worker, script string, env ...markettypes.EnvVar) {
	t.Helper()
	content := []byte("unit input")
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(content) }))
	defer srv.Close()
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_PROCESS,
		Command: []string{"sh", "-c", script}, Env: env,
		Requirements: markettypes.Requirements{GpuCount: 1}, Verification: markettypes.VERIFICATION_CLASS_NONE,
		UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 2,
		UnitMaxDuration: time.Minute,
	}
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: a.Account("client").String(), Spec: spec})
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: a.Account("client").String(), PoolId: 1, Units: []markettypes.Input{
		{Uri: srv.URL + "/unit", Sha256: fmt.Sprintf("%x", sha256.Sum256(content)), Path: "in/unit"},
	}})
	q := markettypesQuery(a)
	until(t, a, 40, "unit paid", func() bool {
		res, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: 1})
		require.NoError(t, err)
		return res.Pool.PaidUnits == 1
	}, w)
}

// examples/container-job.yaml, pinned by scripts/example-image.sh to the image it builds,
// runs on podman: decoded with the app's codec, submitted, run by a worker, its outputs
// stored.
func TestExampleContainerJobRuns(t *testing.T) {
	testimage.Busybox(t) // podman works here; CONTAINERS_CONF set
	file := filepath.Join(t.TempDir(), "container-job.yaml")
	bz, err := os.ReadFile("../../examples/container-job.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, bz, 0o644))
	out, err := exec.Command("../../scripts/example-image.sh", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	bz, err = os.ReadFile(file)
	require.NoError(t, err)

	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	var spec markettypes.JobSpec
	require.NoError(t, specfile.Decode(a.AppCodec(), bz, &spec))
	require.Equal(t, markettypes.RUNTIME_CONTAINER, spec.Runtime)
	j := job(t, a, spec)
	q := markettypesQuery(a)
	until(t, a, 60, "job completed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w)
	tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
	require.NoError(t, err)
	f, _, err := w.store.OpenFile(tasks.Tasks[0].Id, "result.txt")
	require.NoError(t, err)
	b, err := io.ReadAll(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	require.Contains(t, string(b), fmt.Sprintf("shard 0 of job %d ran in a container", j.Id))
}

// examples/process-job.yaml runs as it is: decoded with the app's codec, submitted, run by
// a worker, each shard writes the arguments it was given.
func TestExampleProcessJobRuns(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	bz, err := os.ReadFile("../../examples/process-job.yaml")
	require.NoError(t, err)
	var spec markettypes.JobSpec
	require.NoError(t, specfile.Decode(a.AppCodec(), bz, &spec))
	j := job(t, a, spec)
	q := markettypesQuery(a)
	until(t, a, 40, "job completed", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.Status == markettypes.JOB_STATUS_COMPLETED
	}, w)
	tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
	require.NoError(t, err)
	require.Len(t, tasks.Tasks, 2)
	for _, tk := range tasks.Tasks {
		f, _, err := w.store.OpenFile(tk.Id, "result.txt")
		require.NoError(t, err)
		b, err := io.ReadAll(f)
		require.NoError(t, f.Close())
		require.NoError(t, err)
		want := map[uint32]string{0: "--shard-a", 1: "--shard-b --verbose"}[tk.Index]
		require.Equal(t, fmt.Sprintf("shard %d of job %d, args: %s\n", tk.Index, j.Id, want), string(b))
		require.True(t, tk.Paid.LT(tk.Price), "task %d paid %s of its %s: the time it ran", tk.Id, tk.Paid, tk.Price)
	}
}

// A worker whose machine has no working container runtime does not declare CONTAINER,
// even though its config lists it: the chain then never gives it a container job it
// would fail (and be slashed for).
func TestWorkerWithoutContainerRuntimeDoesNotDeclareContainer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	res, err := gfltypes.NewQueryClient(a.QueryConn()).Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: w.agent.Node().Id})
	require.NoError(t, err)
	require.Equal(t, []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN, gfltypes.RUNTIME_PROCESS}, res.Node.Runtimes)
}

// A worker that dies with pool units committed but not revealed reveals them when it
// starts again on the same home: the records kept on disk are adopted, a GEMM unit's
// product is recomputed for the sampled proofs, and no claim lapses (the crash demo's
// issue: the restarted worker kept the records but revealed nothing, and its provider was
// slashed for four missed reveals, 20% of its collateral each).
func TestWorkerRestartRevealsItsPoolClaims(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	home := t.TempDir()
	pools := func(c *config.Config) { c.Pools.Auto = true; c.Pools.MaxClaims = 3 }
	w := newWorkerIn(t, &mu, a, "p1", home, pools)
	require.EqualValues(t, 1, gemmPool(t, a, 3))
	q := markettypesQuery(a)
	// The first worker joins and claims; it is never ticked again once its three
	// commitments are on chain (the claims are committed beside the loop), so it reveals
	// nothing: it is dead.
	claimAll(t, a, &mu, w, 1, 3, 20)

	w2 := newWorkerIn(t, &mu, a, "p1", home, pools)
	until(t, a, 40, "every unit paid", func() bool {
		res, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: 1})
		require.NoError(t, err)
		return res.Pool.PaidUnits == 3
	}, w2)
	earned, err := q.PoolEarnings(a.Ctx(), &markettypes.QueryPoolEarningsRequest{PoolId: 1, Provider: a.Account("p1").String()})
	require.NoError(t, err)
	require.EqualValues(t, 3, earned.Units, "the restarted worker revealed the dead one's three claims")
	slashes, err := sstypes.NewQueryClient(a.QueryConn()).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account("p1").String()})
	require.NoError(t, err)
	require.Empty(t, slashes.Slashes, "no claim lapsed")
}

// A worker that lost its claims of a pool while it was away (they lapsed, the owner
// closed the pool and the chain pruned it) forgets them when it finds the pool gone: kept,
// each would hold one of its pools.max_claims for ever, and a worker whose claims are all
// held so would never claim a unit again. Back, it claims in the owner's next pool, and
// the records it kept on disk for the lost claims are gone.
func TestWorkerForgetsTheClaimsOfAPrunedPool(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) {
		m.PoolRevealTimeoutBlocks = 10
		m.JobRetentionBlocks = 5
	})
	var mu sync.Mutex
	home := t.TempDir()
	w := newWorkerIn(t, &mu, a, "p1", home, func(c *config.Config) { c.Pools.Auto = true; c.Pools.MaxClaims = 3 })
	owner := a.Account("client").String()
	require.EqualValues(t, 1, gemmPool(t, a, 3))
	claimAll(t, a, &mu, w, 1, 3, 20)
	records := func() []string {
		t.Helper()
		entries, err := os.ReadDir(filepath.Join(home, "state"))
		require.NoError(t, err)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	require.ElementsMatch(t, []string{"unit-1-1.json", "unit-1-2.json", "unit-1-3.json"}, records(), "a record a claim")

	// away: its claims lapse, the owner closes the pool, the chain prunes it
	mu.Lock()
	a.MustDeliver("client", &markettypes.MsgClosePool{Owner: owner, PoolId: 1})
	q := markettypesQuery(a)
	for i := 0; ; i++ {
		require.Less(t, i, 40, "pool 1 pruned")
		if _, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: 1}); err != nil {
			break
		}
		a.NextBlock()
	}
	require.EqualValues(t, 2, gemmPool(t, a, 3))
	mu.Unlock()

	// back: the three lost claims are forgotten, and it claims the next pool's units
	claimAll(t, a, &mu, w, 2, 3, 20)
	for _, r := range records() {
		require.True(t, strings.HasPrefix(r, "unit-2-"), "record %s: pool 1's claims are forgotten", r)
	}
}

// gemmPool opens a pool of the client's for BUILTIN gemm units (0.2 DPS a unit, a budget
// of 1 DPS, two providers at most), posts n units to it and returns its id.
func gemmPool(t *testing.T, a *apptest.App, n int) uint64 {
	t.Helper()
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM,
		UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 2,
		UnitMaxDuration: time.Minute,
	}
	owner := a.Account("client").String()
	var md sdk.TxMsgData
	require.NoError(t, md.Unmarshal(a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: owner, Spec: spec}).Data))
	require.Len(t, md.MsgResponses, 1)
	var created markettypes.MsgCreatePoolResponse
	require.NoError(t, created.Unmarshal(md.MsgResponses[0].Value))
	if n > 0 {
		postUnits(a, created.PoolId, n)
	}
	return created.PoolId
}

// postUnits has the client post n units to its pool.
func postUnits(a *apptest.App, pool uint64, n int) {
	var inputs []markettypes.Input
	for i := range n {
		h := sha256.Sum256(fmt.Appendf(nil, "pool %d batch %d", pool, i))
		inputs = append(inputs, markettypes.Input{Uri: fmt.Sprintf("https://client.example.com/%d/in/%d", pool, i), Sha256: hex.EncodeToString(h[:])})
	}
	a.MustDeliver("client", &markettypes.MsgSubmitUnits{Owner: a.Account("client").String(), PoolId: pool, Units: inputs})
}

// claimAll ticks the worker (at most ticks times) until it holds the commitments of units
// 1 to units of the pool (claims are committed beside the loop).
func claimAll(t *testing.T, a *apptest.App, mu *sync.Mutex, w *worker, pool, units uint64, ticks int) {
	t.Helper()
	q := markettypesQuery(a)
	committed := func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		n := uint64(0)
		for id := uint64(1); id <= units; id++ {
			res, err := q.Unit(a.Ctx(), &markettypes.QueryUnitRequest{PoolId: pool, UnitId: id})
			require.NoError(t, err)
			if res.Unit.Status == markettypes.UNIT_STATUS_COMMITTED && res.Unit.NodeId == w.agent.Node().Id {
				n++
			}
		}
		return n
	}
	for i := 0; committed() < units; i++ {
		require.Less(t, i, ticks, "the worker claimed the %d units of pool %d", units, pool)
		tick(t, a, w)
		for deadline := time.Now().Add(3 * time.Second); committed() < units && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// bigPools writes n open pools of mallory's with the largest specs the Msg's bounds let
// through (64 arguments of 1 KiB, 64 variables of 4 KiB: about 330 KB each) that no node
// of the tests serves (16 GPUs a unit), as their creation leaves them.
func bigPools(t *testing.T, a *apptest.App, n int) {
	t.Helper()
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_PROCESS,
		Requirements: markettypes.Requirements{GpuCount: markettypes.MaxGPUsPerTask}, Verification: markettypes.VERIFICATION_CLASS_NONE,
		UnitPrice: sdk.NewInt64Coin("udps", 1), Budget: sdk.NewInt64Coin("udps", 1), MaxProviders: 2, UnitMaxDuration: time.Minute,
	}
	for i := range markettypes.MaxArgs {
		spec.Command = append(spec.Command, strings.Repeat("c", markettypes.MaxArgLen))
		spec.Env = append(spec.Env, markettypes.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("e", markettypes.MaxEnvValueLen)})
	}
	mallory := a.Account("mallory").String()
	a.Prepare(func(ctx sdk.Context) {
		for range n {
			id, err := a.MarketKeeper.PoolSeq.Next(ctx)
			require.NoError(t, err)
			require.NoError(t, a.MarketKeeper.SetPool(ctx, markettypes.Pool{Id: id, Owner: mallory, Spec: spec, Status: markettypes.POOL_STATUS_OPEN,
				Escrow: sdkmath.NewInt(1), Unpaid: sdkmath.ZeroInt(), NextUnit: 1}))
		}
	})
	a.NextBlock()
}

// The attack of a client on the pools: each pool comes with its spec, and a pool's spec
// may be about 330 KB. flops-worker read every pool the chain keeps, 200 a query, every
// block, before anything it does in a pool, so a client who opened a dozen pools of the
// largest specs made every worker's read fail (past gRPC's 4 MiB answer, and the node's
// query gas limit): no worker joined a pool, claimed a unit, or revealed its claims,
// whose lapse slashes its provider. A worker now follows the pools it is in by id, and
// reads the others from where it left off, ten a query: behind 40 such pools it joins the
// client's pool and claims its units, and when 40 more come it reveals its claims, every
// unit is paid, and nobody is slashed.
func TestWorkerRevealsPoolClaimsBehindPoolsOfTheLargestSpecs(t *testing.T) {
	a := appWithProviders(t, "p1", "mallory")
	var mu sync.Mutex
	w := newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{conn: a.GRPCConn(t)},
		func(c *config.Config) { c.Pools.Auto = true; c.Pools.MaxClaims = 3 })
	bigPools(t, a, 40)
	q := markettypes.NewQueryClient(a.GRPCConn(t))
	_, err := q.Pools(context.Background(), &markettypes.QueryPoolsRequest{Pagination: &query.PageRequest{Limit: 200}})
	require.Error(t, err, "a page of 200 of them")

	pool := gemmPool(t, a, 3)
	require.EqualValues(t, 41, pool, "the client's pool behind the 40")
	claimAll(t, a, &mu, w, pool, 3, 40)

	bigPools(t, a, 40)
	until(t, a, 40, "every unit paid", func() bool {
		res, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: pool})
		require.NoError(t, err)
		return res.Pool.PaidUnits == 3
	}, w)
	slashes, err := sstypes.NewQueryClient(a.QueryConn()).SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account("p1").String()})
	require.NoError(t, err)
	require.Empty(t, slashes.Slashes, "no claim lapsed")
}

// The attack of a client on the pools' members: a join is a transaction its provider pays
// for, and each pool a node is in is read every block. A worker joined every open pool
// its node could serve, so a client who opened pools and posted no work in them had
// every worker on the chain pay to join each one, and read each one every block after.
// The worker now joins a pool once it has work posted, while fewer than pools.max_joined
// of its pools have work (those its operator named in pools.join apart), and leaves a
// pool idle for pools.leave_idle_blocks, its credits withdrawn. Of five empty pools it
// joins none, and the named one, empty too, all the same; of three then given work it
// joins two (max_joined 2), and the third once one of those has no work left: pools
// whose few units are done do not hold the worker's room (a client's cheap squat against
// every other pool). Idle, the three are left, credits withdrawn, the named one kept; and
// one is joined again when work comes back to it.
func TestAttackEmptyPoolsDrawAutoWorkersJoinFees(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	reads := &poolReads{ClientConnInterface: a.QueryConn(), whole: map[uint64]int{}, bare: map[uint64]int{}}
	w := newWorkerOn(t, &mu, a, "p1", t.TempDir(), gpu.NewCPUOnly("test"), workerWith{conn: reads}, func(c *config.Config) {
		c.Pools.Auto, c.Pools.MaxJoined, c.Pools.Join, c.Pools.LeaveIdleBlocks, c.Pools.MaxClaims = true, 2, []uint64{1}, 5, 1
	})
	var pools []uint64
	for range 6 {
		pools = append(pools, gemmPool(t, a, 0))
	}
	require.EqualValues(t, 1, pools[0], "the pool the operator named")
	q := markettypesQuery(a)
	in := func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		var ids []uint64
		for _, id := range pools {
			res, err := q.PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: id})
			require.NoError(t, err)
			if len(res.Members) > 0 {
				ids = append(ids, id)
			}
		}
		return ids
	}
	settle := func(ticks int) {
		for range ticks {
			tick(t, a, w)
			time.Sleep(50 * time.Millisecond) // a join's tx is sent beside the loop
		}
	}
	settle(6)
	require.Equal(t, []uint64{pools[0]}, in(), "no work posted: only the named pool joined")

	withWork := []uint64{pools[1], pools[3], pools[5]}
	for _, id := range withWork {
		postUnits(a, id, 3) // one claim at a time (max_claims 1): two pools stay busy some blocks
	}
	settle(3)
	joined := in()
	require.Len(t, joined, 3, "two pools with work beside the named one (max_joined 2)")
	require.Subset(t, withWork, joined[1:], "only pools with work")

	until(t, a, 80, "the third joined once a pool's work is done", func() bool {
		time.Sleep(20 * time.Millisecond)
		return len(in()) == 4
	}, w)
	paid := func(id uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		res, err := q.Pool(a.Ctx(), &markettypes.QueryPoolRequest{PoolId: id})
		require.NoError(t, err)
		return res.Pool.PaidUnits == 3
	}
	until(t, a, 80, "idle pools left, the named one kept", func() bool {
		time.Sleep(20 * time.Millisecond)
		return slices.Equal(in(), []uint64{pools[0]})
	}, w)
	for _, id := range withWork {
		require.True(t, paid(id), "pool %d: every unit paid before it was left", id)
		mu.Lock()
		res, err := q.PoolEarnings(a.Ctx(), &markettypes.QueryPoolEarningsRequest{PoolId: id, Provider: a.Account("p1").String()})
		mu.Unlock()
		require.NoError(t, err)
		require.True(t, res.Earnings.IsNil() || res.Earnings.IsZero(), "pool %d: credits withdrawn with the leave (%s)", id, res.Earnings)
	}

	postUnits(a, pools[3], 1)
	until(t, a, 4, "joined again when work comes back (read again among the pools passed over)", func() bool {
		time.Sleep(20 * time.Millisecond)
		return slices.Equal(in(), []uint64{pools[0], pools[3]})
	}, w)

	// the pools the node is in are read every block, their specs (up to about 330 KB) once
	reads.mu.Lock()
	defer reads.mu.Unlock()
	require.Equal(t, 1, reads.whole[pools[0]], "the named pool's spec read once")
	require.Greater(t, reads.bare[pools[0]], 30, "its record read every block")
}

// poolReads counts the worker's reads of one pool by id, with its spec and without.
type poolReads struct {
	grpc.ClientConnInterface
	mu          sync.Mutex
	whole, bare map[uint64]int
}

func (r *poolReads) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if req, ok := args.(*markettypes.QueryPoolRequest); ok {
		r.mu.Lock()
		if req.OmitSpec {
			r.bare[req.PoolId]++
		} else {
			r.whole[req.PoolId]++
		}
		r.mu.Unlock()
	}
	return r.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

// A worker reads each pool once (it keeps its place in the list), but a pool whose join
// the chain refused is read, and joined, again: p1's worker is refused a full pool, and
// joins it once its one member leaves.
func TestWorkerJoinsAFullPoolOnceAMemberLeaves(t *testing.T) {
	a := appWithProviders(t, "p1", "p2")
	var mu sync.Mutex
	w1 := newWorker(t, &mu, a, "p1", func(c *config.Config) { c.Pools.Auto = true })
	w2 := newWorker(t, &mu, a, "p2", nil)
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM,
		UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 1,
		UnitMaxDuration: time.Minute,
	}
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: a.Account("client").String(), Spec: spec})
	p2 := a.Account("p2").String()
	a.MustDeliver("p2", &markettypes.MsgJoinPool{Provider: p2, PoolId: 1, NodeId: w2.agent.Node().Id})
	postUnits(a, 1, 1) // work posted: a pool p1 would join
	q := markettypesQuery(a)
	members := func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		res, err := q.PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: 1})
		require.NoError(t, err)
		var ids []uint64
		for _, m := range res.Members {
			ids = append(ids, m.NodeId)
		}
		return ids
	}
	for range 5 {
		tick(t, a, w1)
		time.Sleep(50 * time.Millisecond) // the join's tx is sent beside the loop
	}
	require.Equal(t, []uint64{w2.agent.Node().Id}, members(), "full: p1 is refused")

	a.MustDeliver("p2", &markettypes.MsgLeavePool{Provider: p2, PoolId: 1, NodeId: w2.agent.Node().Id})
	until(t, a, 20, "p1 in the pool", func() bool {
		time.Sleep(50 * time.Millisecond)
		return slices.Equal(members(), []uint64{w1.agent.Node().Id})
	}, w1)
}

// A node whose class has a power floor takes no job until PoCP shows it within the class
// (x/gfl awaiting_measurement): its worker answers its challenges, follows its node on
// chain (the sample it passed shows in Agent.Node), and bids in no auction meanwhile
// (the chain would refuse the bid and keep its fee). Here the floor is out of the mock
// GPUs' reach.
func TestWorkerWaitsForItsClassFloor(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "p1"),
		apptest.WithGenesis(apptest.SmallPoCP(60*time.Second)),
		apptest.WithGenesis(func(e apptest.GenesisEditor) {
			var g gfltypes.GenesisState
			e.Edit(gfltypes.ModuleName, &g, func() {
				g.Params.ChallengeIntervalBlocks = 30
				g.Params.ChallengeRevealBlocks = 40
				for i := range g.Params.GpuClasses {
					g.Params.GpuClasses[i].MinGflopsPerGpu = 1 << 40
				}
			})
			var m markettypes.GenesisState
			e.Edit(markettypes.ModuleName, &m, func() { m.Params.AuctionWindowBlocks = 8 })
		}))
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", func(c *config.Config) { c.Bidder.Enabled = true })
	require.True(t, w.agent.Node().AwaitingMeasurement)
	job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	until(t, a, 40, "a challenge passed, as the worker sees its node", func() bool { return w.agent.Node().LastSampleGflops > 0 }, w)
	require.True(t, w.agent.Node().AwaitingMeasurement, "under the floor")
	mu.Lock()
	defer mu.Unlock()
	require.NotContains(t, *w.sent, sdk.MsgTypeURL(&markettypes.MsgPlaceBid{}), "no bid while it may not be scheduled")
	require.Contains(t, *w.sent, sdk.MsgTypeURL(&gfltypes.MsgCommitChallenge{}), "it answered its challenges")
}

// A worker bids on the open auctions it can run however many are open. It used to read
// the first 100 (the SDK's default page) every block, so behind 100 older auctions (here
// its own provider's, which it never bids on) a client's new one was never seen, and
// closed without its bid. It now reads, 10 a query, the auctions opened since its last
// read.
func TestWorkerBidsOnAuctionsPastTheFirstHundred(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	q := markettypesQuery(a)
	passChallenge(t, a, w)

	// 100 auctions of the provider's own account, in one block
	p1 := a.Account("p1")
	seq := a.AccountKeeper.GetAccount(a.Ctx(), p1.Address).GetSequence()
	var txs [][]byte
	for i := range 100 {
		txs = append(txs, a.SignTxSeq("p1", seq+uint64(i), 400_000,
			&markettypes.MsgSubmitJob{Owner: p1.String(), Spec: gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION)}))
	}
	for i, r := range a.NextBlock(txs...).TxResults {
		require.Zero(t, r.Code, "job %d: %s", i, r.Log)
	}
	tick(t, a, w) // the worker reads them all (none is for it to bid on)

	theirs := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	open, err := q.OpenAuctions(a.Ctx(), &markettypes.QueryOpenAuctionsRequest{Pagination: &query.PageRequest{Limit: 1, CountTotal: true}})
	require.NoError(t, err)
	require.EqualValues(t, 101, open.Pagination.Total, "the client's is the 101st open auction")
	until(t, a, 5, "a bid on the client's auction", func() bool { return bidsOn(t, a, theirs.Id) > 0 }, w)
}

// The attack of a client on the auctions: open a few dozen auctions with the largest
// specs a job may have (command, env and task_args at their bounds: about 580 KB each).
// A worker's read of the open auctions returns each with its spec; its old request, the
// SDK's default page of 100, then read more than a node lets one query spend (flopsd's
// query-gas-limit), every worker's read was refused, and no auction after them got a
// bid. The worker reads 10 auctions a query, each page inside the limit, and bids on the
// client's auction behind them. Here the worker queries the app through the SDK's gRPC
// server (apptest.GRPCConn), as a worker queries a node.
func TestWorkerBidsBehindAuctionsOfTheLargestSpecs(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1", "mallory"}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	var mu sync.Mutex
	w := newWorkerWith(t, &mu, a, "p1", workerWith{conn: a.GRPCConn(t)})
	passChallenge(t, a, w)

	// 40 open auctions of the largest specs, ahead of the client's in id order (written
	// as their submissions leave them: the job in BIDDING and its spec)
	big := gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION)
	big.Requirements.GpuCount = 64 // no node serves them: they are only read
	for i := range 64 {
		big.Command = append(big.Command, strings.Repeat("c", 1024))
		big.Env = append(big.Env, markettypes.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("e", 4096)})
	}
	big.TaskArgs = []markettypes.TaskArgs{{Args: []string{strings.Repeat("a", 128<<10)}}, {Args: []string{strings.Repeat("a", 128<<10)}}}
	mallory := a.Account("mallory").String()
	a.Prepare(func(ctx sdk.Context) {
		ids, err := a.MarketKeeper.IDs.Get(ctx)
		require.NoError(t, err)
		for id := ids.K1(); id < ids.K1()+40; id++ {
			require.NoError(t, a.MarketKeeper.Jobs.Set(ctx, id, markettypes.Job{Id: id, Owner: mallory, Status: markettypes.JOB_STATUS_BIDDING}))
			require.NoError(t, a.MarketKeeper.JobSpecs.Set(ctx, id, big))
		}
		require.NoError(t, a.MarketKeeper.IDs.Set(ctx, collections.Join(ids.K1()+40, ids.K2())))
	})
	a.NextBlock()
	q := markettypes.NewQueryClient(a.GRPCConn(t))
	_, err := q.OpenAuctions(context.Background(), &markettypes.QueryOpenAuctionsRequest{})
	require.ErrorContains(t, err, "Query gas limit exceeded", "a page of the SDK's default 100 of them")

	theirs := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	until(t, a, 10, "a bid on the client's auction", func() bool { return bidsOn(t, a, theirs.Id) > 0 }, w)
}

// flakyBidder fails its first pricing of each job (a bidder script that timed out), then
// prices as the ask policy does.
type flakyBidder struct {
	ask    bidder.Policy
	failed map[uint64]bool
}

func (f *flakyBidder) Price(ctx context.Context, o bidder.Offer) (bidder.Bid, error) {
	if !f.failed[o.Job.Id] {
		f.failed[o.Job.Id] = true
		return bidder.Bid{}, errors.New("bidder script: timed out after 5s")
	}
	return f.ask.Price(ctx, o)
}

// An auction whose pricing failed (a bidder script that timed out) is priced again at
// the next tick, as when the worker read every open auction each block: the worker goes
// back to it, though it has read past it.
func TestWorkerPricesAgainAnAuctionWhosePricingFailed(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	var mu sync.Mutex
	flaky := &flakyBidder{ask: bidder.Ask{Default: sdkmath.NewInt(1_000)}, failed: map[uint64]bool{}}
	w := newWorkerWith(t, &mu, a, "p1", workerWith{bidder: flaky})
	passChallenge(t, a, w)
	tick(t, a, w) // caught up with the open auctions (none): the worker reads from here on

	theirs := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	until(t, a, 5, "a bid on the auction", func() bool { return bidsOn(t, a, theirs.Id) > 0 }, w)
	require.True(t, flaky.failed[theirs.Id], "its first pricing failed")
}

// The worker reads each open auction once, but which auctions it serves follows its
// node (class, region, runtimes, activity): when the node changes, the auctions still
// open are read again. Here an auction asks for a region the node is not in, and the
// provider then moves the node there (MsgUpdateNode): the worker bids.
func TestWorkerReadsTheAuctionsAgainWhenItsNodeChanges(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	passChallenge(t, a, w)

	spec := gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION)
	spec.Requirements.Region = "us-east"
	theirs := job(t, a, spec)
	bids := func() int { return bidsOn(t, a, theirs.Id) }
	for range 3 {
		tick(t, a, w)
	}
	require.Zero(t, bids(), "a node in eu-west does not bid for us-east")

	moveNode(a, w, "p1", "us-east")
	// the worker reads its node again at the next block
	until(t, a, 25, "a bid once the node is in us-east", func() bool { return bids() > 0 }, w)
	require.Equal(t, "us-east", w.agent.Node().Region)
}

// The attack of a client on the bidders' deposits: each bid locks params.bid_deposit until
// its auction closes, and a client may cancel an auction before its close (the deposits
// come back, and the client's escrow). Mallory opens two auctions just before the
// client's, draws the worker's bids on hers, which lock what its provider has, and holds
// them open: the worker's bid on the client's auction was refused for want of a deposit,
// and the worker, which had marked the auction priced, never bid on it, even once Mallory
// cancelled. The worker now stops at the first auction it cannot fund, reads and prices
// none while a deposit is not there, and goes on from that auction when deposits come
// back: the client's auction gets its bid.
func TestAttackCancelledAuctionsLockTheBiddersDeposits(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1", "mallory"}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", nil)
	passChallenge(t, a, w)
	tick(t, a, w) // caught up with the open auctions (none)
	q := markettypesQuery(a)
	params, err := q.Params(a.Ctx(), &markettypes.QueryParamsRequest{})
	require.NoError(t, err)
	deposit := params.Params.BidDeposit
	p1 := a.Account("p1").Address
	spendable := func() sdkmath.Int {
		return a.BankKeeper.SpendableCoins(a.Ctx(), p1).AmountOf(deposit.Denom)
	}
	keep := deposit.Amount.MulRaw(5).QuoRaw(2) // two deposits and a half
	a.MustDeliver("p1", banktypes.NewMsgSend(p1, a.Account("client").Address, sdk.NewCoins(sdk.NewCoin(deposit.Denom, spendable().Sub(keep)))))

	mallory := a.Account("mallory").String()
	for range 2 {
		a.MustDeliver("mallory", &markettypes.MsgSubmitJob{Owner: mallory, Spec: gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION)})
	}
	res, err := q.JobsByOwner(a.Ctx(), &markettypes.QueryJobsByOwnerRequest{Owner: mallory})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 2)
	client := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	for range 5 {
		tick(t, a, w)
	}
	for _, j := range res.Jobs {
		require.Equal(t, 1, bidsOn(t, a, j.Id), "the worker's bid on Mallory's auction %d", j.Id)
	}
	require.True(t, spendable().LT(deposit.Amount), "the provider's funds locked in the two deposits")
	require.Zero(t, bidsOn(t, a, client.Id), "no deposit to lock for the client's auction")

	for _, j := range res.Jobs {
		a.MustDeliver("mallory", &markettypes.MsgCancelJob{Owner: mallory, JobId: j.Id})
	}
	require.True(t, spendable().GTE(deposit.Amount), "the deposits came back")
	until(t, a, 5, "a bid on the client's auction once the deposits came back", func() bool {
		return bidsOn(t, a, client.Id) > 0
	}, w)
}

// The pools a node does not serve are read once, and again when its node changes: a pool
// for us-east, left alone while the node is in eu-west, is joined once the node moves.
func TestWorkerReadsThePoolsAgainWhenItsNodeChanges(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	w := newWorker(t, &mu, a, "p1", func(c *config.Config) { c.Pools.Auto = true })
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin: markettypes.BuiltinArgs{GemmN: 256, GemmR: 1}, Verification: markettypes.VERIFICATION_CLASS_BUILTIN_GEMM,
		UnitPrice: sdk.NewInt64Coin("udps", 200_000), Budget: sdk.NewInt64Coin("udps", 1_000_000), MaxProviders: 2,
		UnitMaxDuration: time.Minute, Requirements: markettypes.Requirements{Region: "us-east"},
	}
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: a.Account("client").String(), Spec: spec})
	postUnits(a, 1, 1)
	q := markettypesQuery(a)
	members := func() int {
		mu.Lock()
		defer mu.Unlock()
		res, err := q.PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: 1})
		require.NoError(t, err)
		return len(res.Members)
	}
	for range 3 {
		tick(t, a, w)
	}
	require.Zero(t, members(), "a node in eu-west does not join a pool for us-east")

	moveNode(a, w, "p1", "us-east")
	// the worker reads its node again at the next block
	until(t, a, 25, "the pool joined once the node is in us-east", func() bool {
		time.Sleep(50 * time.Millisecond) // the join's tx is sent beside the loop
		return members() == 1
	}, w)
}

// moveNode moves the worker's node to region on chain (MsgUpdateNode from its operator,
// account), the rest of its spec kept.
func moveNode(a *apptest.App, w *worker, account, region string) {
	n := w.agent.Node()
	a.MustDeliver(account, &gfltypes.MsgUpdateNode{Operator: n.Operator, NodeId: n.Id, Spec: gfltypes.NodeSpec{
		Gpus: n.Gpus, Region: region, Endpoint: n.Endpoint, Workloads: n.Workloads, AskPerGpuHour: n.AskPerGpuHour,
		ClaimedGflops: n.ClaimedGflops, Runtimes: n.Runtimes, DiskMibPerGpu: n.DiskMibPerGpu,
	}})
}

// passChallenge ticks until the worker's node has passed a PoCP challenge (its node is
// then active, and may bid).
func passChallenge(t *testing.T, a *apptest.App, w *worker) {
	t.Helper()
	gq := gfltypes.NewQueryClient(a.QueryConn())
	until(t, a, 40, "challenge passed", func() bool {
		res, err := gq.NodeStats(a.Ctx(), &gfltypes.QueryNodeStatsRequest{NodeId: w.agent.Node().Id})
		require.NoError(t, err)
		return res.Stats.Passed > 0
	}, w)
}

// bidsOn is the number of bids on an auction.
func bidsOn(t *testing.T, a *apptest.App, job uint64) int {
	t.Helper()
	res, err := markettypesQuery(a).BidsByJob(a.Ctx(), &markettypes.QueryBidsByJobRequest{JobId: job})
	require.NoError(t, err)
	return len(res.Bids)
}

// A worker restarted on a machine whose GPUs changed since its node was registered
// registers them. A card added while the node holds a task is taken at once (the task
// keeps its GPU). A change the chain refuses while the node holds tasks (here two tasks
// on the node's GPUs and one card left: the tasks hold more GPUs than the machine has
// now) is sent again at every block: the worker runs what it holds under the
// spec registered, and the spec lands once the tasks have ended. Before, the worker never
// compared its GPUs with the node's, and the chain kept the old list for good; a first
// version that did, and stopped at the chain's refusal, would not have started at all
// while it held a task.
func TestWorkerRegistersItsGPUsOnceItsTasksEnd(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	home := t.TempDir()
	w := newWorkerIn(t, &mu, a, "p1", home, nil)
	require.Len(t, w.agent.Node().Gpus, 2)
	q := markettypesQuery(a)
	gq := gfltypes.NewQueryClient(a.QueryConn())
	inFlight := func(j markettypes.Job) {
		t.Helper()
		tasks, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j.Id})
		require.NoError(t, err)
		for _, tk := range tasks.Tasks {
			require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, tk.Status, "the node holds the job's tasks")
		}
	}
	completedWith := func(j markettypes.Job, gpus int, ws ...*worker) {
		t.Helper()
		until(t, a, 80, fmt.Sprintf("the job completed and the node has %d GPUs", gpus), func() bool {
			res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
			require.NoError(t, err)
			n, err := gq.Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: w.agent.Node().Id})
			require.NoError(t, err)
			return res.Job.Status == markettypes.JOB_STATUS_COMPLETED && len(n.Node.Gpus) == gpus
		}, ws...)
	}
	j := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_ASSIGN))
	inFlight(j)

	// the next start, with a third GPU: taken beside the tasks in flight
	w2 := newWorkerIn(t, &mu, a, "p1", home, func(c *config.Config) { c.Node.MockGPUs = 3 })
	require.Equal(t, w.agent.Node().Id, w2.agent.Node().Id, "the same node")
	require.Len(t, w2.agent.Node().Gpus, 3, "a card added is taken while the tasks are in flight")
	completedWith(j, 3, w2)

	// the next start, with one GPU left under the job's two tasks: refused until they end
	j = job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_ASSIGN))
	inFlight(j)
	w3 := newWorkerIn(t, &mu, a, "p1", home, func(c *config.Config) { c.Node.MockGPUs = 1 })
	require.Len(t, w3.agent.Node().Gpus, 3, "kept while the tasks hold more GPUs than are left")
	completedWith(j, 1, w3)
	a.AssertInvariants()
}
