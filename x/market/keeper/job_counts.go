package keeper

import (
	"context"
	"errors"
	"fmt"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// Job counts (the JobCounts query; the dashboard's jobs by status). Counting the ByStatus
// index reads every job in the status: a network that keeps job_retention_blocks (100,000)
// of a few jobs a second holds hundreds of thousands, more than a node lets one query
// read. The counts are kept in one record instead, and the submission of an ASSIGN job
// writes nothing to it:
//
//   - a job whose id is at or above the record's next_job_id was submitted since the
//     record was last written, and counts as ACTIVE, the status a job starts in (an
//     auction's, which starts BIDDING, moves at once);
//   - every other change to a job's status (a move, a pruning) brings the record up to
//     date and moves the job's count.
//
// The job-counts invariant checks the counts against the index.

// jobStatuses are the statuses a job is held in, in enum order.
var jobStatuses = []types.JobStatus{
	types.JOB_STATUS_BIDDING, types.JOB_STATUS_ACTIVE, types.JOB_STATUS_COMPLETED, types.JOB_STATUS_FAILED, types.JOB_STATUS_CANCELLED,
}

// countOf is the counter of a status in c (nil for JOB_STATUS_UNSPECIFIED or an unknown
// value).
func countOf(c *types.JobCounts, s types.JobStatus) *uint64 {
	switch s {
	case types.JOB_STATUS_BIDDING:
		return &c.Bidding
	case types.JOB_STATUS_ACTIVE:
		return &c.Active
	case types.JOB_STATUS_COMPLETED:
		return &c.Completed
	case types.JOB_STATUS_FAILED:
		return &c.Failed
	case types.JOB_STATUS_CANCELLED:
		return &c.Cancelled
	}
	return nil
}

// jobCountsTotal is every job the counts hold.
func jobCountsTotal(c types.JobCounts) uint64 {
	return c.Bidding + c.Active + c.Completed + c.Failed + c.Cancelled
}

// moveJobCount counts one job out of a status and into another (JOB_STATUS_UNSPECIFIED:
// none; a pruned job goes into none). A count that would go below zero is left at zero
// and logged, and the job-counts invariant reports it: a miscount does not stop the
// job's own step.
func (k Keeper) moveJobCount(ctx context.Context, from, to types.JobStatus) error {
	if from == to {
		return nil
	}
	c, err := k.countJobs(ctx)
	if err != nil {
		return err
	}
	if n := countOf(&c, from); n != nil {
		if *n == 0 {
			sdk.UnwrapSDKContext(ctx).Logger().Error("market: job counts: a job moved out of a status with none counted", "status", from.String())
		} else {
			*n--
		}
	}
	if n := countOf(&c, to); n != nil {
		*n++
	}
	return k.JobCounts.Set(ctx, c)
}

// countJobs is the job counts now: the record, with the jobs submitted since it was
// written counted as ACTIVE.
func (k Keeper) countJobs(ctx context.Context) (types.JobCounts, error) {
	next, _, err := k.PeekIDs(ctx)
	if err != nil {
		return types.JobCounts{}, err
	}
	c, err := k.JobCounts.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		c = types.JobCounts{NextJobId: 1} // a chain whose every job is new
	} else if err != nil {
		return c, err
	}
	if next < c.NextJobId {
		return c, fmt.Errorf("market: job counts up to job %d, but the next job id is %d", c.NextJobId, next)
	}
	c.Active += next - c.NextJobId
	c.NextJobId = next
	return c, nil
}

// recountJobs sets the counts from the ByStatus index (genesis, store migration). It reads
// an index entry per job.
func (k Keeper) recountJobs(ctx context.Context) error {
	c, err := k.indexedJobCounts(ctx)
	if err != nil {
		return err
	}
	return k.JobCounts.Set(ctx, c)
}

// indexedJobCounts counts the ByStatus index, status by status; next_job_id is the next
// job id.
func (k Keeper) indexedJobCounts(ctx context.Context) (types.JobCounts, error) {
	var c types.JobCounts
	next, _, err := k.PeekIDs(ctx)
	if err != nil {
		return c, err
	}
	c.NextJobId = next
	for _, s := range jobStatuses {
		it, err := k.Jobs.Indexes.ByStatus.Iterate(ctx, collections.NewPrefixedPairRange[int32, uint64](int32(s)))
		if err != nil {
			return c, err
		}
		n := countOf(&c, s)
		for ; it.Valid(); it.Next() {
			*n++
		}
		if err := it.Close(); err != nil {
			return c, err
		}
	}
	return c, nil
}
