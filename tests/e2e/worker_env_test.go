package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/testutil/network"
	"github.com/flopsnet/flops/testutil/testdirs"
	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/daemon"
	"github.com/flopsnet/flops/worker/executor"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The in-process chain the workers run against: one validator (real CometBFT, real gRPC)
// with windows short enough that challenges, auctions, lapses and settlements happen
// within seconds.
const (
	workerEpoch             = 60 * time.Second
	heartbeatTimeout        = 10 // blocks
	revealTimeout           = 6  // blocks
	challengeWindow         = 2  // blocks
	auctionWindow           = 4  // blocks
	challengeInterval       = 15 // blocks
	providerBond            = 1_000_000_000
	providerGPUs            = 4
	honestRegion            = "eu-west"
	cheatRegion             = "cheat-land"
	accountBalance    int64 = 1_000_000_000_000 // 1,000,000 DPS
)

// workerChain is the network, the test keyring, the client's signer and the checkpoint
// store the workers upload to.
type workerChain struct {
	net     *network.Network
	grpc    string
	keyDir  string
	keys    map[string]cryptotypes.PrivKey
	client  *chain.Client
	owner   *chain.Signer
	ckpt    *httptest.Server
	enc     encoding.Config
	workers map[string]*testWorker
	daemons errgroup.Group
}

// startWorkerChain creates the keys, writes them into the genesis with funds, edits the
// modules' params, and starts the network, the client's signer and the checkpoint store.
func startWorkerChain(t *testing.T, names ...string) *workerChain {
	t.Helper()
	return startWorkerChainWith(t, nil, names...)
}

// startWorkerChainWith is startWorkerChain with a last edit of the genesis (nil: none).
func startWorkerChainWith(t *testing.T, edit func(cdc codec.Codec, gen map[string]json.RawMessage), names ...string) *workerChain {
	t.Helper()
	enc, err := encoding.Make()
	require.NoError(t, err)
	keyDir := t.TempDir()
	kr, err := chain.Keyring("test", keyDir, enc.Codec)
	require.NoError(t, err)
	keys := map[string]cryptotypes.PrivKey{}
	for _, n := range names {
		priv, _, err := chain.NewKey(kr, n)
		require.NoError(t, err)
		keys[n] = priv
	}

	cfg := network.DefaultConfig(1)
	editWorkerGenesis(t, cfg.Codec, cfg.GenesisState, keys)
	if edit != nil {
		edit(cfg.Codec, cfg.GenesisState)
	}
	nw, err := sdknetwork.New(t, t.TempDir(), cfg)
	require.NoError(t, err)
	t.Cleanup(nw.Cleanup)
	_, err = nw.WaitForHeightWithTimeout(2, time.Minute)
	require.NoError(t, err)

	_, port, err := net.SplitHostPort(nw.Validators[0].AppConfig.GRPC.Address)
	require.NoError(t, err)
	wc := &workerChain{net: nw, grpc: "127.0.0.1:" + port, keyDir: keyDir, keys: keys, enc: enc, workers: map[string]*testWorker{}}
	// the daemons run in this group; each worker's cleanup stops its own
	t.Cleanup(func() { _ = wc.daemons.Wait() })

	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	t.Cleanup(func() { cancel(); _ = g.Wait() })
	wc.client, err = chain.Dial(ctx, chain.Config{GRPC: wc.grpc, ChainID: network.ChainID}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = wc.client.Close() })
	wc.owner = chain.NewSigner(wc.client, keys["client"], slog.New(slog.DiscardHandler))
	g.Go(func() error { return wc.owner.Run(gctx) })

	wc.ckpt = httptest.NewServer(agent.CheckpointHandler(t.TempDir(), true))
	t.Cleanup(wc.ckpt.Close)
	return wc
}

// editWorkerGenesis funds the accounts and shortens every window the test waits on.
func editWorkerGenesis(t *testing.T, cdc codec.Codec, gen map[string]json.RawMessage, keys map[string]cryptotypes.PrivKey) {
	t.Helper()
	edit := func(module string, v proto.Message, fn func()) {
		cdc.MustUnmarshalJSON(gen[module], v)
		fn()
		gen[module] = cdc.MustMarshalJSON(v)
	}
	var auth authtypes.GenesisState
	edit(authtypes.ModuleName, &auth, func() {
		for _, n := range sortedNames(keys) {
			acc, err := codectypes.NewAnyWithValue(authtypes.NewBaseAccount(sdk.AccAddress(keys[n].PubKey().Address()), nil, 0, 0))
			require.NoError(t, err)
			auth.Accounts = append(auth.Accounts, acc)
		}
	})
	var bank banktypes.GenesisState
	edit(banktypes.ModuleName, &bank, func() {
		for _, n := range sortedNames(keys) {
			bank.Balances = append(bank.Balances, banktypes.Balance{
				Address: sdk.AccAddress(keys[n].PubKey().Address()).String(),
				Coins:   sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, accountBalance)),
			})
		}
	})
	var g gfltypes.GenesisState
	edit(gfltypes.ModuleName, &g, func() {
		// apptest.SmallPoCP's challenges: n = 256, sized for the Go CPU solver
		g.Params.ChallengeTargetSeconds = 1
		g.Params.ChallengeMaxN = 256
		g.Params.ChallengeMaxRn = 1 << 21
		g.Params.ChallengeSamples = 16
		g.Params.ChallengeIntervalBlocks = challengeInterval
		g.Params.ChallengeRevealBlocks = 5
		g.Params.ChallengeCommitTimeout = 30 * time.Second
	})
	var ep epochstypes.GenesisState
	edit(epochstypes.ModuleName, &ep, func() {
		for i := range ep.Epochs {
			if ep.Epochs[i].Identifier == "flops" {
				ep.Epochs[i].Duration = workerEpoch
			}
		}
	})
	var m markettypes.GenesisState
	edit(markettypes.ModuleName, &m, func() {
		m.Params.ChallengeWindowBlocks = challengeWindow
		m.Params.AuctionWindowBlocks = auctionWindow
		m.Params.HeartbeatTimeoutBlocks = heartbeatTimeout
		m.Params.AckTimeoutBlocks = heartbeatTimeout
		m.Params.RevealTimeoutBlocks = revealTimeout
		m.Params.AssignRetryMaxBlocks = 1
	})
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// testWorker is one flops-worker daemon run in the test process.
type testWorker struct {
	name     string
	cfg      config.Config
	addr     sdk.AccAddress
	outputs  string // the output server's base URL
	logs     *logSink
	cancel   context.CancelFunc
	done     chan struct{}
	err      error
	ready    daemon.Ready
	nodeID   uint64
	metrics  string // the telemetry server's base URL
	stopOnce sync.Once
}

// startWorker runs daemon.Run for the named key with mock GPUs; edit adjusts its config.
func (wc *workerChain) startWorker(t *testing.T, name, region string, edit func(*config.Config)) *testWorker {
	t.Helper()
	home := testdirs.Reachable(t, t.TempDir()) // its work directory is reachable by the sandbox's user
	cfg := config.Default(home)
	cfg.Node.Runtimes = []string{"BUILTIN", "CONTAINER", "PROCESS"}
	cfg.Executor.PrivateInputs = true // the checkpoint store is on this machine
	cfg.Executor.ContainerRuntime = "podman"
	cfg.Executor.LocalImages = true // the test's image is a localhost/ build
	cfg.Chain.GRPC = wc.grpc
	cfg.Chain.ChainID = network.ChainID
	cfg.Key = config.Key{Name: name, Backend: "test", Dir: wc.keyDir}
	outAddr, telAddr := freeAddr(t), freeAddr(t)
	cfg.Node.MockGPUs = providerGPUs
	cfg.Node.Region = region
	cfg.Node.Endpoint = "http://" + outAddr
	cfg.Node.ClaimedGflops = 2
	cfg.Bond.Amount = fmt.Sprint(providerBond)
	cfg.Executor.Workers = 1
	cfg.PoCP.Workers = 1
	cfg.Outputs.Listen = outAddr
	cfg.Outputs.CheckpointUploadURL = wc.ckpt.URL
	cfg.Telemetry.Listen = telAddr
	if edit != nil {
		edit(&cfg)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	require.NoError(t, err)
	w := &testWorker{
		name: name, cfg: cfg, addr: sdk.AccAddress(wc.keys[name].PubKey().Address()), outputs: cfg.Node.Endpoint,
		logs: &logSink{file: f, starts: map[uint64]time.Time{}, resumed: map[uint64]bool{}, adopted: map[uint64]bool{}, noGPU: map[uint64]bool{}, said: map[string]bool{}},
		done: make(chan struct{}), ready: make(daemon.Ready), metrics: "http://" + telAddr,
	}
	w.launch(wc)
	t.Cleanup(func() {
		w.stop(t)
		if t.Failed() {
			dumpTail(t, f.Name(), 80)
		}
		_ = f.Close()
	})
	wc.workers[name] = w
	return w
}

// launch runs the worker's daemon.
func (w *testWorker) launch(wc *workerChain) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = make(chan struct{})
	log := slog.New(&sinkHandler{sink: w.logs, inner: slog.NewTextHandler(w.logs.file, &slog.HandlerOptions{Level: slog.LevelInfo})}).With("worker", w.name)
	done := w.done
	wc.daemons.Go(func() error {
		defer close(done)
		w.err = daemon.Run(ctx, w.cfg, log, w.ready)
		return nil // reported by stop: one worker's end must not stop the others
	})
}

// restart shuts the worker down (its running PROCESS and CONTAINER tasks are left
// running) and starts it again on the same home, as a provider's restart does.
func (w *testWorker) restart(t *testing.T, wc *workerChain) {
	t.Helper()
	w.cancel()
	select {
	case <-w.done:
		require.NoError(t, w.err, "worker %s shut down", w.name)
	case <-time.After(30 * time.Second):
		t.Fatalf("worker %s did not stop within 30 s", w.name)
	}
	w.ready = make(daemon.Ready)
	w.launch(wc)
	w.waitReady(t, wc, time.Minute)
}

// waitReady waits until the worker has bonded and registered its node.
func (w *testWorker) waitReady(t *testing.T, wc *workerChain, timeout time.Duration) {
	t.Helper()
	select {
	case <-w.ready:
	case <-w.done:
		t.Fatalf("worker %s stopped before it was ready: %v", w.name, w.err)
	case <-time.After(timeout):
		t.Fatalf("worker %s not ready after %s", w.name, timeout)
	}
	res, err := wc.client.GFL.NodesByOperator(context.Background(), &gfltypes.QueryNodesByOperatorRequest{Operator: w.addr.String()})
	require.NoError(t, err)
	require.Len(t, res.Nodes, 1, "worker %s registered one node", w.name)
	w.nodeID = res.Nodes[0].Id
}

// stop cancels the worker and waits for its daemon to return (it shuts down within 10 s
// plus a task's kill grace).
func (w *testWorker) stop(t *testing.T) {
	w.stopOnce.Do(func() {
		w.cancel()
		select {
		case <-w.done:
			if w.err != nil {
				t.Errorf("worker %s: %v", w.name, w.err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("worker %s did not stop within 30 s", w.name)
		}
		// A shutdown leaves the worker's PROCESS tasks running for its next start; this
		// one never starts again (its machine is gone), and its tasks go with it.
		if e, err := executor.New(executor.Options{WorkDir: w.cfg.Executor.WorkDir}); err == nil {
			for _, id := range e.DetachedTasks() {
				e.Abandon(context.Background(), id)
			}
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func dumpTail(t *testing.T, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, ansi.ReplaceAllString(sc.Text(), "")) // a node's console colours
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("last %d log lines of %s:\n%s", len(lines), filepath.Base(path), strings.Join(lines, "\n"))
}

// logSink keeps a worker's log and what the test reads from it: when each task's process
// started, which tasks started without a GPU, which resumed from a checkpoint, and the
// messages it logged.
type logSink struct {
	mu      sync.Mutex
	file    *os.File
	starts  map[uint64]time.Time
	noGPU   map[uint64]bool
	resumed map[uint64]bool
	adopted map[uint64]bool
	said    map[string]bool // every record's message
}

// saidThat: the worker logged a record whose message starts with prefix.
func (s *logSink) saidThat(prefix string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m := range s.said {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

func (s *logSink) started(task uint64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.starts[task]
	return at, ok
}

func (s *logSink) startedWithoutGPU() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for id := range s.noGPU {
		out = append(out, id)
	}
	return out
}

func (s *logSink) adoptedTask(task uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.adopted[task]
}

func (s *logSink) resumedFrom(task uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed[task]
}

// sinkHandler writes records through inner and notes the agent's "task started" and
// "resuming from the last checkpoint" records.
type sinkHandler struct {
	sink  *logSink
	inner slog.Handler
}

func (h *sinkHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *sinkHandler) Handle(ctx context.Context, r slog.Record) error {
	switch r.Message {
	case "task started", "resuming from the last checkpoint", "re-attached to the running task process":
		var task uint64
		gpus := -1
		r.Attrs(func(a slog.Attr) bool {
			switch v := a.Value.Resolve(); {
			case a.Key == "task" && v.Kind() == slog.KindUint64:
				task = v.Uint64()
			case a.Key == "task" && v.Kind() == slog.KindInt64:
				task = uint64(v.Int64())
			case a.Key == "gpus" && v.Kind() == slog.KindAny:
				if l, ok := v.Any().([]string); ok {
					gpus = len(l)
				}
			}
			return true
		})
		h.sink.mu.Lock()
		switch r.Message {
		case "task started":
			if _, seen := h.sink.starts[task]; !seen {
				h.sink.starts[task] = r.Time
			}
			if gpus == 0 {
				h.sink.noGPU[task] = true
			}
		case "re-attached to the running task process":
			h.sink.adopted[task] = true
		default:
			h.sink.resumed[task] = true
		}
		h.sink.mu.Unlock()
	}
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	h.sink.said[r.Message] = true
	return h.inner.Handle(ctx, r)
}

func (h *sinkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sinkHandler{sink: h.sink, inner: h.inner.WithAttrs(as)}
}

func (h *sinkHandler) WithGroup(name string) slog.Handler {
	return &sinkHandler{sink: h.sink, inner: h.inner.WithGroup(name)}
}

// eventually polls cond every 250 ms until it holds or timeout passes; cond's message
// says what it saw last.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s (last seen: %s)", what, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// submitJob sends a job from the client account and returns its id.
func (wc *workerChain) submitJob(t *testing.T, spec markettypes.JobSpec) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := wc.owner.Submit(ctx, &markettypes.MsgSubmitJob{Owner: wc.owner.Address().String(), Spec: spec})
	require.NoError(t, err)
	require.Len(t, res.Responses, 1, "the tx's msg responses")
	var out markettypes.MsgSubmitJobResponse
	require.NoError(t, wc.enc.Codec.Unmarshal(res.Responses[0], &out))
	require.NotZero(t, out.JobId)
	return out.JobId
}

// blockTime is the header time of a committed block.
func (wc *workerChain) blockTime(t *testing.T, height int64) time.Time {
	t.Helper()
	res, err := wc.client.Node.GetBlockByHeight(context.Background(), &cmtservice.GetBlockByHeightRequest{Height: height})
	require.NoError(t, err)
	return res.SdkBlock.Header.Time
}

func ppmOf(a sdkmath.Int, ppm uint32) sdkmath.Int { return a.MulRaw(int64(ppm)).QuoRaw(1_000_000) }
