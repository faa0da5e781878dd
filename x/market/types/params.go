package types

import (
	"fmt"
	"math"
	"time"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// DefaultParams returns the launch parameters (DESIGN.md section 4, x/market).
func DefaultParams() Params {
	return Params{
		Denom:                   "udps",
		MaxAssignPerBlock:       10_000, // a cap: assign_gas_per_block sets the pace
		LoadThresholdPpm:        1_000_000,
		TakeRatePpm:             50_000,  // 5% of every provider payment
		TakePoolSharePpm:        500_000, // half of the take to the reward pool
		ChallengeWindowBlocks:   100,
		AckTimeoutBlocks:        20,
		HeartbeatTimeoutBlocks:  30,
		RevealTimeoutBlocks:     30,
		MaxReassignments:        3,
		AbandonSlashPpm:         10_000,
		WrongResultSlashPpm:     200_000,
		MissedRevealSlashPpm:    200_000, // = wrong result: refusing to reveal must never pay
		AuctionWindowBlocks:     20,
		BidDeposit:              sdk.NewInt64Coin("udps", 10_000_000),
		ChallengeBond:           sdk.NewInt64Coin("udps", 50_000_000),
		AuditFloorPpm:           100_000,
		AuditWarmupTasks:        10,
		AuditValueThreshold:     sdkmath.NewInt(1_000_000_000), // 1,000 DPS
		CommitteeSize:           3,
		MaxReplicas:             5,
		MaxTasksPerJob:          1000,
		MaxInputsPerJob:         64,
		MaxJobDuration:          30 * 24 * time.Hour,
		MaxUnitsPerMsg:          100,
		MaxPoolProviders:        64,
		MaxTimeoutsPerBlock:     200,
		SchedulerCandidates:     8,
		SchedulerMaxScan:        64,
		JobRetentionBlocks:      100_000,
		MaxHistoryPerJob:        256,
		MaxTieEscalations:       2,
		PoolRevealTimeoutBlocks: 30,
		AssignRetryMaxBlocks:    8,
		ResultPenaltyMultiple:   20,
		QueueGasPerBlock:        DefaultQueueGasPerBlock,
		AssignGasPerBlock:       DefaultAssignGasPerBlock,
		MaxBidsPerJob:           100,
		MaxAuctionTasks:         100,
		GemmMaxRn:               1 << 21,
		RevealGasPrice:          sdkmath.LegacyNewDecWithPrec(1, 2), // 0.01 udps per gas
		VerificationTimeout:     6 * time.Hour,
		BillingGranularity:      time.Minute,
		FailurePenaltyMultiple:  2,
		TaskDiskMibPerGpu:       DefaultTaskDiskMiBPerGPU,
	}
}

// The disk a task may fill per GPU it asks for (task_disk_mib_per_gpu): the default,
// 100 GiB (an 8-GPU task gets 800 GiB; governance raises it for the checkpoints of
// bigger models), and the bounds governance keeps it in: at least 1 GiB, so that no
// setting fails every job, and at most 16 TiB. A job's requirements.disk_mib_per_gpu and
// a node's offer (x/gfl NodeSpec.disk_mib_per_gpu) are held to the same bounds.
const (
	DefaultTaskDiskMiBPerGPU = 100 << 10
	MinTaskDiskMiBPerGPU     = gfltypes.MinDiskMiBPerGPU
	MaxTaskDiskMiBPerGPU     = gfltypes.MaxDiskMiBPerGPU
)

// TaskDiskBytes is the disk a job's task may fill on its provider's machine: the job's
// requirements.disk_mib_per_gpu, or task_disk_mib_per_gpu when it names none, for each
// GPU the job asks for (at most MaxUint64 bytes, which valid params and specs stay far
// below).
func (p Params) TaskDiskBytes(r Requirements) uint64 {
	gpus := uint64(r.GPUs())
	perGPU := p.TaskDiskMibPerGpu
	if r.DiskMibPerGpu != 0 {
		perGPU = r.DiskMibPerGpu
	}
	if perGPU > math.MaxUint64>>20/gpus {
		return math.MaxUint64
	}
	return perGPU << 20 * gpus
}

// GemmRnLimit bounds gemm_max_rn: gemm_n x gemm_r below 2^22 keeps every entry of a
// GEMM product exact (pocp: 4 n r < 2^24).
const GemmRnLimit = 1<<22 - 1

// The market's block budgets (gas as the SDK charges store work; x/market/README.md says
// what they buy); governance sets them within validate.MinBlockGas and MaxBlockGas.
const (
	DefaultQueueGasPerBlock = 100_000_000
	// DefaultAssignGasPerBlock buys about 1,500 assignments a block at about 65,000 gas
	// each (BenchmarkEndBlockAssign's gas/assignment): 500 a second with 1 s blocks and
	// room for bursts, at about 160 us of EndBlock each here.
	DefaultAssignGasPerBlock = 100_000_000
)

// Validate rejects every out-of-range value, naming it.
func (p Params) Validate() error {
	if err := p.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidParams, err.Error())
	}
	return nil
}

func (p Params) validate() error {
	for _, err := range []error{
		validate.Denom("denom", p.Denom),
		validate.Range("max_assign_per_block", p.MaxAssignPerBlock, 1, 10_000),
		validate.Range("load_threshold_ppm", p.LoadThresholdPpm, 1, validate.PPMOne),
		validate.PPM("take_rate_ppm", p.TakeRatePpm),
		validate.PPM("take_pool_share_ppm", p.TakePoolSharePpm),
		validate.Positive("challenge_window_blocks", p.ChallengeWindowBlocks),
		validate.Positive("ack_timeout_blocks", p.AckTimeoutBlocks),
		validate.Positive("heartbeat_timeout_blocks", p.HeartbeatTimeoutBlocks),
		validate.Positive("reveal_timeout_blocks", p.RevealTimeoutBlocks),
		validate.Range("max_reassignments", p.MaxReassignments, 0, 100),
		validate.PPM("abandon_slash_ppm", p.AbandonSlashPpm),
		validate.PPM("wrong_result_slash_ppm", p.WrongResultSlashPpm),
		validate.PPM("missed_reveal_slash_ppm", p.MissedRevealSlashPpm),
		validate.Positive("auction_window_blocks", p.AuctionWindowBlocks),
		validate.Coin("bid_deposit", p.BidDeposit, p.Denom),
		validate.Coin("challenge_bond", p.ChallengeBond, p.Denom),
		validate.PPM("audit_floor_ppm", p.AuditFloorPpm),
		validate.Range("audit_warmup_tasks", p.AuditWarmupTasks, 0, 10_000),
		validate.NonNegativeInt("audit_value_threshold", p.AuditValueThreshold),
		validate.Range("committee_size", p.CommitteeSize, 1, 21),
		validate.Range("max_replicas", p.MaxReplicas, 1, 21),
		validate.Range("max_tasks_per_job", p.MaxTasksPerJob, 1, 100_000),
		validate.Range("max_inputs_per_job", p.MaxInputsPerJob, 0, 10_000),
		validate.PositiveDuration("max_job_duration", p.MaxJobDuration),
		validate.PositiveDuration("verification_timeout", p.VerificationTimeout),
		validate.DurationRange("billing_granularity", p.BillingGranularity, time.Second, time.Hour),
		validate.Range("max_units_per_msg", p.MaxUnitsPerMsg, 1, 10_000),
		validate.Range("max_pool_providers", p.MaxPoolProviders, 1, 10_000),
		validate.Range("max_timeouts_per_block", p.MaxTimeoutsPerBlock, 1, 10_000),
		validate.BlockGas("queue_gas_per_block", p.QueueGasPerBlock),
		validate.BlockGas("assign_gas_per_block", p.AssignGasPerBlock),
		validate.Range("max_bids_per_job", p.MaxBidsPerJob, 1, 1_000),
		validate.Range("max_auction_tasks", p.MaxAuctionTasks, 1, 1_000),
		validate.Range("scheduler_candidates", p.SchedulerCandidates, 1, 256),
		validate.Range("scheduler_max_scan", p.SchedulerMaxScan, 1, 100_000),
		validate.Range("job_retention_blocks", p.JobRetentionBlocks, 1, 100_000_000),
		validate.Range("max_history_per_job", p.MaxHistoryPerJob, 0, 100_000),
		validate.Range("max_tie_escalations", p.MaxTieEscalations, 0, 10),
		validate.Positive("pool_reveal_timeout_blocks", p.PoolRevealTimeoutBlocks),
		validate.Range("assign_retry_max_blocks", p.AssignRetryMaxBlocks, 1, 10_000),
		validate.Range("result_penalty_multiple", p.ResultPenaltyMultiple, 1, 1_000),
		validate.Range("failure_penalty_multiple", p.FailurePenaltyMultiple, 1, 1_000),
		validate.Range("task_disk_mib_per_gpu", p.TaskDiskMibPerGpu, MinTaskDiskMiBPerGPU, MaxTaskDiskMiBPerGPU),
		validate.Range("gemm_max_rn", p.GemmMaxRn, 256, GemmRnLimit),
		validateGasPrice("reveal_gas_price", p.RevealGasPrice),
	} {
		if err != nil {
			return err
		}
	}
	if p.ChallengeWindowBlocks < 2 {
		return fmt.Errorf("challenge_window_blocks %d: must be at least 2 (the audit of a reveal is drawn from the block after it)", p.ChallengeWindowBlocks)
	}
	if p.SchedulerMaxScan < p.SchedulerCandidates {
		return fmt.Errorf("scheduler_max_scan %d: must be at least scheduler_candidates %d", p.SchedulerMaxScan, p.SchedulerCandidates)
	}
	if p.VerificationTimeout > p.MaxJobDuration {
		return fmt.Errorf("verification_timeout %s: must be at most max_job_duration %s", p.VerificationTimeout, p.MaxJobDuration)
	}
	if p.FailurePenaltyMultiple > p.ResultPenaltyMultiple {
		return fmt.Errorf("failure_penalty_multiple %d: must be at most result_penalty_multiple %d (a failure report's reservation replaces its run's)", p.FailurePenaltyMultiple, p.ResultPenaltyMultiple)
	}
	if p.CommitteeSize%2 == 0 {
		return fmt.Errorf("committee_size %d: must be odd so that a majority exists", p.CommitteeSize)
	}
	return nil
}

// validateGasPrice accepts a price per gas in [0, 1000] udps.
func validateGasPrice(name string, d sdkmath.LegacyDec) error {
	if d.IsNil() || d.IsNegative() || d.GT(sdkmath.LegacyNewDec(1000)) {
		return fmt.Errorf("%s %s: must be 0 to 1000 udps per gas", name, d)
	}
	return nil
}
