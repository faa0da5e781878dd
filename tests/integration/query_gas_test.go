package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/testutil/apptest"
	workerchain "github.com/flopsnet/flops/worker/chain"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// TestWholeTableScanStopsAtQueryGasLimit is the attack of a stranger on a public node's
// query endpoints: the market's Tasks query with a status filter has no index (a page
// reads tasks until it holds `limit` of them), so asking for a status that no task has,
// or for a page of a billion, reads the whole table, and the SDK's default query gas limit
// is none. On a chain whose providers revealed results with the longest output URIs they
// may (types.MaxURILen), such a query reads tens of megabytes for each call, free, as
// often as the caller likes. A node set up by flopsd init (TestStartBoundsQueryGas in
// cmd/flopsd) and the test app stop it at chain.DefaultQueryGasLimit, over gRPC (the
// REST gateway's path too) and ABCI alike, while the pages the worker, the CLI and the
// dashboard ask for are answered, and the dashboard counts its queue with Queue, which
// reads the scheduler's queue, not the tasks.
func TestWholeTableScanStopsAtQueryGasLimit(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("p1"))
	provider := a.Account("p1").Address.String()
	const tasks = 20_000
	a.Prepare(func(ctx sdk.Context) { settledTasks(t, a, ctx, provider, 1, tasks) })
	a.NextBlock()

	// the scan, unbounded, reads more than the limit allows: the state is the attack's
	scan := &markettypes.QueryTasksRequest{Status: markettypes.TASK_STATUS_PENDING, Pagination: &query.PageRequest{Limit: 1}}
	ctx := a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
	res, err := marketkeeper.NewQueryServerImpl(a.MarketKeeper).Tasks(ctx, scan)
	require.NoError(t, err)
	require.Empty(t, res.Tasks)
	require.Greater(t, ctx.GasMeter().GasConsumed(), chain.DefaultQueryGasLimit, "the whole table's read")
	t.Logf("unbounded, the scan of %d tasks spent %d gas (%d a task)", tasks, ctx.GasMeter().GasConsumed(), ctx.GasMeter().GasConsumed()/tasks)

	q := grpcMarket(t, a)
	bg := context.Background()

	for name, req := range map[string]*markettypes.QueryTasksRequest{
		"a status no task has":         scan,
		"a page of a billion":          {Pagination: &query.PageRequest{Limit: 1_000_000_000}},
		"a count of them all":          {Pagination: &query.PageRequest{Limit: 1, CountTotal: true}},
		"a count without a page limit": {Status: markettypes.TASK_STATUS_SETTLED, Pagination: &query.PageRequest{CountTotal: true}},
	} {
		_, err := q.Tasks(bg, req)
		require.ErrorContains(t, err, fmt.Sprintf("Query gas limit exceeded: %d", chain.DefaultQueryGasLimit), "gRPC, %s", name)

		bz, err := req.Marshal()
		require.NoError(t, err)
		abciRes, err := a.Query(bg, &abci.RequestQuery{Path: "/flops.market.v1.Query/Tasks", Data: bz})
		require.NoError(t, err)
		// baseapp's ABCI Query reports the gas meter's out-of-gas panic as a panic that
		// names the read it stopped at (the same query, unbounded, answers: above)
		require.Equal(t, sdkerrors.ErrPanic.ABCICode(), abciRes.Code, "ABCI, %s: %s", name, abciRes.Log)
		require.Regexp(t, `^\{(ReadFlat|ReadPerByte|IterNextFlat|ValuePerByte)\}: panic`, abciRes.Log, "ABCI, %s", name)
	}

	// a request without a page limit (a bare REST GET) gets a page of 100 and no count:
	// the SDK's own default counted the whole table, which the node refused
	// (internal/querypage)
	for _, req := range []*markettypes.QueryTasksRequest{{Status: markettypes.TASK_STATUS_SETTLED}, {Pagination: &query.PageRequest{}}} {
		res, err := q.Tasks(bg, req)
		require.NoError(t, err, "gRPC, no page limit")
		require.Len(t, res.Tasks, 100)
		require.Zero(t, res.Pagination.Total)
		require.NotEmpty(t, res.Pagination.NextKey)
		bz, err := req.Marshal()
		require.NoError(t, err)
		abciRes, err := a.Query(bg, &abci.RequestQuery{Path: "/flops.market.v1.Query/Tasks", Data: bz})
		require.NoError(t, err)
		require.Zero(t, abciRes.Code, "ABCI, no page limit: %s", abciRes.Log)
		var page markettypes.QueryTasksResponse
		require.NoError(t, page.Unmarshal(abciRes.Value))
		require.Len(t, page.Tasks, 100)
		require.Zero(t, page.Pagination.Total)
	}

	// what the clients ask is answered: the worker's page of its tasks (200), a page of
	// 100 in a status, the dashboard's largest page (1,000)
	mine, err := q.TasksByProvider(bg, &markettypes.QueryTasksByProviderRequest{Provider: provider, Pagination: &query.PageRequest{Limit: 200}})
	require.NoError(t, err)
	require.Len(t, mine.Tasks, 200)
	settled, err := q.Tasks(bg, &markettypes.QueryTasksRequest{Status: markettypes.TASK_STATUS_SETTLED, Pagination: &query.PageRequest{Limit: 100}})
	require.NoError(t, err)
	require.Len(t, settled.Tasks, 100)
	largest := &markettypes.QueryTasksRequest{Pagination: &query.PageRequest{Limit: 1000, Reverse: true}}
	page, err := q.Tasks(bg, largest)
	require.NoError(t, err)
	require.Len(t, page.Tasks, 1000)
	require.Equal(t, uint64(tasks), page.Tasks[0].Id)
	ctx = a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
	_, err = marketkeeper.NewQueryServerImpl(a.MarketKeeper).Tasks(ctx, largest)
	require.NoError(t, err)
	require.Less(t, ctx.GasMeter().GasConsumed(), chain.DefaultQueryGasLimit/10, "a page of 1,000 of the largest tasks")
	t.Logf("a page of 1,000 tasks spent %d gas", ctx.GasMeter().GasConsumed())

	// the dashboard's queue figure, which was the scan of pending tasks, reads the
	// scheduler's queue: nothing of the retained tasks
	queue, err := q.Queue(bg, &markettypes.QueryQueueRequest{})
	require.NoError(t, err)
	require.Equal(t, markettypes.QueryQueueResponse{}, *queue)
	ctx = a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
	_, err = marketkeeper.NewQueryServerImpl(a.MarketKeeper).Queue(ctx, &markettypes.QueryQueueRequest{})
	require.NoError(t, err)
	require.Less(t, ctx.GasMeter().GasConsumed(), uint64(10_000), "the queue's count, with %d tasks retained", tasks)
}

// settledTasks writes tasks from..to of provider, settled, with the longest output URIs a
// reveal may leave (types.MaxURILen), on 100 nodes: what a busy provider's retained tasks
// (job_retention_blocks) look like to a query.
func settledTasks(t *testing.T, a *apptest.App, ctx sdk.Context, provider string, from, to uint64) {
	t.Helper()
	uri := "https://worker.example/out/" + strings.Repeat("x", markettypes.MaxURILen-40)
	for i := from; i <= to; i++ {
		task := markettypes.Task{
			Id: i, JobId: i, Status: markettypes.TASK_STATUS_SETTLED, NodeId: 1 + i%100, Provider: provider,
			Price: sdkmath.NewInt(100_000), Commitment: make([]byte, 32), ResultRoot: make([]byte, 32),
			OutputUri: fmt.Sprintf("%s%012d", uri, i),
		}
		require.NoError(t, a.MarketKeeper.Tasks.Set(ctx, task.Id, task))
	}
}

// grpcMarket is a market query client of the app over the SDK's gRPC server, as flopsd
// start serves it (its query gas limit included).
func grpcMarket(t *testing.T, a *apptest.App) markettypes.QueryClient {
	t.Helper()
	return markettypes.NewQueryClient(a.GRPCConn(t))
}

// TestBusyProviderWorkerSeesItsTasksUnderTheQueryGasLimit: flops-worker polls its node's
// tasks in flight every block. A busy provider retains a day's settled tasks
// (job_retention_blocks): 30,000 with long output URIs are about 110,000,000 gas to read,
// twice what a node lets one query spend (chain.DefaultQueryGasLimit), and reading them
// every block costs the node serving the worker a day of tasks a block. The worker's poll
// (worker/chain TasksInFlight: TasksByNode, active, by next key, over the SDK's gRPC
// server) finds every task in flight on its node and reads none of the settled ones from
// before them: the node's slot counts what is in flight. The provider's listing over the
// same tasks, where the other 99 nodes have no slot (as nodes deleted since), reads
// every entry of those, at most 5,000 a page, and finds the same tasks.
func TestBusyProviderWorkerSeesItsTasksUnderTheQueryGasLimit(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("p1"))
	provider := a.Account("p1").Address.String()
	node := registerNode(t, a, "p1", h200Spec("busy", "eu-west", 8, 1_000_000), 0)
	const retained = 30_000
	var live []uint64
	a.Prepare(func(ctx sdk.Context) {
		settledTasks(t, a, ctx, provider, 1, retained) // on nodes 1 to 100, the worker's among them
		slot, err := a.MarketKeeper.Slots.Get(ctx, node)
		require.NoError(t, err)
		for i, s := range []markettypes.TaskStatus{markettypes.TASK_STATUS_ASSIGNED, markettypes.TASK_STATUS_RUNNING, markettypes.TASK_STATUS_COMMITTED} {
			id := uint64(retained + 1 + i)
			require.NoError(t, a.MarketKeeper.Tasks.Set(ctx, id, markettypes.Task{Id: id, JobId: id, Status: s, NodeId: node, Provider: provider, Price: sdkmath.NewInt(100_000)}))
			live = append(live, id)
			slot.OpenTasks++ // as an assignment counts it
		}
		require.NoError(t, a.MarketKeeper.Slots.Set(ctx, node, slot))
	})
	a.NextBlock()
	require.LessOrEqual(t, node, uint64(100), "the worker's node holds some of the settled tasks")

	q := grpcMarket(t, a)
	tasks, err := workerchain.TasksInFlight(context.Background(), q, node)
	require.NoError(t, err)
	var found []uint64
	for _, task := range tasks {
		found = append(found, task.Id)
	}
	require.Equal(t, live, found, "every task in flight on the node, oldest first")

	ctx := a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
	qs := marketkeeper.NewQueryServerImpl(a.MarketKeeper)
	res, err := qs.TasksByNode(ctx, &markettypes.QueryTasksByNodeRequest{NodeId: node, Active: true, Pagination: &query.PageRequest{Limit: 200}})
	require.NoError(t, err)
	require.Len(t, res.Tasks, 3)
	require.Empty(t, res.Pagination.NextKey, "one page")
	require.Less(t, ctx.GasMeter().GasConsumed(), uint64(50_000), "the slot and the 3 tasks, none of the 300 settled on the node")
	t.Logf("the worker's poll spent %d gas", ctx.GasMeter().GasConsumed())

	found = nil
	var key []byte
	pages := 0
	for {
		res, err := q.TasksByProvider(context.Background(), &markettypes.QueryTasksByProviderRequest{
			Provider: provider, Active: true, Pagination: &query.PageRequest{Key: key, Limit: 200},
		})
		require.NoError(t, err, "page %d", pages+1)
		pages++
		for _, task := range res.Tasks {
			found = append(found, task.Id)
		}
		if len(res.Pagination.NextKey) == 0 {
			break
		}
		key = res.Pagination.NextKey
	}
	require.ElementsMatch(t, live, found, "every task in flight")
	require.GreaterOrEqual(t, pages, retained/5_000, "5,000 reads a page")

	ctx = a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
	_, err = qs.TasksByProvider(ctx, &markettypes.QueryTasksByProviderRequest{
		Provider: provider, Active: true, Pagination: &query.PageRequest{Limit: 200},
	})
	require.NoError(t, err)
	require.Less(t, ctx.GasMeter().GasConsumed(), chain.DefaultQueryGasLimit/2, "a page of 5,000 of the largest tasks")
	t.Logf("a page of 5,000 reads spent %d gas", ctx.GasMeter().GasConsumed())
}

// TestClientSeesItsPoolsBehindPoolsOfTheLargestSpecs is a stranger's attack on every
// client's dashboard: its client view listed the client's pools by reading the 500 newest
// pools, each with its spec, and keeping the client's. A pool's spec may be about 330 KB
// (64 arguments of 1 KiB, 64 variables of 4 KiB), so 60 such pools opened by mallory made
// that read more than a node lets one query spend (chain.DefaultQueryGasLimit), and the
// view failed for everyone. The view now asks PoolsByOwner (the chain's pools by owner
// index, store version 8), which reads the client's pools only.
func TestClientSeesItsPoolsBehindPoolsOfTheLargestSpecs(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "mallory"))
	client, mallory := a.Account("client").Address.String(), a.Account("mallory").Address.String()
	spec := markettypes.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"serve"},
		Verification: markettypes.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
		Budget: sdk.NewInt64Coin(udps, 10_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
	}
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: client, Spec: spec})
	big := spec
	big.Command = nil
	for i := range markettypes.MaxArgs {
		big.Command = append(big.Command, strings.Repeat("c", markettypes.MaxArgLen))
		big.Env = append(big.Env, markettypes.EnvVar{Name: fmt.Sprintf("V%d", i), Value: strings.Repeat("e", markettypes.MaxEnvValueLen)})
	}
	a.Prepare(func(ctx sdk.Context) { // as 60 MsgCreatePool of mallory's leave them
		for range 60 {
			id, err := a.MarketKeeper.PoolSeq.Next(ctx)
			require.NoError(t, err)
			require.NoError(t, a.MarketKeeper.SetPool(ctx, markettypes.Pool{Id: id, Owner: mallory, Spec: big, Status: markettypes.POOL_STATUS_OPEN,
				Escrow: sdkmath.NewInt(10_000), Unpaid: sdkmath.ZeroInt(), NextUnit: 1}))
		}
	})
	a.NextBlock()

	ask := func(path string, req interface{ Marshal() ([]byte, error) }) *abci.ResponseQuery {
		return abciQuery(t, a, path, req)
	}
	// the dashboard's read before, over ABCI as the dashboard queries
	old := ask("/flops.market.v1.Query/Pools", &markettypes.QueryPoolsRequest{Pagination: &query.PageRequest{Limit: 500, Reverse: true}})
	require.Equal(t, sdkerrors.ErrPanic.ABCICode(), old.Code, "refused at the query gas limit: %s", old.Log)
	// and now
	res := ask("/flops.market.v1.Query/PoolsByOwner", &markettypes.QueryPoolsByOwnerRequest{Owner: client, Pagination: &query.PageRequest{Limit: 100, Reverse: true}})
	require.Zero(t, res.Code, res.Log)
	var mine markettypes.QueryPoolsByOwnerResponse
	require.NoError(t, mine.Unmarshal(res.Value))
	require.Len(t, mine.Pools, 1)
	require.Equal(t, client, mine.Pools[0].Owner)
	require.Equal(t, uint64(1), mine.Pools[0].Id)
}

// TestNetworkViewCountsJobsOfABusyChain is the network view's jobs-by-status figure on a
// busy chain. The view counted each status with JobsByStatus and count_total, which read
// an index entry for every job in the status, and the chain keeps every job finished in
// the last job_retention_blocks (100,000 by default): at ten jobs a block the count of
// the completed ones was more than a node lets one query spend (chain.DefaultQueryGasLimit:
// 69 gas a job, refused from 724,637 jobs), and the figure failed.
// JobCounts (store version 9) reads one record however many jobs there are, and the job
// lists' count_total now answers from it too (TestJobListsCountFromTheRecord).
func TestNetworkViewCountsJobsOfABusyChain(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client"))
	owner := a.Account("client").Address.String()
	qs := marketkeeper.NewQueryServerImpl(a.MarketKeeper)
	const step = 2_000
	var countGas, recordGas []uint64
	for round := uint64(1); round <= 2; round++ {
		a.Prepare(func(ctx sdk.Context) { completedJobs(t, a, ctx, owner, step) })
		a.NextBlock()

		ctx := a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
		old, err := qs.JobsByStatus(ctx, &markettypes.QueryJobsByStatusRequest{Status: markettypes.JOB_STATUS_COMPLETED,
			Pagination: &query.PageRequest{Limit: 1, CountTotal: true}})
		require.NoError(t, err)
		require.Equal(t, round*step, old.Pagination.Total)
		countGas = append(countGas, ctx.GasMeter().GasConsumed())

		bz, err := (&markettypes.QueryJobCountsRequest{}).Marshal()
		require.NoError(t, err)
		res, err := a.Query(context.Background(), &abci.RequestQuery{Path: "/flops.market.v1.Query/JobCounts", Data: bz})
		require.NoError(t, err)
		require.Zero(t, res.Code, res.Log)
		var counts markettypes.QueryJobCountsResponse
		require.NoError(t, counts.Unmarshal(res.Value))
		require.Equal(t, markettypes.JobCounts{Completed: round * step, NextJobId: round*step + 1}, counts.Counts)
		require.Equal(t, round*step, counts.Total)
		ctx = a.Ctx().WithGasMeter(storetypes.NewInfiniteGasMeter())
		_, err = qs.JobCounts(ctx, &markettypes.QueryJobCountsRequest{})
		require.NoError(t, err)
		recordGas = append(recordGas, ctx.GasMeter().GasConsumed())
	}
	require.Equal(t, recordGas[0], recordGas[1], "JobCounts reads as much at %d jobs as at %d", 2*step, step)
	require.Equal(t, countGas[0], countGas[1], "JobsByStatus's count_total reads as much at %d jobs as at %d", 2*step, step)
	t.Logf("JobsByStatus with count_total: %d gas at %d and %d jobs; JobCounts: %d gas", countGas[1], step, 2*step, recordGas[1])
}

// completedJobs writes n jobs of owner, completed, after the last job id, and counts them
// as store version 9's migration does.
func completedJobs(t *testing.T, a *apptest.App, ctx sdk.Context, owner string, n uint64) {
	t.Helper()
	k := a.MarketKeeper
	next, nextTask, err := k.PeekIDs(ctx)
	require.NoError(t, err)
	for id := next; id < next+n; id++ {
		require.NoError(t, k.JobSpecs.Set(ctx, id, markettypes.JobSpec{}))
		require.NoError(t, k.Jobs.Set(ctx, id, markettypes.Job{Id: id, Owner: owner, Status: markettypes.JOB_STATUS_COMPLETED,
			Escrow: sdkmath.ZeroInt(), ClearingPrice: sdkmath.ZeroInt(), VerificationLeft: sdkmath.ZeroInt(), FinishedHeight: ctx.BlockHeight()}))
	}
	require.NoError(t, k.IDs.Set(ctx, collections.Join(next+n, nextTask)))
	require.NoError(t, marketkeeper.NewMigrator(k).Migrate8to9(ctx))
}

// abciQuery asks the app a query over ABCI, as the dashboard and CosmJS clients do.
func abciQuery(t *testing.T, a *apptest.App, path string, req interface{ Marshal() ([]byte, error) }) *abci.ResponseQuery {
	t.Helper()
	bz, err := req.Marshal()
	require.NoError(t, err)
	res, err := a.Query(context.Background(), &abci.RequestQuery{Path: path, Data: bz})
	require.NoError(t, err)
	return res
}

// TestClientListsItsJobsOfTheLargestSpecs: the client view lists the client's 50 newest
// jobs, and each came with its spec. The largest legal spec (maximalJob) is hundreds of
// kilobytes, so a client whose jobs are that large had its list refused by the node
// (chain.DefaultQueryGasLimit) from a few dozen of them, and the view failed; the same
// for anyone's page of every job or of a status, where a stranger's large jobs are the
// page. The lists now take omit_spec, which reads the jobs' records only, and the views
// ask for it.
func TestClientListsItsJobsOfTheLargestSpecs(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client"))
	owner := a.Account("client").Address.String()
	spec := maximalJob(t, a) // and its command and environment at their longest too
	for i := range spec.Command {
		spec.Command[i] = fmt.Sprintf("%03d", i) + strings.Repeat("c", markettypes.MaxArgLen-3)
	}
	for i := range spec.Env {
		spec.Env[i].Value = strings.Repeat("v", markettypes.MaxEnvValueLen)
	}
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	require.NoError(t, spec.Validate(p, a.BlockTime()), "the largest spec is legal")
	size := spec.Size()
	n := int(chain.DefaultQueryGasLimit/uint64(3*size)) + 2 // read at 3 gas a byte: the page passes the limit
	require.Less(t, n, 50, "fewer than the view's page")
	a.Prepare(func(ctx sdk.Context) { // as n of the client's MsgSubmitJob leave them
		k := a.MarketKeeper
		next, nextTask, err := k.PeekIDs(ctx)
		require.NoError(t, err)
		for id := next; id < next+uint64(n); id++ {
			require.NoError(t, k.JobSpecs.Set(ctx, id, spec))
			require.NoError(t, k.Jobs.Set(ctx, id, markettypes.Job{Id: id, Owner: owner, Status: markettypes.JOB_STATUS_ACTIVE,
				Escrow: sdkmath.NewInt(1_000), ClearingPrice: sdkmath.ZeroInt(), VerificationLeft: sdkmath.ZeroInt(), SubmittedHeight: ctx.BlockHeight()}))
		}
		require.NoError(t, k.IDs.Set(ctx, collections.Join(next+uint64(n), nextTask)))
	})
	a.NextBlock()
	t.Logf("%d jobs of %d bytes of spec each", n, size)

	page := &query.PageRequest{Limit: 50, Reverse: true}
	lists := []struct {
		path      string
		with, not interface{ Marshal() ([]byte, error) }
		jobs      func([]byte) []markettypes.Job
	}{
		{"/flops.market.v1.Query/JobsByOwner",
			&markettypes.QueryJobsByOwnerRequest{Owner: owner, Pagination: page},
			&markettypes.QueryJobsByOwnerRequest{Owner: owner, Pagination: page, OmitSpec: true},
			func(bz []byte) []markettypes.Job {
				var r markettypes.QueryJobsByOwnerResponse
				require.NoError(t, r.Unmarshal(bz))
				return r.Jobs
			}},
		{"/flops.market.v1.Query/JobsByStatus",
			&markettypes.QueryJobsByStatusRequest{Status: markettypes.JOB_STATUS_ACTIVE, Pagination: page},
			&markettypes.QueryJobsByStatusRequest{Status: markettypes.JOB_STATUS_ACTIVE, Pagination: page, OmitSpec: true},
			func(bz []byte) []markettypes.Job {
				var r markettypes.QueryJobsByStatusResponse
				require.NoError(t, r.Unmarshal(bz))
				return r.Jobs
			}},
		{"/flops.market.v1.Query/Jobs",
			&markettypes.QueryJobsRequest{Pagination: page},
			&markettypes.QueryJobsRequest{Pagination: page, OmitSpec: true},
			func(bz []byte) []markettypes.Job {
				var r markettypes.QueryJobsResponse
				require.NoError(t, r.Unmarshal(bz))
				return r.Jobs
			}},
	}
	for _, l := range lists {
		old := abciQuery(t, a, l.path, l.with)
		require.Equal(t, sdkerrors.ErrPanic.ABCICode(), old.Code, "%s with the specs: refused at the query gas limit: %s", l.path, old.Log)
		res := abciQuery(t, a, l.path, l.not)
		require.Zero(t, res.Code, "%s without the specs: %s", l.path, res.Log)
		jobs := l.jobs(res.Value)
		require.Len(t, jobs, n, l.path)
		for i, j := range jobs {
			require.Equal(t, uint64(n-i), j.Id, "%s: newest first", l.path)
			require.Equal(t, owner, j.Owner)
			require.Equal(t, (&markettypes.JobSpec{}).Size(), j.Spec.Size(), "%s: job %d without its spec", l.path, j.Id)
		}
	}
	// one job with its spec is still one query away
	one := abciQuery(t, a, "/flops.market.v1.Query/Job", &markettypes.QueryJobRequest{JobId: 1})
	require.Zero(t, one.Code, one.Log)
	var job markettypes.QueryJobResponse
	require.NoError(t, job.Unmarshal(one.Value))
	require.Equal(t, size, job.Job.Spec.Size())
}
