//go:build unix

package demo

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/types/query"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/internal/specfile"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Summary is what a run did: the e2e tests assert on it.
type Summary struct {
	MockGPUs      bool
	Nodes         []NodeSummary
	NetworkGflops uint64
	Jobs          []JobSummary
	Pool          PoolSummary
	Fetched       FetchSummary
	// Before and After: udps of client, provider1, provider2, reward pool, validators (fees).
	Before, After map[string]sdkmath.Int
	Emission      dpstypes.Distribution
	Rewards       map[string]dpstypes.ProviderReward
	Scores        []reputationtypes.NodeScore
	ScoreParams   reputationtypes.Params
	Killed        int
	// WorkerCrashed and ChainCrashed: what the run crashed and restarted (CrashWorker,
	// CrashChain).
	WorkerCrashed string
	ChainCrashed  bool
	Wall          time.Duration
	// Metrics: the flops_ series validator 0's Prometheus listener served at the end.
	Metrics map[string]float64
	// WebURL: where the dashboard is served ("" when web/dist is not built).
	WebURL string
	// ProcessRuntime: provider 2's node takes PROCESS jobs (bubblewrap is installed).
	ProcessRuntime bool
}

// NodeSummary is a provider's node.
type NodeSummary struct {
	Provider    string
	Operator    string
	ID          uint64
	GPUs        int
	Class       string
	Bonded      sdkmath.Int
	Passed      uint32
	PowerGflops uint64
}

// JobSummary is a job at the end.
type JobSummary struct {
	ID          uint64
	Mode        markettypes.AllocationMode
	Status      markettypes.JobStatus
	Tasks       []markettypes.Task
	MaxDuration time.Duration
	Tip         sdkmath.Int
}

// PoolSummary is the pool at the end.
type PoolSummary struct {
	ID        uint64
	Units     int
	PaidUnits uint64
	PaidBy    map[string]int
	Status    markettypes.PoolStatus
}

// FetchSummary is the result fetched as the owner.
type FetchSummary struct {
	TaskID uint64
	Dir    string
	Files  int
	Output string
}

const poolUnits = 4

// supply: the providers register, bond, pass PoCP, and the GFL index comes out.
func (d *Demo) supply(ctx context.Context) error {
	d.sum.Nodes = make([]NodeSummary, providers)
	for i, key := range providerKeys {
		op := addrOf(d.keys[key])
		n := &d.sum.Nodes[i]
		n.Provider, n.Operator = d.name(i), op
		err := d.waitFor(ctx, 90*time.Second, d.name(i)+"'s node registered", func(ctx context.Context) (bool, error) {
			res, err := d.c.GFL.NodesByOperator(ctx, &gfltypes.QueryNodesByOperatorRequest{Operator: op})
			if err != nil || len(res.Nodes) == 0 {
				return false, err
			}
			node := res.Nodes[0]
			n.ID, n.GPUs, n.Class = node.Id, len(node.Gpus), node.GpuClass
			return true, nil
		})
		if err != nil {
			return err
		}
		col, err := d.c.Collateral.Collateral(ctx, &sstypes.QueryCollateralRequest{Provider: op})
		if err != nil {
			return err
		}
		n.Bonded = col.Collateral.Bonded
		d.say(d.name(i), "bonded %s and registered node %d: %d x %s (%s)", dps(n.Bonded), n.ID, n.GPUs, n.Class, op)
	}
	for i := range d.sum.Nodes {
		n := &d.sum.Nodes[i]
		err := d.waitFor(ctx, 120*time.Second, fmt.Sprintf("node %d's first PoCP challenge", n.ID), func(ctx context.Context) (bool, error) {
			res, err := d.c.GFL.NodeStats(ctx, &gfltypes.QueryNodeStatsRequest{NodeId: n.ID})
			if err != nil || res.Stats.Passed == 0 {
				return false, err
			}
			n.Passed = res.Stats.Passed
			d.say(d.name(i), "node %d passed its PoCP challenge: an exact GEMM, sampled and recomputed on chain, measured %v GFLOP/s", n.ID, res.Stats.Samples)
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	d.say("gfl", "waiting for the epoch to end: the GFL index is the median of each node's samples, minted as ugfl")
	err := d.waitFor(ctx, 2*d.o.Epoch+60*time.Second, "the GFL index", func(ctx context.Context) (bool, error) {
		for i := range d.sum.Nodes {
			res, err := d.c.GFL.NodePower(ctx, &gfltypes.QueryNodePowerRequest{NodeId: d.sum.Nodes[i].ID})
			if err != nil || res.PowerGflops == 0 {
				return false, err
			}
			d.sum.Nodes[i].PowerGflops = res.PowerGflops
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	np, err := d.c.GFL.NetworkPower(ctx, &gfltypes.QueryNetworkPowerRequest{})
	if err != nil {
		return err
	}
	d.sum.NetworkGflops = np.Power.TotalGflops
	for i, n := range d.sum.Nodes {
		bal := d.balance(ctx, n.Operator, "ugfl")
		d.say(d.name(i), "node %d: %d GFLOP/s verified -> %s ugfl held by its operator (non-transferable)", n.ID, n.PowerGflops, bal)
	}
	d.say("gfl", "network: %d nodes, %d GFLOP/s = %.6f GFL (1 GFL = 1 PFLOP/s)", np.Power.Nodes, np.Power.TotalGflops, float64(np.Power.TotalGflops)/1e6)
	return nil
}

// demand: the client submits an ASSIGN job, an AUCTION job and a POOL, and follows them.
func (d *Demo) demand(ctx context.Context) error {
	d.sum.Before = d.balances(ctx)
	client := addrOf(d.keys["client"])
	dir := filepath.Join(d.o.Home, "jobs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	deadline := time.Now().UTC().Add(30 * time.Minute).Format(time.RFC3339)
	files := map[string]string{
		"assign.yaml": fmt.Sprintf(jobYAML, "ASSIGN", 1024, 2, deadline),
		// one task, two bidders: the cheaper ask wins at the price of the losing one
		"auction.yaml": strings.Replace(fmt.Sprintf(jobYAML, "AUCTION", 1024, 1, deadline), "task_count: 2", "task_count: 1", 1),
		"pool.yaml":    poolYAML,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return err
		}
	}
	enc := d.c.Encoding()
	for _, mode := range []string{"assign", "auction"} {
		path := filepath.Join(dir, mode+".yaml")
		var spec markettypes.JobSpec
		if err := specfile.Read(enc.Codec, path, &spec); err != nil {
			return err
		}
		res, err := d.client.Submit(ctx, &markettypes.MsgSubmitJob{Owner: client, Spec: spec})
		if err != nil {
			return fmt.Errorf("submit %s: %w", path, err)
		}
		id, err := d.newestJob(ctx, client)
		if err != nil {
			return err
		}
		d.sum.Jobs = append(d.sum.Jobs, JobSummary{ID: id, Mode: spec.Mode, MaxDuration: spec.MaxDuration, Tip: spec.PriorityTip.Amount})
		d.say("client", "submitted job %d (%s, %d x BUILTIN GEMM n=%d, verified by on-chain sampling) from %s in block %d: %s escrowed",
			id, strings.TrimPrefix(spec.Mode.String(), "ALLOCATION_MODE_"), spec.TaskCount, spec.Builtin.GemmN, path, res.Height, dps(spec.Budget()))
	}
	var pspec markettypes.PoolSpec
	if err := specfile.Read(enc.Codec, filepath.Join(dir, "pool.yaml"), &pspec); err != nil {
		return err
	}
	if _, err := d.client.Submit(ctx, &markettypes.MsgCreatePool{Owner: client, Spec: pspec}); err != nil {
		return fmt.Errorf("create pool: %w", err)
	}
	pools, err := d.c.Market.Pools(ctx, &markettypes.QueryPoolsRequest{Pagination: &query.PageRequest{Reverse: true, Limit: 1}})
	if err != nil {
		return fmt.Errorf("pools: %w", err)
	}
	if len(pools.Pools) == 0 {
		return fmt.Errorf("the pool created by the client is not listed")
	}
	d.sum.Pool = PoolSummary{ID: pools.Pools[0].Id, Units: poolUnits, PaidBy: map[string]int{}}
	d.say("client", "opened pool %d (continuous inference: GEMM n=%d per unit, %s per verified unit, budget %s)",
		d.sum.Pool.ID, pspec.Builtin.GemmN, dps(pspec.UnitPrice.Amount), dps(pspec.Budget.Amount))
	units := make([]markettypes.Input, poolUnits)
	for i := range units {
		body := fmt.Sprintf("prompt batch %d", i+1)
		h := sha256.Sum256([]byte(body))
		units[i] = markettypes.Input{Uri: fmt.Sprintf("https://client.example/batches/%d", i+1), Sha256: hex.EncodeToString(h[:])}
	}
	if _, err := d.client.Submit(ctx, &markettypes.MsgSubmitUnits{Owner: client, PoolId: d.sum.Pool.ID, Units: units}); err != nil {
		return fmt.Errorf("submit units: %w", err)
	}
	d.say("client", "posted %d units to pool %d; members race for them", poolUnits, d.sum.Pool.ID)

	if d.o.KillValidator > 0 {
		if err := d.killValidator(d.o.KillValidator); err != nil {
			return err
		}
		d.sum.Killed = d.o.KillValidator
		d.say("chain", "killed validator node%d (SIGKILL): %d of %d validators left, the chain keeps going with > 2/3 of the power",
			d.o.KillValidator, d.o.Validators-1, d.o.Validators)
	}
	if d.o.CrashWorker > 0 {
		if err := d.crashWorker(ctx, d.o.CrashWorker-1); err != nil {
			return err
		}
	}
	if d.o.CrashChain {
		if err := d.crashChain(ctx); err != nil {
			return err
		}
	}
	if err := d.follow(ctx); err != nil {
		return err
	}
	if _, err := d.client.Submit(ctx, &markettypes.MsgClosePool{Owner: client, PoolId: d.sum.Pool.ID}); err != nil {
		return fmt.Errorf("close pool: %w", err)
	}
	p, err := d.c.Market.Pool(ctx, &markettypes.QueryPoolRequest{PoolId: d.sum.Pool.ID})
	if err != nil {
		return err
	}
	d.sum.Pool.Status = p.Pool.Status
	d.say("client", "closed pool %d: %d units paid, the members' credits paid out, the rest of the budget refunded", d.sum.Pool.ID, p.Pool.PaidUnits)
	return nil
}

// follow prints each task's, bid's and unit's changes until the jobs completed and every
// unit was paid.
func (d *Demo) follow(ctx context.Context) error {
	seen := map[string]string{}
	note := func(key, state, who, format string, args ...any) {
		if seen[key] == state {
			return
		}
		seen[key] = state
		d.say(who, format, args...)
	}
	claimed := map[uint64]uint64{} // unit -> node
	nodeName := map[uint64]string{}
	for i, n := range d.sum.Nodes {
		nodeName[n.ID] = d.name(i)
	}
	who := func(node uint64) string {
		if n, ok := nodeName[node]; ok {
			return n
		}
		return "market"
	}
	return d.waitFor(ctx, 4*time.Minute, "the jobs and the pool to settle", func(ctx context.Context) (bool, error) {
		done := true
		for j := range d.sum.Jobs {
			job := &d.sum.Jobs[j]
			jr, err := d.c.Market.Job(ctx, &markettypes.QueryJobRequest{JobId: job.ID})
			if err != nil {
				return false, err
			}
			job.Status = jr.Job.Status
			if job.Mode == markettypes.ALLOCATION_MODE_AUCTION {
				bids, err := d.c.Market.BidsByJob(ctx, &markettypes.QueryBidsByJobRequest{JobId: job.ID})
				if err != nil {
					return false, err
				}
				for _, b := range bids.Bids {
					note(fmt.Sprintf("bid %d %d", job.ID, b.NodeId), b.Status.String(), who(b.NodeId),
						"job %d: node %d bids %s per task for %d task(s) (%s)", job.ID, b.NodeId, dps(b.Price), b.Quantity, strings.TrimPrefix(b.Status.String(), "BID_STATUS_"))
				}
			}
			tasks, err := d.c.Market.TasksByJob(ctx, &markettypes.QueryTasksByJobRequest{JobId: job.ID})
			if err != nil {
				return false, err
			}
			job.Tasks = tasks.Tasks
			for _, t := range tasks.Tasks {
				key := fmt.Sprintf("task %d", t.Id)
				head := fmt.Sprintf("job %d task %d", job.ID, t.Id)
				if t.NodeId != 0 && seen[key+" node"] != fmt.Sprint(t.NodeId) {
					seen[key+" node"] = fmt.Sprint(t.NodeId)
					how := "by the scheduler (power of two choices)"
					if t.BidNode != 0 {
						how = "by the auction's uniform clearing price"
					}
					d.say(who(t.NodeId), "%s assigned to node %d at %s, %s", head, t.NodeId, dps(t.Price), how)
				}
				switch t.Status {
				case markettypes.TASK_STATUS_RUNNING:
					note(key, t.Status.String(), who(t.NodeId), "%s acked and running", head)
				case markettypes.TASK_STATUS_COMMITTED:
					note(key, t.Status.String(), who(t.NodeId), "%s committed sha256(result root || salt || provider)", head)
				case markettypes.TASK_STATUS_REVEALED, markettypes.TASK_STATUS_VERIFIED:
					note(key, "REVEALED", who(t.NodeId), "%s revealed root %s..., sampled entries recomputed on chain: verified; challenge window open", head, hex.EncodeToString(t.ResultRoot)[:12])
				case markettypes.TASK_STATUS_SETTLED:
					note(key, t.Status.String(), who(t.NodeId), "%s settled: provider paid %s", head, dps(t.Paid))
				case markettypes.TASK_STATUS_FAILED, markettypes.TASK_STATUS_EXPIRED, markettypes.TASK_STATUS_CANCELLED:
					return false, fmt.Errorf("%s %s: %s", head, t.Status, t.Reason)
				}
			}
			switch job.Status {
			case markettypes.JOB_STATUS_COMPLETED:
				note(fmt.Sprintf("job %d", job.ID), "done", "market", "job %d completed", job.ID)
			case markettypes.JOB_STATUS_FAILED, markettypes.JOB_STATUS_CANCELLED:
				return false, fmt.Errorf("job %d %s", job.ID, job.Status)
			default:
				done = false
			}
		}
		p, err := d.c.Market.Pool(ctx, &markettypes.QueryPoolRequest{PoolId: d.sum.Pool.ID})
		if err != nil {
			return false, err
		}
		note("pool members", fmt.Sprint(p.Pool.Members), "market", "pool %d has %d member(s)", p.Pool.Id, p.Pool.Members)
		for u := uint64(1); u <= poolUnits; u++ {
			key := fmt.Sprintf("unit %d", u)
			ur, err := d.c.Market.Unit(ctx, &markettypes.QueryUnitRequest{PoolId: p.Pool.Id, UnitId: u})
			if err != nil && p.Pool.Status == markettypes.POOL_STATUS_OPEN && strings.Contains(err.Error(), markettypes.ErrUnitNotFound.Error()) {
				// a posted unit's record goes when it is paid (an open pool cancels none),
				// perhaps while the demo was killing and restarting processes and never saw
				// it claimed (before, that unit failed every check and the demo waited for
				// ever); who was credited is read from the members' earnings below
				ur, err = &markettypes.QueryUnitResponse{Unit: markettypes.Unit{Id: u, NodeId: claimed[u], Status: markettypes.UNIT_STATUS_PAID}}, nil
			}
			if err != nil {
				return false, err
			}
			unit := ur.Unit
			if unit.Status == markettypes.UNIT_STATUS_COMMITTED {
				claimed[u] = unit.NodeId
			}
			switch unit.Status {
			case markettypes.UNIT_STATUS_COMMITTED:
				note(key, unit.Status.String(), who(unit.NodeId), "pool %d unit %d claimed by node %d (first valid commitment)", p.Pool.Id, u, unit.NodeId)
			case markettypes.UNIT_STATUS_PAID:
				if unit.NodeId == 0 {
					note(key, unit.Status.String(), "market", "pool %d unit %d verified: %s credited to the member that claimed it while the demo was not watching", p.Pool.Id, u, dps(p.Pool.Spec.UnitPrice.Amount))
					break
				}
				note(key, unit.Status.String(), who(unit.NodeId), "pool %d unit %d verified: %s credited to node %d", p.Pool.Id, u, dps(p.Pool.Spec.UnitPrice.Amount), unit.NodeId)
			}
		}
		d.sum.Pool.PaidUnits = p.Pool.PaidUnits
		if !done || p.Pool.PaidUnits != poolUnits {
			return false, nil
		}
		// each member's credited units (not withdrawn yet: a worker withdraws an open
		// pool's credits only in batches larger than the demo's)
		for i, n := range d.sum.Nodes {
			e, err := d.c.Market.PoolEarnings(ctx, &markettypes.QueryPoolEarningsRequest{PoolId: p.Pool.Id, Provider: n.Operator})
			if err != nil {
				return false, err
			}
			d.sum.Pool.PaidBy[d.name(i)] = int(e.Units)
		}
		return true, nil
	})
}

// fetch downloads a task's outputs as the job's owner with `flops-worker fetch`.
func (d *Demo) fetch(ctx context.Context) error {
	if len(d.sum.Jobs) == 0 || len(d.sum.Jobs[0].Tasks) == 0 {
		return fmt.Errorf("no task to fetch")
	}
	t := d.sum.Jobs[0].Tasks[0]
	dir := filepath.Join(d.o.Home, "fetched", fmt.Sprintf("task-%d", t.Id))
	out, err := command(ctx, d.bin("flops-worker"), "fetch", fmt.Sprint(t.Id), "--key", "client",
		"--keyring-dir", filepath.Join(d.chainHome(), "node0"), "--grpc", d.grpcAddr(), "--out", dir)
	if err != nil {
		return fmt.Errorf("flops-worker fetch %d: %w\n%s", t.Id, err, out)
	}
	d.sum.Fetched = FetchSummary{TaskID: t.Id, Dir: dir, Output: strings.TrimSpace(out)}
	d.say("client", "flops-worker fetch %d (signed by the job's owner): %s", t.Id, d.sum.Fetched.Output)
	return filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		bz, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h := sha256.Sum256(bz)
		d.sum.Fetched.Files++
		rel, _ := filepath.Rel(dir, path)
		d.say("client", "  %-24s %8d bytes  sha256 %s", rel, len(bz), hex.EncodeToString(h[:]))
		return nil
	})
}

// rewards waits for the distribution of the epoch the work was done in.
func (d *Demo) rewards(ctx context.Context) error {
	ep, err := epochstypes.NewQueryClient(d.c.Conn()).CurrentEpoch(ctx, &epochstypes.QueryCurrentEpochRequest{Identifier: "flops"})
	if err != nil {
		return err
	}
	d.say("dps", "waiting for the end of epoch %d: DPS emission, split by GFL (availability) and verified work, times reputation", ep.CurrentEpoch)
	err = d.waitFor(ctx, 2*d.o.Epoch+60*time.Second, "the epoch's rewards", func(ctx context.Context) (bool, error) {
		res, err := d.c.DPS.LatestEmission(ctx, &dpstypes.QueryLatestEmissionRequest{})
		if err != nil || !res.Found {
			return false, err
		}
		if res.Distribution.Epoch < uint64(ep.CurrentEpoch) || res.Distribution.Phase != dpstypes.DISTRIBUTION_PHASE_DONE {
			return false, nil
		}
		d.sum.Emission = res.Distribution
		return true, nil
	})
	if err != nil {
		return err
	}
	d.sum.Rewards = map[string]dpstypes.ProviderReward{}
	for i, key := range providerKeys {
		res, err := d.c.DPS.ProviderRewards(ctx, &dpstypes.QueryProviderRewardsRequest{Provider: addrOf(d.keys[key]),
			Pagination: &query.PageRequest{Reverse: true, Limit: 1}})
		if err != nil {
			return err
		}
		for _, r := range res.Rewards {
			if r.Epoch == d.sum.Emission.Epoch {
				d.sum.Rewards[d.name(i)] = r
			}
		}
	}
	ranked, err := d.c.Reputation.Ranked(ctx, &reputationtypes.QueryRankedRequest{})
	if err != nil {
		return err
	}
	d.sum.Scores = ranked.Scores
	rp, err := d.c.Reputation.Params(ctx, &reputationtypes.QueryParamsRequest{})
	if err != nil {
		return err
	}
	d.sum.ScoreParams = rp.Params
	d.sum.After = d.balances(ctx)
	d.sum.Metrics, err = d.scrapeMetrics(ctx)
	return err
}

// scrapeMetrics reads the flops metrics from validator 0's Prometheus listener (the
// localnet's, on 127.0.0.1 at 26660 plus the port offset), as Prometheus would.
func (d *Demo) scrapeMetrics(ctx context.Context) (map[string]float64, error) {
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", d.port(26660))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics at %s: %w", url, err)
	}
	defer func() { _ = res.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "flops_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics at %s: %w", url, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("metrics at %s: no flops_ metric", url)
	}
	return out, nil
}

// balances of the accounts the summary shows, in udps.
func (d *Demo) balances(ctx context.Context) map[string]sdkmath.Int {
	out := map[string]sdkmath.Int{"client": d.balance(ctx, addrOf(d.keys["client"]), chain.BondDenom)}
	for i, key := range providerKeys {
		out[d.name(i)] = d.balance(ctx, addrOf(d.keys[key]), chain.BondDenom)
	}
	out["reward pool"] = d.balance(ctx, moduleAddr(dpstypes.ModuleName), chain.BondDenom)
	// the fee collector is emptied into x/distribution every block: that is where fees are
	out["validators (fees)"] = d.balance(ctx, moduleAddr(distrtypes.ModuleName), chain.BondDenom)
	return out
}

func (d *Demo) balance(ctx context.Context, addr, denom string) sdkmath.Int {
	res, err := d.c.Bank.Balance(ctx, &banktypes.QueryBalanceRequest{Address: addr, Denom: denom})
	if err != nil || res.Balance == nil {
		return sdkmath.ZeroInt()
	}
	return res.Balance.Amount
}

// newestJob is the owner's latest job id.
func (d *Demo) newestJob(ctx context.Context, owner string) (uint64, error) {
	res, err := d.c.Market.JobsByOwner(ctx, &markettypes.QueryJobsByOwnerRequest{Owner: owner, Pagination: &query.PageRequest{Reverse: true, Limit: 1}})
	if err != nil {
		return 0, err
	}
	if len(res.Jobs) == 0 {
		return 0, fmt.Errorf("no job listed for %s", owner)
	}
	return res.Jobs[0].Id, nil
}

// The demo's specs: the same format as examples/job.yaml and examples/pool.yaml.
const jobYAML = `# written by the demo; submit your own with: flopsd tx market submit-job <file> --from client
workload: WORKLOAD_CLASS_BATCH
runtime: RUNTIME_BUILTIN
image: gemm
mode: ALLOCATION_MODE_%s
builtin: {gemm_n: %d, gemm_r: %d}
requirements: {gpu_count: 1}
task_count: 2
replicas: 1
verification: VERIFICATION_CLASS_BUILTIN_GEMM
max_price_per_task: {denom: udps, amount: "1000000"}
max_duration: 300s
deadline: "%s"
priority_tip: {denom: udps, amount: "0"}
checkpoint_interval: 0s
verification_budget: {denom: udps, amount: "0"}
`

const poolYAML = `# written by the demo; open your own with: flopsd tx market create-pool <file> --from client
workload: WORKLOAD_CLASS_INFERENCE
runtime: RUNTIME_BUILTIN
image: gemm
builtin: {gemm_n: 512, gemm_r: 1}
requirements: {gpu_count: 1}
verification: VERIFICATION_CLASS_BUILTIN_GEMM
unit_price: {denom: udps, amount: "200000"}
budget: {denom: udps, amount: "1000000"}
max_providers: 4
unit_max_duration: 60s
`
