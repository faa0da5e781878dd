package types

import (
	"errors"
	"fmt"
	"slices"
	"time"

	errorsmod "cosmossdk.io/errors"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/validate"
)

// Challenge sizes (see docs/pocp.md): n is a multiple of 256 in [256, 65536] and
// 4*n*r < 2^24 keeps a GPU's fp16 inputs with fp32 accumulation exact.
const (
	challengeNStep   = 256
	challengeNMin    = 256
	challengeNMax    = 65536
	challengeRNLimit = 1<<22 - 1
	MaxSamples       = 256
	// MaxGpuClasses bounds the GPU class table and MaxModelSubstrings a class's model
	// substrings: every registration and every scheduling pass reads them.
	MaxGpuClasses      = 64
	MaxModelSubstrings = 16
	maxGPUsPerNode     = 1024
)

// WorkloadClasses lists the workload classes in enum order.
var WorkloadClasses = []WorkloadClass{
	WORKLOAD_CLASS_TRAINING, WORKLOAD_CLASS_INFERENCE, WORKLOAD_CLASS_RENDERING, WORKLOAD_CLASS_BATCH,
}

// DefaultGpuClasses is the launch GPU class table. Factors are normalised to the best
// class (H200): memory bandwidth (TB/s), memory capacity (GB), dense fp16 tensor
// throughput, and NVLink bandwidth (PCIe-only cards get PCIe 5.0 x16 over NVLink 4).
func DefaultGpuClasses() []GpuClass {
	class := func(name string, subs []string, minMiB, maxMiB, floor, ceiling uint64, bw, mem, tensor, ic uint32) GpuClass {
		return GpuClass{
			Name: name, ModelSubstrings: subs, MinMemoryMib: minMiB, MaxMemoryMib: maxMiB, MinGflopsPerGpu: floor, MaxGflopsPerGpu: ceiling,
			Factors: PerformanceFactors{MemoryBandwidthPpm: bw, MemoryCapacityPpm: mem, TensorCoresPpm: tensor, InterconnectPpm: ic},
		}
	}
	// The floors (PoCP GFLOP/s per GPU) are about 5% of each card's int8 dp4a peak, the
	// path of tools/gpu-solver without tensor cores (4x its fp32 peak: H100 PCIe 204
	// TOPS, H100 SXM and H200 268, A100 78, L40S 366, RTX 4090 330), so that any card of
	// the class clears its floor several times over, while a CPU running the Go solver
	// (a few GFLOP/s a core) stays thousands of times under: a CPU or a lesser card
	// registered under a class's model name is re-classed at its first rebalance. They
	// are to be calibrated on real cards (docs/pocp.md).
	//
	// The ceilings are about 1.5x each card's dense int8 tensor-core peak, more than any
	// exact path of the card can reach (H100 SXM and H200 1,979 TOPS, A100 624, L40S 733,
	// RTX 4090 661): a node measured above its class's ceiling is answered by more than
	// the GPUs it declares, and its index power is capped at its GPU count times the
	// ceiling (Params.PowerCap), so that declared GPUs, each locking its collateral,
	// bound the power credited.
	return []GpuClass{
		class("H200-141GB", []string{"H200"}, 130_000, 0, 10_000, 3_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000),
		class("H100-80GB", []string{"H100"}, 76_000, 100_000, 10_000, 3_000_000, 698_000, 567_000, 1_000_000, 1_000_000),
		class("A100-80GB", []string{"A100"}, 76_000, 0, 4_000, 1_000_000, 424_000, 567_000, 315_000, 667_000),
		class("A100-40GB", []string{"A100"}, 38_000, 42_000, 4_000, 1_000_000, 324_000, 284_000, 315_000, 667_000),
		class("L40S-48GB", []string{"L40S"}, 44_000, 0, 15_000, 1_100_000, 180_000, 340_000, 366_000, 71_000),
		class("RTX4090-24GB", []string{"4090"}, 22_000, 0, 15_000, 1_000_000, 210_000, 170_000, 167_000, 71_000),
	}
}

// WithoutPowerRanges is classes with no PoCP range: every measured power fits the class
// the GPUs' model names claim. For dev chains and tests whose "GPUs" are mocks answering
// PoCP with the CPU solver, which the launch floors would re-class.
func WithoutPowerRanges(classes []GpuClass) []GpuClass {
	out := slices.Clone(classes)
	for i := range out {
		out[i].MinGflopsPerGpu, out[i].MaxGflopsPerGpu = 0, 0
	}
	return out
}

// DefaultWorkloadWeights are the launch factor weights per workload class.
func DefaultWorkloadWeights() []WorkloadWeights {
	w := func(c WorkloadClass, bw, mem, tensor, ic uint32) WorkloadWeights {
		return WorkloadWeights{Workload: c, Weights: PerformanceFactors{
			MemoryBandwidthPpm: bw, MemoryCapacityPpm: mem, TensorCoresPpm: tensor, InterconnectPpm: ic,
		}}
	}
	return []WorkloadWeights{
		w(WORKLOAD_CLASS_TRAINING, 300_000, 200_000, 300_000, 200_000),
		w(WORKLOAD_CLASS_INFERENCE, 400_000, 300_000, 300_000, 0),
		w(WORKLOAD_CLASS_RENDERING, 400_000, 400_000, 100_000, 100_000),
		w(WORKLOAD_CLASS_BATCH, 250_000, 250_000, 250_000, 250_000),
	}
}

// DefaultParams returns the launch parameters (DESIGN.md section 4, x/gfl).
func DefaultParams() Params {
	return Params{
		EndBlockGas:             100_000_000,
		Admission:               ADMISSION_OPEN,
		GpuClasses:              DefaultGpuClasses(),
		WorkloadWeights:         DefaultWorkloadWeights(),
		EpochIdentifier:         "flops",
		MaxGpusPerNode:          16,
		ChallengeIntervalBlocks: 600,
		ChallengeTargetSeconds:  30,
		ChallengeCommitTimeout:  5 * time.Minute,
		ChallengeRevealBlocks:   20,
		ChallengeSamples:        32,
		ChallengeMinN:           256,
		ChallengeMaxN:           65536,
		ChallengeMaxRn:          1 << 21,
		VerifyGasPerKterm:       300,
		MaxChallengesPerBlock:   100,
		MaxRebalancePerBlock:    100,
		WrongAnswerSlashPpm:     50_000,
		WrongAnswerJail:         24 * time.Hour,
		MaxSamplesPerEpoch:      1000,
		MaxClaimedGflops:        100_000_000, // 100 PFLOP/s per node
		NodeRetentionBlocks:     100_000,
	}
}

// Validate rejects every out-of-range value, naming it.
func (p Params) Validate() error {
	if err := p.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidParams, err.Error())
	}
	return nil
}

func (p Params) validate() error {
	if p.Admission != ADMISSION_OPEN && p.Admission != ADMISSION_GOVERNED {
		return fmt.Errorf("admission %s: must be ADMISSION_OPEN or ADMISSION_GOVERNED", p.Admission)
	}
	if err := ValidateGpuClasses(p.GpuClasses); err != nil {
		return err
	}
	if err := validateWorkloadWeights(p.WorkloadWeights); err != nil {
		return err
	}
	if err := validate.Identifier("epoch_identifier", p.EpochIdentifier); err != nil {
		return err
	}
	checks := []error{
		validate.Range("max_gpus_per_node", p.MaxGpusPerNode, 1, maxGPUsPerNode),
		validate.Positive("challenge_interval_blocks", p.ChallengeIntervalBlocks),
		validate.Positive("challenge_target_seconds", p.ChallengeTargetSeconds),
		validate.PositiveDuration("challenge_commit_timeout", p.ChallengeCommitTimeout),
		validate.Positive("challenge_reveal_blocks", p.ChallengeRevealBlocks),
		validate.Range("challenge_samples", p.ChallengeSamples, 1, MaxSamples),
		validate.Range("challenge_min_n", p.ChallengeMinN, challengeNMin, challengeNMax),
		validate.Range("challenge_max_n", p.ChallengeMaxN, challengeNMin, challengeNMax),
		validate.Range("challenge_max_rn", p.ChallengeMaxRn, uint64(p.ChallengeMinN), challengeRNLimit),
		validate.Range("max_challenges_per_block", p.MaxChallengesPerBlock, 1, 10_000),
		validate.BlockGas("end_block_gas", p.EndBlockGas),
		validate.Range("max_rebalance_per_block", p.MaxRebalancePerBlock, 1, 10_000),
		validate.PPM("wrong_answer_slash_ppm", p.WrongAnswerSlashPpm),
		validate.Positive("max_samples_per_epoch", p.MaxSamplesPerEpoch),
		validate.Range("max_claimed_gflops", p.MaxClaimedGflops, 1, 1<<40),
		validate.Range("node_retention_blocks", p.NodeRetentionBlocks, 100, 100_000_000),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if err := p.Drand.Validate(); err != nil {
		return err
	}
	if p.ChallengeMinN%challengeNStep != 0 || p.ChallengeMaxN%challengeNStep != 0 {
		return fmt.Errorf("challenge_min_n %d, challenge_max_n %d: must be multiples of %d", p.ChallengeMinN, p.ChallengeMaxN, challengeNStep)
	}
	if p.ChallengeMaxRn < uint64(p.ChallengeMaxN) {
		return fmt.Errorf("challenge_max_rn %d: must be at least challenge_max_n %d (r is never below 1)", p.ChallengeMaxRn, p.ChallengeMaxN)
	}
	if p.ChallengeMinN > p.ChallengeMaxN {
		return fmt.Errorf("challenge_min_n %d: must not exceed challenge_max_n %d", p.ChallengeMinN, p.ChallengeMaxN)
	}
	if p.ChallengeCommitTimeout <= time.Duration(p.ChallengeTargetSeconds)*time.Second {
		return fmt.Errorf("challenge_commit_timeout %s: must exceed challenge_target_seconds %d", p.ChallengeCommitTimeout, p.ChallengeTargetSeconds)
	}
	if p.WrongAnswerJail < 0 {
		return fmt.Errorf("wrong_answer_jail %s: must not be negative", p.WrongAnswerJail)
	}
	return nil
}

// ValidateGpuClasses checks a GPU class table: at least one class, unique names, at least
// one non-empty model substring each, coherent memory and PoCP power ranges and factors of
// at most 1.
func ValidateGpuClasses(classes []GpuClass) error {
	if err := validate.Count("gpu_classes", len(classes), MaxGpuClasses); err != nil {
		return err
	}
	if len(classes) == 0 {
		return fmt.Errorf("gpu_classes: at least one class is required")
	}
	seen := make(map[string]struct{}, len(classes))
	for i, c := range classes {
		if err := validate.Identifier(fmt.Sprintf("gpu_classes[%d].name", i), c.Name); err != nil {
			return err
		}
		if _, dup := seen[c.Name]; dup {
			return fmt.Errorf("gpu_classes[%d].name %q: duplicate class", i, c.Name)
		}
		seen[c.Name] = struct{}{}
		if err := validate.Count(fmt.Sprintf("gpu_classes[%d].model_substrings", i), len(c.ModelSubstrings), MaxModelSubstrings); err != nil {
			return err
		}
		if len(c.ModelSubstrings) == 0 {
			return fmt.Errorf("gpu_classes[%d] %q: at least one model substring is required", i, c.Name)
		}
		for _, s := range c.ModelSubstrings {
			if s == "" || len(s) > 64 {
				return fmt.Errorf("gpu_classes[%d] %q: model substring %q must be 1 to 64 characters", i, c.Name, s)
			}
		}
		if c.MaxMemoryMib != 0 && c.MaxMemoryMib < c.MinMemoryMib {
			return fmt.Errorf("gpu_classes[%d] %q: max_memory_mib %d is below min_memory_mib %d", i, c.Name, c.MaxMemoryMib, c.MinMemoryMib)
		}
		if c.MaxGflopsPerGpu != 0 && c.MaxGflopsPerGpu < c.MinGflopsPerGpu {
			return fmt.Errorf("gpu_classes[%d] %q: max_gflops_per_gpu %d is below min_gflops_per_gpu %d", i, c.Name, c.MaxGflopsPerGpu, c.MinGflopsPerGpu)
		}
		if err := c.Factors.validateEach(fmt.Sprintf("gpu_classes[%d].factors", i)); err != nil {
			return err
		}
	}
	return nil
}

func validateWorkloadWeights(ws []WorkloadWeights) error {
	if len(ws) != len(WorkloadClasses) {
		return fmt.Errorf("workload_weights: need exactly one entry per workload class (%d), got %d", len(WorkloadClasses), len(ws))
	}
	seen := make(map[WorkloadClass]struct{}, len(ws))
	for i, w := range ws {
		if w.Workload == WORKLOAD_CLASS_UNSPECIFIED || WorkloadClass_name[int32(w.Workload)] == "" {
			return fmt.Errorf("workload_weights[%d].workload %d: unknown workload class", i, w.Workload)
		}
		if _, dup := seen[w.Workload]; dup {
			return fmt.Errorf("workload_weights[%d].workload %s: duplicate", i, w.Workload)
		}
		seen[w.Workload] = struct{}{}
		name := fmt.Sprintf("workload_weights[%d].weights", i)
		if err := w.Weights.validateEach(name); err != nil {
			return err
		}
		if sum := w.Weights.sum(); sum != validate.PPMOne {
			return fmt.Errorf("%s (%s): must sum to %d ppm, got %d", name, w.Workload, validate.PPMOne, sum)
		}
	}
	return nil
}

func (f PerformanceFactors) sum() uint64 {
	return uint64(f.MemoryBandwidthPpm) + uint64(f.MemoryCapacityPpm) + uint64(f.TensorCoresPpm) + uint64(f.InterconnectPpm)
}

func (f PerformanceFactors) validateEach(name string) error {
	for _, e := range []error{
		validate.PPM(name+".memory_bandwidth_ppm", f.MemoryBandwidthPpm),
		validate.PPM(name+".memory_capacity_ppm", f.MemoryCapacityPpm),
		validate.PPM(name+".tensor_cores_ppm", f.TensorCoresPpm),
		validate.PPM(name+".interconnect_ppm", f.InterconnectPpm),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

// Weight returns W = sum_k weight_k * P_k in ppm for a class's factors under these weights.
func (w WorkloadWeights) Weight(classFactors PerformanceFactors) uint64 {
	s := uint64(w.Weights.MemoryBandwidthPpm)*uint64(classFactors.MemoryBandwidthPpm) +
		uint64(w.Weights.MemoryCapacityPpm)*uint64(classFactors.MemoryCapacityPpm) +
		uint64(w.Weights.TensorCoresPpm)*uint64(classFactors.TensorCoresPpm) +
		uint64(w.Weights.InterconnectPpm)*uint64(classFactors.InterconnectPpm)
	return s / validate.PPMOne
}

// MaxDrandWaitBlocks bounds drand.wait_blocks well inside the beacon's window of block
// hashes, so that a fallback block's hash is always still kept.
const MaxDrandWaitBlocks = BeaconHistoryBlocks / 4

// Validate checks the drand network: all zero (off), or a valid group key with its
// schedule.
func (d DrandParams) Validate() error {
	if len(d.PublicKey) == 0 {
		if d.GenesisTime != 0 || d.PeriodSeconds != 0 || d.DelayRounds != 0 || d.WaitBlocks != 0 {
			return errors.New("drand: public_key is empty (drand off) but genesis_time, period_seconds, delay_rounds or wait_blocks is set")
		}
		return nil
	}
	if _, err := beacon.DrandPublicKey(d.PublicKey); err != nil {
		return fmt.Errorf("drand.public_key: %w", err)
	}
	for _, err := range []error{
		validate.Positive("drand.genesis_time", d.GenesisTime),
		validate.Range("drand.period_seconds", d.PeriodSeconds, 1, 3600),
		validate.Range("drand.delay_rounds", d.DelayRounds, 1, 100),
		validate.Range("drand.wait_blocks", d.WaitBlocks, 1, MaxDrandWaitBlocks),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}
