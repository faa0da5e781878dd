package keeper

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

type queryServer struct{ k Keeper }

var _ types.QueryServer = queryServer{}

// NewQueryServerImpl returns the module's Query service.
func NewQueryServerImpl(k Keeper) types.QueryServer { return queryServer{k: k} }

// Params returns the module parameters.
func (q queryServer) Params(ctx context.Context, _ *types.QueryParamsRequest) (*types.QueryParamsResponse, error) {
	p, err := q.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryParamsResponse{Params: p}, nil
}

// Job returns a job.
func (q queryServer) Job(ctx context.Context, req *types.QueryJobRequest) (*types.QueryJobResponse, error) {
	j, err := q.k.viewJob(ctx, req.JobId)
	if err != nil {
		return nil, err
	}
	return &types.QueryJobResponse{Job: j}, nil
}

// viewJob is a job as the queries show it (ErrJobNotFound when there is none): with its
// whole spec (wholeSpec), and its history_len set to the whole history length (the
// record's count and the entries added since), never to be saved.
func (k Keeper) viewJob(ctx context.Context, id uint64) (types.Job, error) {
	return k.listedJob(ctx, id, false)
}

// listedJob is viewJob, or with omitSpec the job without its spec, which is not read.
func (k Keeper) listedJob(ctx context.Context, id uint64, omitSpec bool) (types.Job, error) {
	j, err := k.Jobs.Get(ctx, id) // the record, stored without its spec (saveJob)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return j, errorsmod.Wrapf(types.ErrJobNotFound, "job %d", id)
	} else if err != nil {
		return j, err
	}
	return k.listedRecord(ctx, j, omitSpec)
}

// listedRecord is listedJob from the job's record, read.
func (k Keeper) listedRecord(ctx context.Context, j types.Job, omitSpec bool) (types.Job, error) {
	if !omitSpec {
		var err error
		if j.Spec, err = k.wholeSpec(ctx, j); err != nil {
			return j, err
		}
	}
	n, err := k.historyLen(ctx, j)
	j.HistoryLen = n // the whole history length: the record's count and the entries added since
	return j, err
}

func jobsOf[R any](ctx context.Context, k Keeper, omitSpec bool) func(collections.Pair[R, uint64], collections.NoValue) (types.Job, error) {
	return func(key collections.Pair[R, uint64], _ collections.NoValue) (types.Job, error) {
		return k.listedJob(ctx, key.K2(), omitSpec)
	}
}

func tasksOf[R any](ctx context.Context, k Keeper) func(collections.Pair[R, uint64], collections.NoValue) (types.Task, error) {
	return func(key collections.Pair[R, uint64], _ collections.NoValue) (types.Task, error) {
		return k.Tasks.Get(ctx, key.K2())
	}
}

// Jobs pages through every job, or the jobs in one status.
func (q queryServer) Jobs(ctx context.Context, req *types.QueryJobsRequest) (*types.QueryJobsResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	if req.Status != types.JOB_STATUS_UNSPECIFIED {
		res, err := q.JobsByStatus(ctx, &types.QueryJobsByStatusRequest{Status: req.Status, Pagination: req.Pagination, OmitSpec: req.OmitSpec})
		if err != nil {
			return nil, err
		}
		return &types.QueryJobsResponse{Jobs: res.Jobs, Pagination: res.Pagination}, nil
	}
	pg, counted := countedJobs(req.Pagination)
	jobs, page, err := query.CollectionPaginate(ctx, q.k.Jobs, pg, func(_ uint64, j types.Job) (types.Job, error) {
		return q.k.listedRecord(ctx, j, req.OmitSpec)
	})
	if err != nil {
		return nil, err
	}
	if counted {
		if err := q.jobsTotal(ctx, page, jobCountsTotal); err != nil {
			return nil, err
		}
	}
	return &types.QueryJobsResponse{Jobs: jobs, Pagination: page}, nil
}

// countedJobs: a first page of a list of jobs (no key) that asks count_total is paged
// without the SDK's count, which reads every entry of the list (a big chain's node
// refuses that at its query gas limit); its total comes from the job counts record
// instead (jobsTotal), one read. It returns the request to page with.
func countedJobs(pg *query.PageRequest) (*query.PageRequest, bool) {
	if pg == nil || !pg.CountTotal || len(pg.Key) > 0 {
		return pg, false
	}
	c := *pg
	c.CountTotal = false
	return &c, true
}

// jobsTotal sets a page's total: of, applied to the job counts (countJobs).
func (q queryServer) jobsTotal(ctx context.Context, page *query.PageResponse, of func(types.JobCounts) uint64) error {
	c, err := q.k.countJobs(ctx)
	if err != nil {
		return err
	}
	page.Total = of(c)
	return nil
}

// jobsIn is the count of the jobs in a status (countOf).
func jobsIn(s types.JobStatus) func(types.JobCounts) uint64 {
	return func(c types.JobCounts) uint64 {
		if n := countOf(&c, s); n != nil {
			return *n
		}
		return 0
	}
}

// jobsInStatus pages through the jobs in a status (the ByStatus index), counted from the
// job counts record (countedJobs).
func (q queryServer) jobsInStatus(ctx context.Context, s types.JobStatus, pagination *query.PageRequest, omitSpec bool) ([]types.Job, *query.PageResponse, error) {
	pg, counted := countedJobs(pagination)
	jobs, page, err := query.CollectionPaginate(ctx, q.k.Jobs.Indexes.ByStatus, pg, jobsOf[int32](ctx, q.k, omitSpec),
		query.WithCollectionPaginationPairPrefix[int32, uint64](int32(s)))
	if err != nil {
		return nil, nil, err
	}
	if counted {
		if err := q.jobsTotal(ctx, page, jobsIn(s)); err != nil {
			return nil, nil, err
		}
	}
	return jobs, page, nil
}

// Tasks pages through every task, or the tasks in one status (no index: a filtered page
// reads tasks until it is full).
func (q queryServer) Tasks(ctx context.Context, req *types.QueryTasksRequest) (*types.QueryTasksResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	if _, ok := types.TaskStatus_name[int32(req.Status)]; !ok {
		return nil, status.Errorf(codes.InvalidArgument, "status %d: not a task status", req.Status)
	}
	tasks, page, err := query.CollectionFilteredPaginate(ctx, q.k.Tasks, req.Pagination,
		func(_ uint64, t types.Task) (bool, error) {
			return req.Status == types.TASK_STATUS_UNSPECIFIED || t.Status == req.Status, nil
		},
		func(_ uint64, t types.Task) (types.Task, error) { return t, nil })
	if err != nil {
		return nil, err
	}
	return &types.QueryTasksResponse{Tasks: tasks, Pagination: page}, nil
}

// Queue counts the scheduler's queue (queue.go) from its counts (queue_counts.go): the
// same two reads however long the queue is.
func (q queryServer) Queue(ctx context.Context, _ *types.QueryQueueRequest) (*types.QueryQueueResponse, error) {
	res, err := q.k.queueCounts(ctx)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// SchedulableByClass pages through the scheduler's counters of each GPU class.
func (q queryServer) SchedulableByClass(ctx context.Context, req *types.QuerySchedulableByClassRequest) (*types.QuerySchedulableByClassResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	classes, page, err := query.CollectionPaginate(ctx, q.k.ClassNodes, req.Pagination,
		func(class string, c collections.Pair[uint64, uint64]) (types.ClassNodeCount, error) {
			return types.ClassNodeCount{GpuClass: class, Idle: c.K1(), Loaded: c.K2()}, nil
		})
	if err != nil {
		return nil, err
	}
	return &types.QuerySchedulableByClassResponse{Classes: classes, Pagination: page}, nil
}

// SchedulableByRegion pages through the counts of schedulable nodes of each region.
func (q queryServer) SchedulableByRegion(ctx context.Context, req *types.QuerySchedulableByRegionRequest) (*types.QuerySchedulableByRegionResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	regions, page, err := query.CollectionPaginate(ctx, q.k.RegionNodes, req.Pagination,
		func(region string, n uint64) (types.RegionNodeCount, error) {
			return types.RegionNodeCount{Region: region, Nodes: n}, nil
		})
	if err != nil {
		return nil, err
	}
	return &types.QuerySchedulableByRegionResponse{Regions: regions, Pagination: page}, nil
}

// JobCounts counts the jobs held in each status (job_counts.go): the same few reads
// however many jobs there are.
func (q queryServer) JobCounts(ctx context.Context, _ *types.QueryJobCountsRequest) (*types.QueryJobCountsResponse, error) {
	c, err := q.k.countJobs(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryJobCountsResponse{Counts: c, Total: jobCountsTotal(c)}, nil
}

// JobsByOwner pages through an owner's jobs.
func (q queryServer) JobsByOwner(ctx context.Context, req *types.QueryJobsByOwnerRequest) (*types.QueryJobsByOwnerResponse, error) {
	owner, err := q.k.address("owner", req.Owner)
	if err != nil {
		return nil, err
	}
	jobs, page, err := query.CollectionPaginate(ctx, q.k.Jobs.Indexes.ByOwner, req.Pagination, jobsOf[sdk.AccAddress](ctx, q.k, req.OmitSpec),
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](owner))
	if err != nil {
		return nil, err
	}
	return &types.QueryJobsByOwnerResponse{Jobs: jobs, Pagination: page}, nil
}

// JobsByStatus pages through the jobs in a status.
func (q queryServer) JobsByStatus(ctx context.Context, req *types.QueryJobsByStatusRequest) (*types.QueryJobsByStatusResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	if _, ok := types.JobStatus_name[int32(req.Status)]; !ok || req.Status == types.JOB_STATUS_UNSPECIFIED {
		return nil, status.Errorf(codes.InvalidArgument, "status %d: not a job status", req.Status)
	}
	jobs, page, err := q.jobsInStatus(ctx, req.Status, req.Pagination, req.OmitSpec)
	if err != nil {
		return nil, err
	}
	return &types.QueryJobsByStatusResponse{Jobs: jobs, Pagination: page}, nil
}

// OpenAuctions pages through the jobs taking bids.
func (q queryServer) OpenAuctions(ctx context.Context, req *types.QueryOpenAuctionsRequest) (*types.QueryOpenAuctionsResponse, error) {
	// with their specs: a provider prices a job from its spec
	jobs, page, err := q.jobsInStatus(ctx, types.JOB_STATUS_BIDDING, req.Pagination, false)
	if err != nil {
		return nil, err
	}
	return &types.QueryOpenAuctionsResponse{Jobs: jobs, Pagination: page}, nil
}

// Task returns a task.
func (q queryServer) Task(ctx context.Context, req *types.QueryTaskRequest) (*types.QueryTaskResponse, error) {
	t, err := q.k.GetTask(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	return &types.QueryTaskResponse{Task: t}, nil
}

// TasksByJob pages through a job's tasks, in id order: its primaries (a range of ids)
// and the tasks added since (the ByJob index). Pages as a collection's pagination does:
// a key (the next page's, from the last response: the job id and task id, as before the
// primaries left the index) or an offset, a limit (default 100), reverse, count_total.
func (q queryServer) TasksByJob(ctx context.Context, req *types.QueryTasksByJobRequest) (*types.QueryTasksByJobResponse, error) {
	if req == nil {
		return nil, status.Error(codes.InvalidArgument, "empty request")
	}
	pg := query.PageRequest{}
	if req.Pagination != nil {
		pg = *req.Pagination
	}
	if len(pg.Key) > 0 && pg.Offset > 0 {
		return nil, status.Error(codes.InvalidArgument, "either offset or key is expected, got both")
	}
	limit := pg.Limit
	if limit == 0 {
		limit = query.DefaultLimit
	}
	job, err := q.k.loadJob(ctx, req.JobId)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return &types.QueryTasksByJobResponse{Pagination: &query.PageResponse{}}, nil
	} else if err != nil {
		return nil, err
	}
	keyCodec := collections.PairKeyCodec(collections.Uint64Key, collections.Uint64Key)
	from := uint64(0)
	if len(pg.Key) > 0 {
		_, key, err := keyCodec.Decode(pg.Key)
		if err != nil || key.K1() != req.JobId {
			return nil, status.Errorf(codes.InvalidArgument, "pagination key %x is not a key of job %d's tasks", pg.Key, req.JobId)
		}
		from = key.K2()
	}
	var tasks []types.Task
	page := &query.PageResponse{}
	seen := uint64(0)
	err = q.k.walkJobTasks(ctx, job, from, pg.Reverse, func(t types.Task) (bool, error) {
		seen++
		switch {
		case seen <= pg.Offset:
		case uint64(len(tasks)) < limit:
			tasks = append(tasks, t)
		case len(page.NextKey) == 0:
			bz := make([]byte, keyCodec.Size(collections.Join(req.JobId, t.Id)))
			if _, err := keyCodec.Encode(bz, collections.Join(req.JobId, t.Id)); err != nil {
				return true, err
			}
			page.NextKey = bz
			return !pg.CountTotal || len(pg.Key) > 0, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if pg.CountTotal && len(pg.Key) == 0 {
		page.Total = seen
	}
	return &types.QueryTasksByJobResponse{Tasks: tasks, Pagination: page}, nil
}

// TasksByNode pages through a node's tasks: the index's entries under (the node's
// operator, node); with active, its tasks in flight (activeTasks). A node's operator
// never changes. A node unknown to x/gfl has none to look under: its list is empty, as a
// node with no tasks has (a node x/gfl deleted has its tasks listed by TasksByProvider).
func (q queryServer) TasksByNode(ctx context.Context, req *types.QueryTasksByNodeRequest) (*types.QueryTasksByNodeResponse, error) {
	n, err := q.k.gfl.GetNode(ctx, req.NodeId)
	if errorsmod.IsOf(err, collections.ErrNotFound, gfltypes.ErrNodeNotFound) {
		return &types.QueryTasksByNodeResponse{Pagination: &query.PageResponse{}}, nil
	}
	if err != nil {
		return nil, err
	}
	op, err := q.k.address("operator", n.Operator)
	if err != nil {
		return nil, err
	}
	if req.Active {
		tasks, page, err := q.activeTasks(ctx, op, &req.NodeId, req.Pagination)
		if err != nil {
			return nil, err
		}
		return &types.QueryTasksByNodeResponse{Tasks: tasks, Pagination: page}, nil
	}
	type key = collections.Pair[sdk.AccAddress, uint64]
	tasks, page, err := query.CollectionPaginate(ctx, q.k.Tasks.Indexes.ByProviderNode, req.Pagination, tasksOf[key](ctx, q.k),
		query.WithCollectionPaginationPairPrefix[key, uint64](collections.Join(op, req.NodeId)))
	if err != nil {
		return nil, err
	}
	return &types.QueryTasksByNodeResponse{Tasks: tasks, Pagination: page}, nil
}

// TasksByProvider pages through a provider's tasks, by node and then task id; with
// active, its tasks in flight (activeTasks).
func (q queryServer) TasksByProvider(ctx context.Context, req *types.QueryTasksByProviderRequest) (*types.QueryTasksByProviderResponse, error) {
	provider, err := q.k.address("provider", req.Provider)
	if err != nil {
		return nil, err
	}
	type key = collections.Pair[sdk.AccAddress, uint64]
	// the provider's part of the (provider, node) reference: a pair prefix of the index's
	// (reference, task) keys whose reference is itself a prefix
	prefix := query.WithCollectionPaginationPairPrefix[key, uint64](collections.PairPrefix[sdk.AccAddress, uint64](provider))
	if req.Active {
		tasks, page, err := q.activeTasks(ctx, provider, nil, req.Pagination)
		if err != nil {
			return nil, err
		}
		return &types.QueryTasksByProviderResponse{Tasks: tasks, Pagination: page}, nil
	}
	tasks, page, err := query.CollectionPaginate(ctx, q.k.Tasks.Indexes.ByProviderNode, req.Pagination, tasksOf[key](ctx, q.k), prefix)
	if err != nil {
		return nil, err
	}
	return &types.QueryTasksByProviderResponse{Tasks: tasks, Pagination: page}, nil
}

// BidsByJob pages through an auction's bids.
func (q queryServer) BidsByJob(ctx context.Context, req *types.QueryBidsByJobRequest) (*types.QueryBidsByJobResponse, error) {
	bids, page, err := query.CollectionPaginate(ctx, q.k.Bids, req.Pagination,
		func(_ collections.Pair[uint64, uint64], b types.Bid) (types.Bid, error) { return b, nil },
		query.WithCollectionPaginationPairPrefix[uint64, uint64](req.JobId))
	if err != nil {
		return nil, err
	}
	return &types.QueryBidsByJobResponse{Bids: bids, Pagination: page}, nil
}

// JobHistory pages through a job's history. Its entry 0, the submission, is made from the
// job's record (submittedEntry): it comes first (last in reverse), the page's limit and
// offset and the total count it.
func (q queryServer) JobHistory(ctx context.Context, req *types.QueryJobHistoryRequest) (*types.QueryJobHistoryResponse, error) {
	job, err := q.k.viewJob(ctx, req.JobId)
	if err != nil {
		return nil, err
	}
	pg := query.PageRequest{}
	if req.Pagination != nil {
		pg = *req.Pagination
	}
	limit := pg.Limit
	if limit == 0 {
		limit = query.DefaultLimit
	}
	implied := job.HistoryLen > 0
	var first types.HistoryEntry
	if implied {
		p, err := q.k.Params.Get(ctx)
		if err != nil {
			return nil, err
		}
		first = submittedEntry(job, p.Denom)
	}
	// stored entries are seq 1 and on (a seq 0 stored before entry 0 was implied is
	// skipped: the record says it)
	list := func(pg *query.PageRequest) ([]types.HistoryEntry, *query.PageResponse, error) {
		return query.CollectionFilteredPaginate(ctx, q.k.History, pg,
			func(k collections.Pair[uint64, uint32], _ types.HistoryEntry) (bool, error) { return k.K2() > 0, nil },
			func(_ collections.Pair[uint64, uint32], e types.HistoryEntry) (types.HistoryEntry, error) {
				return e, nil
			},
			query.WithCollectionPaginationPairPrefix[uint64, uint32](req.JobId))
	}
	seqKey := func(seq uint32) []byte {
		bz := make([]byte, 4)
		_, _ = collections.Uint32Key.Encode(bz, seq)
		return bz
	}
	var entries []types.HistoryEntry
	var page *query.PageResponse
	switch {
	case !implied:
		entries, page, err = list(&pg)
	case pg.Reverse:
		if len(pg.Key) == 0 && pg.Offset >= uint64(job.HistoryLen)-1 && pg.Offset > 0 {
			// past the stored entries: entry 0 alone, at position HistoryLen-1
			page = &query.PageResponse{}
			if pg.Offset == uint64(job.HistoryLen)-1 {
				entries = []types.HistoryEntry{first}
			}
			break
		}
		if entries, page, err = list(&pg); err == nil && len(page.NextKey) == 0 {
			if uint64(len(entries)) < limit {
				entries = append(entries, first)
			} else {
				page.NextKey = seqKey(0) // the next page is entry 0
			}
		}
	case len(pg.Key) > 0:
		entries, page, err = list(&pg)
	case pg.Offset > 0:
		pg.Offset-- // entry 0 is position 0
		entries, page, err = list(&pg)
	case limit == 1:
		entries, page = []types.HistoryEntry{first}, &query.PageResponse{}
		if job.HistoryLen > 1 {
			page.NextKey = seqKey(1)
		}
	default:
		pg.Limit = limit - 1
		if entries, page, err = list(&pg); err == nil {
			entries = append([]types.HistoryEntry{first}, entries...)
		}
	}
	if err != nil {
		return nil, err
	}
	if pg.CountTotal && implied {
		page.Total = uint64(job.HistoryLen) // entries are never removed one by one
	}
	return &types.QueryJobHistoryResponse{Entries: entries, Pagination: page}, nil
}

// NodeSlot returns the market's view of a node.
func (q queryServer) NodeSlot(ctx context.Context, req *types.QueryNodeSlotRequest) (*types.QueryNodeSlotResponse, error) {
	s, err := q.k.Slots.Get(ctx, req.NodeId)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, errorsmod.Wrapf(types.ErrNodeUnknown, "node %d", req.NodeId)
	} else if err != nil {
		return nil, err
	}
	return &types.QueryNodeSlotResponse{Slot: s}, nil
}

// Dispute returns a dispute.
func (q queryServer) Dispute(ctx context.Context, req *types.QueryDisputeRequest) (*types.QueryDisputeResponse, error) {
	d, err := q.k.Disputes.Get(ctx, req.DisputeId)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, errorsmod.Wrapf(types.ErrDisputeNotFound, "dispute %d", req.DisputeId)
	} else if err != nil {
		return nil, err
	}
	return &types.QueryDisputeResponse{Dispute: d}, nil
}

// Pool returns a pool.
func (q queryServer) Pool(ctx context.Context, req *types.QueryPoolRequest) (*types.QueryPoolResponse, error) {
	pl, err := q.k.getPool(ctx, req.PoolId)
	if err != nil {
		return nil, err
	}
	if pl, err = q.k.listedPool(ctx, pl, req.OmitSpec); err != nil {
		return nil, err
	}
	return &types.QueryPoolResponse{Pool: pl}, nil
}

// Pools pages through every pool.
func (q queryServer) Pools(ctx context.Context, req *types.QueryPoolsRequest) (*types.QueryPoolsResponse, error) {
	pools, page, err := query.CollectionPaginate(ctx, q.k.Pools, req.Pagination,
		func(_ uint64, pl types.Pool) (types.Pool, error) { return q.k.listedPool(ctx, pl, req.OmitSpec) })
	if err != nil {
		return nil, err
	}
	return &types.QueryPoolsResponse{Pools: pools, Pagination: page}, nil
}

// listedPool is a pool of a list: with its whole spec (viewPool), or with omitSpec with
// none (an empty spec; the spec is not read).
func (k Keeper) listedPool(ctx context.Context, pl types.Pool, omitSpec bool) (types.Pool, error) {
	if omitSpec {
		pl.Spec = types.PoolSpec{}
		return pl, nil
	}
	return k.viewPool(ctx, pl)
}

// PoolsByOwner pages through the pools an owner opened (the pools by owner index), so a
// client's dashboard reads its own pools, not every pool with its spec.
func (q queryServer) PoolsByOwner(ctx context.Context, req *types.QueryPoolsByOwnerRequest) (*types.QueryPoolsByOwnerResponse, error) {
	owner, err := q.k.address("owner", req.Owner)
	if err != nil {
		return nil, err
	}
	pools, page, err := query.CollectionPaginate(ctx, q.k.Pools.Indexes.ByOwner, req.Pagination,
		func(key collections.Pair[sdk.AccAddress, uint64], _ collections.NoValue) (types.Pool, error) {
			pl, err := q.k.Pools.Get(ctx, key.K2())
			if err != nil {
				return pl, err
			}
			return q.k.listedPool(ctx, pl, req.OmitSpec)
		},
		query.WithCollectionPaginationPairPrefix[sdk.AccAddress, uint64](owner))
	if err != nil {
		return nil, err
	}
	return &types.QueryPoolsByOwnerResponse{Pools: pools, Pagination: page}, nil
}

// PoolMembers pages through a pool's members.
func (q queryServer) PoolMembers(ctx context.Context, req *types.QueryPoolMembersRequest) (*types.QueryPoolMembersResponse, error) {
	members, page, err := query.CollectionPaginate(ctx, q.k.PoolMembers, req.Pagination,
		func(_ collections.Pair[uint64, uint64], m types.PoolMember) (types.PoolMember, error) { return m, nil },
		query.WithCollectionPaginationPairPrefix[uint64, uint64](req.PoolId))
	if err != nil {
		return nil, err
	}
	return &types.QueryPoolMembersResponse{Members: members, Pagination: page}, nil
}

// OpenUnits pages through a pool's units waiting for a claim.
func (q queryServer) OpenUnits(ctx context.Context, req *types.QueryOpenUnitsRequest) (*types.QueryOpenUnitsResponse, error) {
	units, page, err := query.CollectionPaginate(ctx, q.k.OpenUnits, req.Pagination,
		func(key collections.Pair[uint64, uint64], _ collections.NoValue) (types.Unit, error) {
			return q.k.Units.Get(ctx, key)
		},
		query.WithCollectionPaginationPairPrefix[uint64, uint64](req.PoolId))
	if err != nil {
		return nil, err
	}
	return &types.QueryOpenUnitsResponse{Units: units, Pagination: page}, nil
}

// Unit returns a unit.
func (q queryServer) Unit(ctx context.Context, req *types.QueryUnitRequest) (*types.QueryUnitResponse, error) {
	u, err := q.k.getUnit(ctx, req.PoolId, req.UnitId)
	if err != nil {
		return nil, err
	}
	return &types.QueryUnitResponse{Unit: u}, nil
}

// PoolEarnings returns a provider's unpaid credits in a pool.
func (q queryServer) PoolEarnings(ctx context.Context, req *types.QueryPoolEarningsRequest) (*types.QueryPoolEarningsResponse, error) {
	provider, err := q.k.address("provider", req.Provider)
	if err != nil {
		return nil, err
	}
	e, err := q.k.PoolEarnings.Get(ctx, collections.Join(req.PoolId, provider))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return &types.QueryPoolEarningsResponse{Earnings: sdkmath.ZeroInt()}, nil
	} else if err != nil {
		return nil, err
	}
	return &types.QueryPoolEarningsResponse{Earnings: e.Amount, Units: e.Units}, nil
}
