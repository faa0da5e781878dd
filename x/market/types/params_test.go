package types_test

import (
	"math"
	"testing"

	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/market/types"
)

var bad = keepertest.Bad[types.Params]

// Every out-of-range x/market parameter is rejected with ErrInvalidParams naming the field.
func TestParamsValidateRejects(t *testing.T) {
	validate := func(p types.Params) error { return p.Validate() }
	keepertest.RunBadParams(t, types.DefaultParams, validate, types.ErrInvalidParams, []keepertest.BadParamCase[types.Params]{
		bad("denom", func(p *types.Params) { p.Denom = "" }),
		bad("max_assign_per_block", func(p *types.Params) { p.MaxAssignPerBlock = 0 }),
		bad("load_threshold_ppm", func(p *types.Params) { p.LoadThresholdPpm = 0 }),
		bad("load_threshold_ppm", func(p *types.Params) { p.LoadThresholdPpm = 1_000_001 }),
		bad("take_rate_ppm", func(p *types.Params) { p.TakeRatePpm = 1_000_001 }),
		bad("take_pool_share_ppm", func(p *types.Params) { p.TakePoolSharePpm = 1_000_001 }),
		bad("challenge_window_blocks", func(p *types.Params) { p.ChallengeWindowBlocks = 0 }),
		bad("challenge_window_blocks 1: must be at least 2", func(p *types.Params) { p.ChallengeWindowBlocks = 1 }),
		bad("max_tie_escalations", func(p *types.Params) { p.MaxTieEscalations = 11 }),
		bad("pool_reveal_timeout_blocks", func(p *types.Params) { p.PoolRevealTimeoutBlocks = 0 }),
		bad("ack_timeout_blocks", func(p *types.Params) { p.AckTimeoutBlocks = 0 }),
		bad("heartbeat_timeout_blocks", func(p *types.Params) { p.HeartbeatTimeoutBlocks = 0 }),
		bad("reveal_timeout_blocks", func(p *types.Params) { p.RevealTimeoutBlocks = 0 }),
		bad("max_reassignments", func(p *types.Params) { p.MaxReassignments = 101 }),
		bad("abandon_slash_ppm", func(p *types.Params) { p.AbandonSlashPpm = 1_000_001 }),
		bad("wrong_result_slash_ppm", func(p *types.Params) { p.WrongResultSlashPpm = 1_000_001 }),
		bad("missed_reveal_slash_ppm", func(p *types.Params) { p.MissedRevealSlashPpm = 1_000_001 }),
		bad("auction_window_blocks", func(p *types.Params) { p.AuctionWindowBlocks = 0 }),
		bad("bid_deposit", func(p *types.Params) { p.BidDeposit = sdk.NewInt64Coin("uatom", 1) }),
		bad("bid_deposit", func(p *types.Params) { p.BidDeposit = sdk.Coin{Denom: "udps", Amount: sdkmath.NewInt(-1)} }),
		bad("challenge_bond", func(p *types.Params) { p.ChallengeBond = sdk.NewInt64Coin("uatom", 1) }),
		bad("audit_floor_ppm", func(p *types.Params) { p.AuditFloorPpm = 1_000_001 }),
		bad("audit_warmup_tasks", func(p *types.Params) { p.AuditWarmupTasks = 10_001 }),
		bad("audit_value_threshold", func(p *types.Params) { p.AuditValueThreshold = sdkmath.NewInt(-1) }),
		bad("committee_size", func(p *types.Params) { p.CommitteeSize = 0 }),
		bad("committee_size 4: must be odd", func(p *types.Params) { p.CommitteeSize = 4 }),
		bad("max_replicas", func(p *types.Params) { p.MaxReplicas = 0 }),
		bad("max_tasks_per_job", func(p *types.Params) { p.MaxTasksPerJob = 0 }),
		bad("max_inputs_per_job", func(p *types.Params) { p.MaxInputsPerJob = 10_001 }),
		bad("max_job_duration", func(p *types.Params) { p.MaxJobDuration = 0 }),
		bad("max_units_per_msg", func(p *types.Params) { p.MaxUnitsPerMsg = 0 }),
		bad("max_pool_providers", func(p *types.Params) { p.MaxPoolProviders = 0 }),
		bad("max_timeouts_per_block", func(p *types.Params) { p.MaxTimeoutsPerBlock = 0 }),
		bad("scheduler_candidates", func(p *types.Params) { p.SchedulerCandidates = 0 }),
		bad("scheduler_max_scan", func(p *types.Params) { p.SchedulerMaxScan = 0 }),
		bad("scheduler_max_scan 4: must be at least scheduler_candidates", func(p *types.Params) { p.SchedulerMaxScan = 4 }),
		bad("job_retention_blocks", func(p *types.Params) { p.JobRetentionBlocks = 0 }),
		bad("max_history_per_job", func(p *types.Params) { p.MaxHistoryPerJob = 100_001 }),
		bad("task_disk_mib_per_gpu", func(p *types.Params) { p.TaskDiskMibPerGpu = 0 }),
		bad("task_disk_mib_per_gpu", func(p *types.Params) { p.TaskDiskMibPerGpu = types.MinTaskDiskMiBPerGPU - 1 }),
		bad("task_disk_mib_per_gpu", func(p *types.Params) { p.TaskDiskMibPerGpu = types.MaxTaskDiskMiBPerGPU + 1 }),
	})
}

// A task's disk is task_disk_mib_per_gpu for each GPU its job asks for (gpu_count 0 is
// one GPU), and the product never wraps around.
func TestTaskDiskBytes(t *testing.T) {
	p := types.DefaultParams()
	for _, c := range []struct {
		perGPU uint64
		gpus   uint32
		want   uint64
	}{
		{types.DefaultTaskDiskMiBPerGPU, 0, 100 << 30},
		{types.DefaultTaskDiskMiBPerGPU, 1, 100 << 30},
		{types.DefaultTaskDiskMiBPerGPU, 8, 800 << 30},
		{types.MaxTaskDiskMiBPerGPU, types.MaxGPUsPerTask, 256 << 40},
		{1 << 44, 1 << 20, math.MaxUint64},
		{math.MaxUint64, 1, math.MaxUint64},
	} {
		p.TaskDiskMibPerGpu = c.perGPU
		if got := p.TaskDiskBytes(types.Requirements{GpuCount: c.gpus}); got != c.want {
			t.Errorf("%d MiB per GPU x %d GPUs: %d bytes, want %d", c.perGPU, c.gpus, got, c.want)
		}
		// a job that names its disk gets that, whatever the param
		p.TaskDiskMibPerGpu = types.DefaultTaskDiskMiBPerGPU
		if got := p.TaskDiskBytes(types.Requirements{GpuCount: c.gpus, DiskMibPerGpu: c.perGPU}); got != c.want {
			t.Errorf("a job's %d MiB per GPU x %d GPUs: %d bytes, want %d", c.perGPU, c.gpus, got, c.want)
		}
	}
	p.TaskDiskMibPerGpu = types.DefaultTaskDiskMiBPerGPU
	require.Equal(t, uint64(2<<40), p.TaskDiskBytes(types.Requirements{GpuCount: 2, DiskMibPerGpu: 1 << 20}), "1 TiB a GPU, 2 GPUs")
	require.Equal(t, uint64(2<<30), p.TaskDiskBytes(types.Requirements{GpuCount: 2, DiskMibPerGpu: 1 << 10}), "below the param too")
}
