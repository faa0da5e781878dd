package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/testutil/network"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// workerGPUs is the real worker's mock GPUs: an 8-GPU server.
const workerGPUs = 8

// loadWorker is a real flops-worker process (FLOPS_LOAD_WORKER: the binary) on its own
// account, beside the load's provider: it registers an 8-GPU node (mock GPUs, the CPU
// computes), and during the submit-job flood it takes the tasks the scheduler gives it.
// What it shows is the whole path under load: the time from the block that assigned a
// task to the start of its execution (the worker's dispatch_latency_seconds), and the
// worker's CPU per task (process_cpu_seconds_total).
type loadWorker struct {
	bin     string
	acc     *account
	keyDir  string
	home    string
	metrics string
	cmd     *exec.Cmd
	log     *os.File
	nodeID  uint64
}

// newLoadWorker makes the worker's key in a test keyring (its account is funded in the
// genesis with the others).
func newLoadWorker(t *testing.T, bin string) *loadWorker {
	t.Helper()
	enc, err := encoding.Make()
	require.NoError(t, err)
	keyDir := t.TempDir()
	kr, err := chain.Keyring("test", keyDir, enc.Codec)
	require.NoError(t, err)
	priv, _, err := chain.NewKey(kr, "worker")
	require.NoError(t, err)
	return &loadWorker{bin: bin, keyDir: keyDir, home: t.TempDir(),
		acc: &account{name: "worker", priv: priv, addr: sdk.AccAddress(priv.PubKey().Address())}}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// start runs the worker and waits until its node is registered and active.
func (w *loadWorker) start(ctx context.Context, t *testing.T, c *chain.Client, grpcAddr string) {
	t.Helper()
	cfg := config.Default(w.home)
	cfg.Chain.GRPC, cfg.Chain.ChainID = grpcAddr, network.ChainID
	cfg.Key = config.Key{Name: "worker", Backend: "test", Dir: w.keyDir}
	out, tel := freeAddr(t), freeAddr(t)
	cfg.Node.Endpoint, cfg.Outputs.Listen, cfg.Telemetry.Listen = "http://"+out, out, tel
	cfg.Node.MockGPUs, cfg.Node.NoNVML = workerGPUs, true
	cfg.Node.Runtimes = []string{"BUILTIN"}
	cfg.Node.AskPerGPUHour = strconv.Itoa(askPerGPUHour)
	cfg.Node.ClaimedGflops = 24
	cfg.Bond.Amount = strconv.Itoa(fund / 10)
	cfg.Executor.Workers = workerGPUs
	cfg.Pools.Auto = false // the pool phase is the load driver's
	cfg.Bidder.Enabled = false
	require.NoError(t, os.WriteFile(filepath.Join(w.home, "worker.yaml"), []byte(config.Render(cfg)), 0o600))
	w.metrics = "http://" + tel + "/metrics"

	var err error
	w.log, err = os.Create(filepath.Join(t.TempDir(), "worker.log"))
	require.NoError(t, err)
	w.cmd = exec.Command(w.bin, "run", "--home", w.home) //nolint:gosec // our own binary
	w.cmd.Stdout, w.cmd.Stderr = w.log, w.log
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() { w.stop(t) })

	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := c.GFL.NodesByOperator(ctx, &gfltypes.QueryNodesByOperatorRequest{Operator: w.acc.addr.String()})
		if err == nil && len(res.Nodes) == 1 && res.Nodes[0].Status == gfltypes.NODE_STATUS_ACTIVE {
			w.nodeID = res.Nodes[0].Id
			return
		}
		if w.cmd.ProcessState != nil || time.Now().After(deadline) {
			t.Fatalf("the worker's node is not active after 90 s (err %v); its log ends:\n%s", err, w.tail(40))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stop ends the worker (SIGTERM, then SIGKILL after 15 s).
func (w *loadWorker) stop(t *testing.T) {
	if w.cmd == nil || w.cmd.Process == nil || w.cmd.ProcessState != nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = w.cmd.Process.Kill()
		<-done
	}
	if t.Failed() {
		t.Logf("the worker's log ends:\n%s", w.tail(60))
	}
	_ = w.log.Close()
}

func (w *loadWorker) tail(n int) string {
	bz, err := os.ReadFile(w.log.Name())
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(bz), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// workerMetrics is what the worker's /metrics says.
type workerMetrics struct {
	cpu       float64            // process_cpu_seconds_total
	completed float64            // tasks_completed_total, every class
	dispatch  map[string]float64 // dispatch_latency_seconds buckets, by le
	count     float64            // dispatch_latency_seconds_count
	solves    float64            // pocp_solve_seconds_count: PoCP challenges solved
}

func (w *loadWorker) scrape(ctx context.Context, t *testing.T) workerMetrics {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.metrics, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	m := workerMetrics{dispatch: map[string]float64{}}
	sc := bufio.NewScanner(io.LimitReader(res.Body, 1<<22))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch {
		case name == "process_cpu_seconds_total":
			m.cpu = v
		case strings.HasPrefix(name, "flops_worker_tasks_completed_total"):
			m.completed += v
		case strings.HasPrefix(name, "flops_worker_dispatch_latency_seconds_bucket{le="):
			m.dispatch[strings.TrimSuffix(strings.TrimPrefix(name, `flops_worker_dispatch_latency_seconds_bucket{le="`), `"}`)] = v
		case name == "flops_worker_dispatch_latency_seconds_count":
			m.count = v
		case strings.HasPrefix(name, "flops_worker_pocp_solve_seconds_count"):
			m.solves += v
		}
	}
	require.NoError(t, sc.Err())
	return m
}

// waitTaken waits until the worker has started every task the chain gave its node (none
// is left ASSIGNED), and returns them.
func (w *loadWorker) waitTaken(ctx context.Context, t *testing.T, c *chain.Client) []markettypes.Task {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var mine []markettypes.Task
		waiting := 0
		for _, tk := range allTasks(ctx, t, c) {
			if tk.NodeId != w.nodeID {
				continue
			}
			mine = append(mine, tk)
			if tk.Status == markettypes.TASK_STATUS_ASSIGNED {
				waiting++
			}
		}
		if waiting == 0 {
			return mine
		}
		require.Truef(t, time.Now().Before(deadline), "the worker left %d of its %d tasks unstarted for 2 minutes; its log ends:\n%s", waiting, len(mine), w.tail(40))
		time.Sleep(time.Second)
	}
}

// idle waits until the worker has answered the PoCP challenge a new node gets (about
// 13 s of both cores here) and measures its idle CPU rate over 5 s: polling the chain.
func (w *loadWorker) idle(ctx context.Context, t *testing.T) (float64, workerMetrics) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for w.scrape(ctx, t).solves < 1 {
		require.Truef(t, time.Now().Before(deadline), "the worker solved no PoCP challenge in 2 minutes; its log ends:\n%s", w.tail(40))
		time.Sleep(time.Second)
	}
	time.Sleep(5 * time.Second) // its reveal
	m0 := w.scrape(ctx, t)
	time.Sleep(5 * time.Second)
	m1 := w.scrape(ctx, t)
	return (m1.cpu - m0.cpu) / 5, m1
}

// started reads from the worker's log when it started each task.
func (w *loadWorker) started(t *testing.T) map[uint64]time.Time {
	t.Helper()
	bz, err := os.ReadFile(w.log.Name())
	require.NoError(t, err)
	out := map[uint64]time.Time{}
	for _, line := range strings.Split(string(bz), "\n") {
		if !strings.Contains(line, `msg="task started"`) {
			continue
		}
		var at time.Time
		var id uint64
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "time":
				at, _ = time.Parse(time.RFC3339Nano, v)
			case "task":
				id, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		if id != 0 && !at.IsZero() {
			out[id] = at
		}
	}
	return out
}

// commitClock records when the validator's app committed each height (an ABCI listener
// on the in-process validator): the first moment a query, the worker's included, can see
// what the block did.
type commitClock struct {
	mu sync.Mutex
	at map[int64]time.Time
}

func newCommitClock() *commitClock { return &commitClock{at: map[int64]time.Time{}} }

// listen makes every validator the constructor builds report its commits to the clock.
func (c *commitClock) listen(inner sdknetwork.AppConstructor) sdknetwork.AppConstructor {
	return func(val sdknetwork.ValidatorI) servertypes.Application {
		a := inner(val)
		// the events the node indexes (app.toml index-events; default: all): a run that
		// indexes few shows what indexing costs each kind of tx
		if ev, ok := os.LookupEnv("FLOPS_LOAD_INDEX_EVENTS"); ok {
			baseapp.SetIndexEvents(strings.Split(ev, ","))(a.(*app.App).BaseApp)
		}
		a.(*app.App).SetStreamingManager(storetypes.StreamingManager{ABCIListeners: []storetypes.ABCIListener{c}})
		return a
	}
}

func (*commitClock) ListenFinalizeBlock(context.Context, abci.RequestFinalizeBlock, abci.ResponseFinalizeBlock) error {
	return nil
}

func (c *commitClock) ListenCommit(ctx context.Context, _ abci.ResponseCommit, _ []*storetypes.StoreKVPair) error {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[sdk.UnwrapSDKContext(ctx).BlockHeight()] = now
	return nil
}

func (c *commitClock) committed(h int64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[h]
	return at, ok
}

// report logs the worker's take-up of its tasks, to the start of each one's execution in
// the worker's log: from the header time of the block that assigned it (when that block
// began: its execution and the validator's timeout_commit are in the figure) and from
// that block's precommit (the next block's header time), after which the block is
// executed; and from the app's commit of the block, when the assignment can first be
// seen; and the worker's CPU per task beyond idle.
func (w *loadWorker) report(ctx context.Context, t *testing.T, c *chain.Client, clock *commitClock, tasks []markettypes.Task, idleRate float64, before, after workerMetrics, elapsed time.Duration) {
	t.Helper()
	started := w.started(t)
	times := map[int64]time.Time{}
	blockTime := func(h int64) time.Time {
		if bt, ok := times[h]; ok {
			return bt
		}
		res, err := c.Node.GetBlockByHeight(ctx, &cmtservice.GetBlockByHeightRequest{Height: h})
		require.NoError(t, err)
		times[h] = res.SdkBlock.Header.Time
		return times[h]
	}
	var fromHeader, fromCommit, fromApp []time.Duration
	for _, tk := range tasks {
		at, ok := started[tk.Id]
		require.True(t, ok, "the worker's log says when task %d started", tk.Id)
		fromHeader = append(fromHeader, at.Sub(blockTime(tk.AssignedHeight)))
		// the next block's time is the median of this block's precommit times (one
		// validator: its own): the block is decided then, and executed after it (the
		// worker sees the assignment once the app has committed it)
		fromCommit = append(fromCommit, at.Sub(blockTime(tk.AssignedHeight+1)))
		committed, ok := clock.committed(tk.AssignedHeight)
		require.True(t, ok, "the app's commit of block %d was recorded", tk.AssignedHeight)
		fromApp = append(fromApp, at.Sub(committed))
	}
	sort.Slice(fromHeader, func(i, j int) bool { return fromHeader[i] < fromHeader[j] })
	sort.Slice(fromCommit, func(i, j int) bool { return fromCommit[i] < fromCommit[j] })
	sort.Slice(fromApp, func(i, j int) bool { return fromApp[i] < fromApp[j] })
	q := func(ds []time.Duration, p float64) time.Duration {
		return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Millisecond)
	}
	within := func(ds []time.Duration, d time.Duration) int {
		return sort.Search(len(ds), func(i int) bool { return ds[i] > d })
	}
	cpu := after.cpu - before.cpu
	completed := after.completed - before.completed
	per := "-"
	if completed > 0 {
		per = fmt.Sprintf("%.1f ms", 1000*(cpu-idleRate*elapsed.Seconds())/completed)
	}
	t.Logf("worker: node %d (%d mock GPUs; BUILTIN GEMM n=256 on the CPU, about 5 ms a task) took %d tasks during the flood; "+
		"to the start of execution from the assigning block's header time (its start: the block's execution and timeout_commit are in it): p50 %s, p90 %s, max %s, within 1 s %d, 2 s %d of %d; "+
		"from its precommit (the next block's header time; its execution is in it): p50 %s, p90 %s, max %s, within 1 s %d, 2 s %d; "+
		"from the app's commit of the block (the first moment a query can see the assignment): p50 %s, p90 %s, max %s, within 500 ms %d, 1 s %d "+
		"(the worker's own dispatch histogram, which counts only the tasks it saw at their assigning height: %.0f within 1 s of %.0f); "+
		"CPU %.2f s over %.1f s, idle %.3f CPU-s/s: %s CPU per completed task beyond idle (%.0f completed)",
		w.nodeID, workerGPUs, len(tasks),
		q(fromHeader, 0.5), q(fromHeader, 0.9), q(fromHeader, 1), within(fromHeader, time.Second), within(fromHeader, 2*time.Second), len(fromHeader),
		q(fromCommit, 0.5), q(fromCommit, 0.9), q(fromCommit, 1), within(fromCommit, time.Second), within(fromCommit, 2*time.Second),
		q(fromApp, 0.5), q(fromApp, 0.9), q(fromApp, 1), within(fromApp, 500*time.Millisecond), within(fromApp, time.Second),
		after.dispatch["1"]-before.dispatch["1"], after.count-before.count,
		cpu, elapsed.Seconds(), idleRate, per, completed)
}
