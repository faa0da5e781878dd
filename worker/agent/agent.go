package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	sdk "github.com/cosmos/cosmos-sdk/types"
	grpctypes "github.com/cosmos/cosmos-sdk/types/grpc"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/worker/bidder"
	"github.com/flopsnet/flops/worker/chain"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/gpu"
	wpocp "github.com/flopsnet/flops/worker/pocp"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Metrics is what the agent reports; *telemetry.Metrics implements it (nil: nothing).
type Metrics interface {
	TaskStarted(class string)
	TaskCompleted(class string, took time.Duration, u markettypes.Usage)
	TaskFailed(class, reason string, took time.Duration)
	ObserveDispatch(latency time.Duration)
	ObservePoCPSolve(solver string, took time.Duration, gflops float64)
	TxBroadcast(msgTypes ...string)
	TxFailed(msgTypes ...string)
	ChainHeight(height int64)
	TasksWaitingForGPUs(n int)
}

// Publisher makes a finished task's outputs and a running task's checkpoints available
// and says where (the output server; worker/outputs).
type Publisher interface {
	PublishOutputs(ctx context.Context, taskID uint64, owner string, res executor.Result) (uri string, err error)
	PublishCheckpoint(ctx context.Context, taskID uint64, cp executor.Checkpoint) (uri string, err error)
}

// Options are the agent's parts; Config, Log, Chain, GPUs, Executor and Solver are
// required.
type Options struct {
	Config    config.Config
	Log       *slog.Logger
	Chain     Chain
	GPUs      gpu.Inventory
	Executor  *executor.Executor
	Solver    wpocp.Solver
	Bidder    bidder.Policy
	Publisher Publisher
	Metrics   Metrics
	HTTP      *http.Client
	// Now is the clock (tests inject theirs).
	Now func() time.Time
}

// Agent is one node's worker.
type Agent struct {
	o     Options
	cfg   config.Config
	log   *slog.Logger
	state *store

	market markettypes.QueryClient
	gfl    gfltypes.QueryClient
	coll   sstypes.QueryClient
	bank   banktypes.QueryClient
	dps    dpstypes.QueryClient

	node     gfltypes.Node
	nodeRead int64 // the height node was last read at (refreshNode)
	// pendingSpec (nil: none) is the node's spec as this machine has it now, which the
	// chain refused to take under the node's tasks in flight (updateNode): refreshNode
	// sends it again
	pendingSpec *gfltypes.NodeSpec
	devices     []gpu.Device // the offerable GPUs as last read (watchGPUs)
	mockGPUs    bool         // devices are node.mock_gpus', not the machine's
	units       []string     // schedulable GPU (or MIG) UUIDs, under mu

	bg *errgroup.Group

	mu        sync.Mutex
	height    int64
	blockTime time.Time
	runs      map[uint64]*run       // task id -> its execution
	pinned    map[string]uint64     // GPU UUID -> task id (or pool unit, unitTaskID)
	answers   map[uint64]*challenge // challenge id -> its answer
	checkpts  map[uint64]executor.Checkpoint
	lastBeat  int64
	// gpuWait holds the tasks in flight here that wait for their GPUs (gpuShortfall):
	// while any does, pool units claim nothing
	gpuWait map[uint64]gpuWait
	// earningsRead holds the height each pool's credits were last read at (withdraw)
	earningsRead map[uint64]int64
	// gpuErr is the last failed read of the machine's GPUs, and specErr the last refusal
	// of pendingSpec, each logged once until it changes
	gpuErr, specErr string
	// nodeStatus: the node's status as last read (followStatus says when it changes)
	nodeStatus gfltypes.NodeStatus
	// bid holds the auctions priced, each once: job id -> the auction's close height
	// (forgotten some blocks after it, forgetClosedAuctions)
	bid map[uint64]int64
	// placed holds the auctions this node's bid went into (job ids), forgotten with bid;
	// refit: the node's spec changed since, and its bids are checked against it
	// (withdrawActions)
	placed map[uint64]bool
	refit  bool
	joined map[uint64]bool
	claims map[string]*claim
	params markettypes.Params
	// inflight names the actions whose transactions are on their way (see perform)
	inflight map[string]bool
	// auctions and pools are the worker's places in the open auctions and the pools
	// (listCursor); poolRetry (under mu; 0: none) is a pool whose join failed, read again
	// from there at the next tick.
	auctions, pools listCursor
	poolRetry       uint64
	// waiting holds the open pools the node serves and passed over (no work posted, or
	// Pools.MaxJoined reached), read again from waitNext on (under mu; see poolActions)
	waiting  map[uint64]bool
	waitNext uint64
	// idleSince holds the height from which a pool the node is in was seen without work
	// (under mu; see leaveIdle)
	idleSince map[uint64]int64
	// poolSpecs holds the specs of the pools the node is in (under mu; see followPool)
	poolSpecs map[uint64]markettypes.PoolSpec
	// refusedUntil holds, for a pool whose claim the chain refused as one this node may
	// not make now, the height until which the node races it no more (under mu; see
	// claimUnit)
	refusedUntil map[uint64]int64
	// evicted holds the pools whose claim the chain refused as from a non-member (under
	// mu; see claimUnit, forgetIfEvicted)
	evicted map[uint64]bool
	// shortOfDeposit: the provider's funds did not cover a bid deposit at the last tick
	// (under mu; see bidActions)
	shortOfDeposit bool
}

// run is one task's execution on this machine.
type run struct {
	task    markettypes.Task
	job     markettypes.Job
	cancel  context.CancelFunc
	started time.Time
	phase   runPhase
	err     error // why the run failed (phaseFailed)
	res     executor.Result
	meter   *gpu.Meter
	usage   markettypes.Usage
	gpus    []string
	// lostGPU: a GPU of the run that is gone from the machine, for which the run was
	// stopped (stopRunsOn; under mu)
	lostGPU string
}

// challenge is a PoCP challenge being answered.
type challenge struct {
	phase  challengePhase
	answer *wpocp.Answer
	err    error // why solving failed (challengeFailed)
}

// New checks the options and returns an agent.
func New(o Options) (*Agent, error) {
	switch {
	case o.Chain == nil, o.GPUs == nil, o.Executor == nil, o.Solver == nil:
		return nil, errors.New("agent: chain, GPUs, executor and solver are required")
	}
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	if o.Bidder == nil {
		o.Bidder = bidder.Ask{Default: o.Config.Node.Ask(), LoadMarkupPPM: o.Config.Bidder.LoadMarkupPPM}
	}
	st, err := newStore(o.Config.StateDir)
	if err != nil {
		return nil, err
	}
	conn := o.Chain.Conn()
	return &Agent{
		o: o, cfg: o.Config, log: o.Log.With("component", "agent"), state: st,
		market: markettypes.NewQueryClient(conn), gfl: gfltypes.NewQueryClient(conn),
		coll: sstypes.NewQueryClient(conn), bank: banktypes.NewQueryClient(conn), dps: dpstypes.NewQueryClient(conn),
		runs: map[uint64]*run{}, pinned: map[string]uint64{}, gpuWait: map[uint64]gpuWait{}, earningsRead: map[uint64]int64{}, answers: map[uint64]*challenge{},
		checkpts: map[uint64]executor.Checkpoint{}, bid: map[uint64]int64{}, placed: map[uint64]bool{}, joined: map[uint64]bool{}, waiting: map[uint64]bool{}, idleSince: map[uint64]int64{}, poolSpecs: map[uint64]markettypes.PoolSpec{}, claims: map[string]*claim{},
		inflight: map[string]bool{},
	}, nil
}

// Node is the registered node (after Setup), as the agent last read it.
func (a *Agent) Node() gfltypes.Node {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.node
}

// nodeRefreshBlocks: how often the agent re-reads its node, whose class, power and
// status the chain's rebalances and its operator move. At every block: a drain (sent by
// `flops-worker drain`, or from any wallet) has the node's open bids withdrawn before
// their auctions close (a winner off the market forfeits its deposit), and one read of a
// record a block is little beside the tick's others.
const nodeRefreshBlocks = 1

// refreshNode reads the machine's GPUs at every block (watchGPUs: a card lost is taken off
// the chain at the next block, and no task is given it meanwhile beyond that block) and
// re-reads the node every nodeRefreshBlocks blocks, saying when the chain re-classed it
// (a node measured into no class takes no job: the auctions and pools it would bid in are
// skipped, as the chain would refuse them) or its status changed (followStatus). The node
// is written under mu (Node reads it from other goroutines); the tick's own reads need no
// lock.
func (a *Agent) refreshNode(ctx context.Context, height int64) {
	if !a.watchGPUs(ctx) && a.pendingSpec != nil {
		// a spec the chain refused is sent again at every block, so that it lands at the
		// first block the node's tasks let it (a busy node may be free for a block only)
		if err := a.updateNode(ctx, *a.pendingSpec); err != nil && err.Error() != a.specErr {
			// refused for another reason than the tasks in flight (the spec is checked at
			// the start, so the chain's params changed), or not sent: said once
			a.log.Warn("the node's new spec was refused", "node", a.node.Id, "err", err)
			a.specErr = err.Error()
		}
	}
	if height-a.nodeRead < nodeRefreshBlocks {
		return
	}
	got, err := a.gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: a.node.Id})
	if err != nil {
		a.log.Warn("node", "node", a.node.Id, "err", err)
		return
	}
	a.nodeRead = height
	if n := got.Node; n.GpuClass != a.node.GpuClass {
		a.logClass(n)
	}
	a.mu.Lock()
	a.node = got.Node
	a.mu.Unlock()
	a.followStatus(ctx, got.Node)
}

// followStatus says when the node's status changed on the chain (its operator drained,
// deactivated or reactivated it) and, when it left the market, has the node's open bids
// withdrawn (a winner whose node cannot take the tasks at the close forfeits its deposit);
// its pools are left by poolActions once its claims there are revealed.
func (a *Agent) followStatus(ctx context.Context, n gfltypes.Node) {
	if n.Status == a.nodeStatus {
		return
	}
	from := a.nodeStatus
	a.nodeStatus = n.Status
	switch n.Status {
	case gfltypes.NODE_STATUS_DRAINING:
		inFlight := -1
		if tasks, err := chain.TasksInFlight(ctx, a.market, n.Id); err == nil {
			inFlight = len(tasks)
		}
		a.log.Warn("the node is draining: no new work; its tasks in flight run to their end, then the chain deactivates it", "node", n.Id, "tasks_in_flight", inFlight)
	case gfltypes.NODE_STATUS_INACTIVE:
		if from == gfltypes.NODE_STATUS_DRAINING {
			a.log.Warn("the node drained: deactivated, its collateral unlocked; the worker can be stopped (started again, it reactivates the node)", "node", n.Id)
		} else {
			a.log.Warn("the node was deactivated: it takes no work (started again, the worker reactivates it)", "node", n.Id)
		}
	default:
		a.log.Info("the node's status changed", "node", n.Id, "from", from, "to", n.Status)
	}
	if !n.Schedulable() {
		a.refit = true
	}
}

// watchGPUs reads the machine's GPUs again (at every block) and, when they changed since
// the last read, stops giving new tasks the ones that are gone and sends the node's spec
// with the GPUs it has now; it says whether it sent one. A card that fails while the
// worker runs (NVML reports it lost, and gpu.NVML leaves it out) is so taken off the
// chain at the next block: x/market takes a change of GPUs while
// tasks are in flight as long as the node keeps its class and enough GPUs for them, so
// the scheduler stops giving tasks to the card that is gone, which would run on no GPU
// here and fail. The runs on a card that is gone are stopped (stopRunsOn): their tasks
// are given back, where they would have hung on the card until their max_duration.
func (a *Agent) watchGPUs(ctx context.Context) bool {
	if a.mockGPUs {
		return false // nothing to read again
	}
	devs, err := a.offerableGPUs(ctx)
	if err != nil {
		if err.Error() != a.gpuErr {
			a.log.Warn("GPU inventory", "err", err)
			a.gpuErr = err.Error()
		}
		return false
	}
	a.gpuErr = ""
	now := gpu.ToGpuInfos(devs)
	if gfltypes.SameGPUs(gpu.ToGpuInfos(a.devices), now) {
		return false
	}
	units := gpu.SchedulableUUIDs(devs)
	gone := missing(gpu.SchedulableUUIDs(a.devices), units)
	a.log.Warn("the machine's GPUs changed: new tasks get only those there now, and the node's spec follows",
		"node", a.node.Id, "gone", gone, "added", missing(units, gpu.SchedulableUUIDs(a.devices)))
	a.mu.Lock()
	a.devices, a.units = devs, units
	a.mu.Unlock()
	a.stopRunsOn(gone)
	if len(devs) == 0 {
		a.log.Error("no GPU left on this machine: the node keeps its registered GPUs on the chain, and tasks given to them fail here; deactivate it (flopsd tx gfl deactivate-node) or repair the machine", "node", a.node.Id)
		return false
	}
	spec := specOf(a.Node())
	if a.pendingSpec != nil {
		spec = *a.pendingSpec
	}
	spec.Gpus = now
	if err := a.updateNode(ctx, spec); err != nil {
		a.log.Warn("the node's new spec was refused", "node", a.node.Id, "err", err)
	}
	return true
}

// stopRunsOn stops the runs on the GPUs (or MIG devices) that are gone from the machine:
// a task's run fails with errGPULost (its task is given back: releaseAction), a pool
// unit's is given up.
func (a *Agent) stopRunsOn(gone []string) {
	if len(gone) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var units []string
	for _, u := range gone {
		if id, ok := a.pinned[u]; ok && isUnitRun(id) {
			units = append(units, u)
		}
	}
	if len(units) > 0 {
		a.giveUpUnits(units)
	}
	for _, id := range sortedKeys(a.runs) {
		r := a.runs[id]
		if r.phase != phaseRunning || r.cancel == nil || r.lostGPU != "" {
			continue
		}
		for _, u := range r.gpus {
			if slices.Contains(gone, u) {
				r.lostGPU = u
				r.cancel()
				a.log.Warn("the task's run is stopped: a GPU it runs on is gone from the machine; the task is given back", "task", id, "gpu", u)
				break
			}
		}
	}
}

// offerableGPUs reads the machine's GPUs again: those it may offer (gpu.Offerable; a card
// NVML reports lost is not listed).
func (a *Agent) offerableGPUs(ctx context.Context) ([]gpu.Device, error) {
	devs, err := a.o.GPUs.Devices(ctx)
	if err != nil {
		return nil, err
	}
	devs, _ = gpu.Offerable(devs)
	return devs, nil
}

// present keeps the GPU (or MIG) UUIDs the machine has now (units).
func (a *Agent) present(uuids []string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(uuids), func(u string) bool { return !slices.Contains(a.units, u) })
}

// missing lists the entries of a that are not in b.
func missing(a, b []string) []string {
	var out []string
	for _, u := range a {
		if !slices.Contains(b, u) {
			out = append(out, u)
		}
	}
	return out
}

// specOf is the spec a node was registered or last updated with.
func specOf(n gfltypes.Node) gfltypes.NodeSpec {
	return gfltypes.NodeSpec{
		Gpus: n.Gpus, Region: n.Region, Endpoint: n.Endpoint, Workloads: n.Workloads, AskPerGpuHour: n.AskPerGpuHour,
		ClaimedGflops: n.ClaimedGflops, Runtimes: n.Runtimes, DiskMibPerGpu: n.DiskMibPerGpu,
	}
}

// updateNode sends the node's spec as this machine has it. x/market refuses a change of
// GPUs that the node's tasks in flight would not survive (fewer GPUs than they hold, a
// change of class or of MIG devices): the worker then runs what it holds under the spec
// registered and sends the new one again at every block (refreshNode) until it lands. It fails only on another refusal.
func (a *Agent) updateNode(ctx context.Context, spec gfltypes.NodeSpec) error {
	what := "update node"
	if a.pendingSpec != nil {
		what = updateAgain // refused before, and likely now: logged by refreshNode, once
	}
	op := a.o.Chain.Address().String()
	err := a.submit(ctx, what, &gfltypes.MsgUpdateNode{Operator: op, NodeId: a.node.Id, Spec: spec})
	switch {
	case err == nil:
		a.pendingSpec, a.specErr = nil, ""
		a.refit = true
		a.log.Info("node updated", "node", a.node.Id, "gpus", len(spec.Gpus))
		// read at once: the chain numbers a MIG node's devices from its GPUs, so a task
		// given a device after this must be mapped on the new list, not the one read
		// before (up to nodeRefreshBlocks old)
		if got, err := a.gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: a.node.Id}); err == nil {
			a.mu.Lock()
			a.node = got.Node
			a.mu.Unlock()
		} else {
			a.log.Warn("node", "node", a.node.Id, "err", err)
			a.nodeRead = 0 // read again at the next block
		}
		return nil
	case errors.Is(err, gfltypes.ErrNodeBusy):
		if a.pendingSpec == nil {
			a.log.Warn("the node's GPUs changed, and the chain keeps them while the node's tasks in flight need them: the worker runs those under the registered spec and sends the new one again until it lands",
				"node", a.node.Id, "gpus_registered", len(a.node.Gpus), "gpus_now", len(spec.Gpus))
		}
		a.pendingSpec = &spec
		return nil
	default:
		// sent again at the next block (refreshNode): the machine's GPUs are recorded as
		// read, so nothing else would send them
		a.pendingSpec = &spec
		return fmt.Errorf("update node %d: %w", a.node.Id, err)
	}
}

// logClass says which class the chain puts the node in, when it is not the one claimed.
func (a *Agent) logClass(n gfltypes.Node) {
	switch {
	case n.ClaimedClass == "":
		a.log.Info("node class", "node", n.Id, "class", n.GpuClass)
	case n.GpuClass == "":
		a.log.Warn("the chain measured the node into no GPU class: it takes no job until a rebalance measures it into one (docs/pocp.md, class ranges)",
			"node", n.Id, "claimed", n.ClaimedClass, "median_gflops", n.MedianGflops, "gpus", len(n.Gpus))
	default:
		a.log.Warn("the chain re-classed the node by its measured PoCP power",
			"node", n.Id, "class", n.GpuClass, "claimed", n.ClaimedClass, "median_gflops", n.MedianGflops, "gpus", len(n.Gpus))
	}
}

// Run sets the node up and follows the chain until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Setup(ctx); err != nil {
		return err
	}
	return a.Follow(ctx)
}

// Follow follows the chain block by block until ctx ends; the tasks' executions and the
// challenge solves run beside the loop.
func (a *Agent) Follow(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	a.bg = g
	g.Go(func() error { return a.loop(ctx) })
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (a *Agent) loop(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Chain.PollInterval.Duration)
	defer t.Stop()
	var last int64
	for {
		h, bt, err := a.o.Chain.Height(ctx)
		switch {
		case err != nil:
			a.log.Warn("chain height", "err", err)
		case h > last:
			last = h
			began := a.o.Now()
			if err := a.Tick(ctx, h, bt); err != nil && ctx.Err() == nil {
				a.log.Warn("tick", "height", h, "err", err)
			}
			a.log.Debug("tick done", "height", h, "block_time", bt, "took", a.since(began))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick does what the block at height asks of the node: the tasks, the heartbeat, the
// challenges, the auctions, the pools and the drand relay. Each action is its own
// transaction, sent together; one failing does not hold back the others (the next tick
// re-reads the chain).
func (a *Agent) Tick(ctx context.Context, height int64, blockTime time.Time) error {
	a.mu.Lock()
	a.height, a.blockTime = height, blockTime
	a.mu.Unlock()
	if m := a.o.Metrics; m != nil {
		m.ChainHeight(height)
	}
	if a.node.Id == 0 {
		return errors.New("no node: Setup has not run")
	}
	params, err := a.paramsAt(ctx, height)
	if err != nil {
		return fmt.Errorf("market params: %w", err)
	}
	a.params = params
	a.refreshNode(ctx, height)
	var actions []action
	if act, ok := a.drainAction(); ok {
		actions = append(actions, act) // its operator's, from `flops-worker drain`
	}
	tasks, err := a.activeTasks(ctx)
	if err != nil {
		return err
	}
	actions = append(actions, a.taskActions(ctx, height, tasks)...)
	actions = append(actions, a.challengeActions(ctx, height)...)
	if a.cfg.Bidder.Enabled {
		actions = append(actions, a.withdrawActions(ctx)...)
		actions = append(actions, a.bidActions(ctx)...)
	}
	actions = append(actions, a.poolActions(ctx, height)...)
	actions = append(actions, a.beaconActions(ctx, a.o.Now())...)
	if act, ok := a.unjailAction(ctx, height, blockTime); ok {
		actions = append(actions, act)
	}
	a.perform(ctx, actions)
	a.forget(tasks)
	if m := a.o.Metrics; m != nil {
		a.mu.Lock()
		waiting := len(a.gpuWait)
		a.mu.Unlock()
		m.TasksWaitingForGPUs(waiting)
	}
	return nil
}

// paramsAt reads the market's params once the node's app has committed height, so that
// the tick's queries see what that block did. A node stores a block before its app has
// executed it, and its latest height runs ahead of its queries' meanwhile (a big block
// executes for a second under load): a query then answers at the height before, and a
// task the block assigned was seen, and started, a block late. The height a query was
// answered at comes back in its x-cosmos-block-height header; it is awaited up to 2 s.
func (a *Agent) paramsAt(ctx context.Context, height int64) (markettypes.Params, error) {
	for try := 0; ; try++ {
		var md metadata.MD
		res, err := a.market.Params(ctx, &markettypes.QueryParamsRequest{}, grpc.Header(&md))
		if err != nil {
			return markettypes.Params{}, err
		}
		at := int64(0)
		if v := md.Get(grpctypes.GRPCBlockHeightHeader); len(v) == 1 {
			at, _ = strconv.ParseInt(v[0], 10, 64)
		}
		if at == 0 || at >= height || try >= 100 {
			return res.Params, nil
		}
		select {
		case <-ctx.Done():
			return markettypes.Params{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// action is one transaction and what to do with its outcome.
type action struct {
	what string
	msgs []sdk.Msg
	// after is called with the tx's error (nil: it landed).
	after func(err error)
}

// perform sends the actions' transactions beside the loop, which goes on to the next
// block while they wait for inclusion. (It waited for them: under load a tx waits blocks
// behind others, a tick took 2-5 s, the ticks of the blocks in between were skipped, and
// the tasks those blocks assigned were started seconds late.) An action whose transaction
// is still on its way is not sent again: its name (what) says which it is; the actions
// that change the agent's state when made (commit, reveal, failure report, pool reveal)
// have phases of their own that keep them from being made twice.
func (a *Agent) perform(ctx context.Context, actions []action) {
	for _, act := range actions {
		a.mu.Lock()
		busy := a.inflight[act.what]
		a.inflight[act.what] = true
		a.mu.Unlock()
		if busy {
			continue
		}
		a.background(ctx, func(ctx context.Context) error {
			err := a.submit(ctx, act.what, act.msgs...)
			if act.after != nil {
				act.after(err)
			}
			a.mu.Lock()
			delete(a.inflight, act.what)
			a.mu.Unlock()
			return nil
		})
	}
}

// submit sends msgs in one tx and reports it.
// updateAgain is the submission of a node spec the chain refused before, sent again at
// every block until it lands: its failures are not logged one by one.
const updateAgain = "update node again"

func (a *Agent) submit(ctx context.Context, what string, msgs ...sdk.Msg) error {
	_, err := a.o.Chain.Submit(ctx, msgs...)
	if m := a.o.Metrics; m != nil {
		types := make([]string, len(msgs))
		for i, msg := range msgs {
			types[i] = sdk.MsgTypeURL(msg)
		}
		m.TxBroadcast(types...)
		if err != nil {
			m.TxFailed(types...)
		}
	}
	switch {
	case err != nil && what == updateAgain:
		a.log.Debug("tx failed", "what", what, "err", err)
	case err != nil:
		a.log.Warn("tx failed", "what", what, "err", err)
	default:
		a.log.Debug("tx landed", "what", what)
	}
	return err
}

// background runs fn beside the loop; it never fails the agent (errors are logged by fn).
func (a *Agent) background(ctx context.Context, fn func(ctx context.Context) error) {
	if a.bg == nil { // outside Run (tests driving Tick block by block): in line
		if err := fn(ctx); err != nil {
			a.log.Warn("background", "err", err)
		}
		return
	}
	a.bg.Go(func() error {
		if err := fn(ctx); err != nil {
			a.log.Warn("background", "err", err)
		}
		return nil
	})
}

// activeTasks lists the tasks in flight on this machine's node, oldest first.
func (a *Agent) activeTasks(ctx context.Context) ([]markettypes.Task, error) {
	return chain.TasksInFlight(ctx, a.market, a.node.Id)
}

// salt is 32 random bytes for a commitment.
func salt() ([]byte, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return b, err
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

func sortedKeys[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
