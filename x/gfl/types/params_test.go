package types_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/gfl/types"
)

var bad = keepertest.Bad[types.Params]

// Every out-of-range x/gfl parameter is rejected with ErrInvalidParams naming the field.
func TestParamsValidateRejects(t *testing.T) {
	validate := func(p types.Params) error { return p.Validate() }
	keepertest.RunBadParams(t, types.DefaultParams, validate, types.ErrInvalidParams, []keepertest.BadParamCase[types.Params]{
		bad("admission", func(p *types.Params) { p.Admission = types.ADMISSION_UNSPECIFIED }),
		bad("gpu_classes: at least one", func(p *types.Params) { p.GpuClasses = nil }),
		bad(`gpu_classes[1].name "H200-141GB": duplicate`, func(p *types.Params) { p.GpuClasses[1].Name = p.GpuClasses[0].Name }),
		bad("gpu_classes[0].name", func(p *types.Params) { p.GpuClasses[0].Name = "" }),
		bad("gpu_classes[0].name", func(p *types.Params) { p.GpuClasses[0].Name = "H100 80GB" }),
		bad("at least one model substring", func(p *types.Params) { p.GpuClasses[0].ModelSubstrings = nil }),
		bad("model substring", func(p *types.Params) { p.GpuClasses[0].ModelSubstrings = []string{""} }),
		bad("max_memory_mib", func(p *types.Params) { p.GpuClasses[1].MaxMemoryMib = 1 }),
		bad(`gpu_classes[3] "A100-40GB": max_gflops_per_gpu 3999 is below min_gflops_per_gpu 4000`, func(p *types.Params) { p.GpuClasses[3].MaxGflopsPerGpu = 3_999 }),
		bad("gpu_classes[0].factors.tensor_cores_ppm", func(p *types.Params) { p.GpuClasses[0].Factors.TensorCoresPpm = 1_000_001 }),
		bad("workload_weights: need exactly one entry", func(p *types.Params) { p.WorkloadWeights = p.WorkloadWeights[:3] }),
		bad("workload_weights[1].workload WORKLOAD_CLASS_TRAINING: duplicate", func(p *types.Params) { p.WorkloadWeights[1].Workload = types.WORKLOAD_CLASS_TRAINING }),
		bad("workload_weights[0].workload 0", func(p *types.Params) { p.WorkloadWeights[0].Workload = types.WORKLOAD_CLASS_UNSPECIFIED }),
		bad("workload_weights[0].workload 9", func(p *types.Params) { p.WorkloadWeights[0].Workload = 9 }),
		bad("must sum to 1000000", func(p *types.Params) { p.WorkloadWeights[2].Weights.InterconnectPpm++ }),
		bad("workload_weights[3].weights.memory_bandwidth_ppm", func(p *types.Params) { p.WorkloadWeights[3].Weights.MemoryBandwidthPpm = 2_000_000 }),
		bad("epoch_identifier", func(p *types.Params) { p.EpochIdentifier = "" }),
		bad("max_gpus_per_node", func(p *types.Params) { p.MaxGpusPerNode = 0 }),
		bad("max_gpus_per_node", func(p *types.Params) { p.MaxGpusPerNode = 1025 }),
		bad("challenge_interval_blocks", func(p *types.Params) { p.ChallengeIntervalBlocks = 0 }),
		bad("challenge_target_seconds", func(p *types.Params) { p.ChallengeTargetSeconds = 0 }),
		bad("challenge_commit_timeout", func(p *types.Params) { p.ChallengeCommitTimeout = 0 }),
		bad("challenge_commit_timeout 30s: must exceed", func(p *types.Params) { p.ChallengeCommitTimeout = 30 * time.Second }),
		bad("challenge_reveal_blocks", func(p *types.Params) { p.ChallengeRevealBlocks = 0 }),
		bad("challenge_samples", func(p *types.Params) { p.ChallengeSamples = 0 }),
		bad("challenge_samples", func(p *types.Params) { p.ChallengeSamples = 257 }),
		bad("challenge_min_n", func(p *types.Params) { p.ChallengeMinN = 128 }),
		bad("challenge_max_n", func(p *types.Params) { p.ChallengeMaxN = 65536 * 2 }),
		bad("must be multiples of 256", func(p *types.Params) { p.ChallengeMaxN = 1000 }),
		bad("must not exceed challenge_max_n", func(p *types.Params) { p.ChallengeMinN, p.ChallengeMaxN = 1024, 512 }),
		bad("challenge_max_rn", func(p *types.Params) { p.ChallengeMaxRn = 1 << 22 }),
		bad("challenge_max_rn", func(p *types.Params) { p.ChallengeMaxRn = 255 }),
		bad("challenge_max_rn 4096: must be at least challenge_max_n", func(p *types.Params) { p.ChallengeMaxRn = 4096 }),
		bad("max_challenges_per_block", func(p *types.Params) { p.MaxChallengesPerBlock = 0 }),
		bad("max_rebalance_per_block", func(p *types.Params) { p.MaxRebalancePerBlock = 0 }),
		bad("wrong_answer_slash_ppm", func(p *types.Params) { p.WrongAnswerSlashPpm = 1_000_001 }),
		bad("wrong_answer_jail", func(p *types.Params) { p.WrongAnswerJail = -time.Second }),
		bad("max_samples_per_epoch", func(p *types.Params) { p.MaxSamplesPerEpoch = 0 }),
		bad("max_claimed_gflops", func(p *types.Params) { p.MaxClaimedGflops = 0 }),
		bad("max_claimed_gflops", func(p *types.Params) { p.MaxClaimedGflops = 1<<40 + 1 }),
	})
}

// W = sum_k weight_k * P_k in ppm, truncated.
func TestWorkloadWeight(t *testing.T) {
	w := types.WorkloadWeights{Weights: types.PerformanceFactors{
		MemoryBandwidthPpm: 300_000, MemoryCapacityPpm: 200_000, TensorCoresPpm: 300_000, InterconnectPpm: 200_000,
	}}
	// H200: every factor 1 -> W = 1
	require.Equal(t, uint64(1_000_000), w.Weight(types.DefaultGpuClasses()[0].Factors))
	// A100-40GB: 0.3*0.324 + 0.2*0.284 + 0.3*0.315 + 0.2*0.667 = 0.3819
	require.Equal(t, uint64(381_900), w.Weight(types.DefaultGpuClasses()[3].Factors))
	// truncation: 1/3 ppm of 1 ppm rounds down
	one := types.WorkloadWeights{Weights: types.PerformanceFactors{MemoryBandwidthPpm: 333_333}}
	require.Equal(t, uint64(0), one.Weight(types.PerformanceFactors{MemoryBandwidthPpm: 1}))
}

// The genesis state validates its params.
func TestGenesisValidate(t *testing.T) {
	require.NoError(t, types.DefaultGenesisState().Validate())
	gs := types.DefaultGenesisState()
	gs.Params.ChallengeSamples = 0
	require.ErrorIs(t, gs.Validate(), types.ErrInvalidParams)
}

// MeasuredClass: the claimed class while the measurement is in its range; otherwise the
// fitting class (range and memory) with the highest floor, the first of the table on a
// tie; none when nothing fits.
func TestMeasuredClass(t *testing.T) {
	p := types.DefaultParams()
	a100 := []types.GpuInfo{{Model: "NVIDIA A100-SXM4-40GB", MemoryMib: 40960}, {Model: "NVIDIA A100-SXM4-40GB", MemoryMib: 40960}}
	require.Equal(t, "A100-40GB", p.MeasuredClass("A100-40GB", a100, 4_000), "at the floor")
	require.Equal(t, "A100-40GB", p.MeasuredClass("A100-40GB", a100, 1_000_000), "at the ceiling")
	require.Equal(t, "", p.MeasuredClass("A100-40GB", a100, 1_000_001), "above it, and above every ceiling its memory allows")
	require.Equal(t, "", p.MeasuredClass("A100-40GB", a100, 3_999), "under every floor its memory allows")
	// 24 GiB cards whose claimed class left the table: the 4090's class holds the
	// memory, whatever the model name says; under its floor, none
	small := []types.GpuInfo{{Model: "NVIDIA A100-SXM4-40GB", MemoryMib: 24_000}}
	require.Equal(t, "RTX4090-24GB", p.MeasuredClass("A100-24GB", small, 20_000), "the model name is not evidence, memory and power are")
	require.Equal(t, "", p.MeasuredClass("RTX4090-24GB", small, 14_999))
	// 80 GiB cards at 12,000 a GPU: H100-80GB (floor 10,000) over A100-80GB (4,000)
	big := []types.GpuInfo{{Model: "NVIDIA A100-SXM4-80GB", MemoryMib: 81_920}}
	require.Equal(t, "A100-80GB", p.MeasuredClass("A100-80GB", big, 12_000), "its claim fits: it stays")
	require.Equal(t, "H100-80GB", p.MeasuredClass("gone-from-the-table", big, 12_000), "the highest floor that fits")
	// a tie keeps the first of the table
	p.GpuClasses[2].MinGflopsPerGpu = 10_000 // A100-80GB, after H100-80GB
	require.Equal(t, "H100-80GB", p.MeasuredClass("", big, 12_000))
	// no GPUs fit nothing
	require.Equal(t, "", p.MeasuredClass("", nil, 12_000))
	// without ranges, every measurement fits the claim
	p.GpuClasses = types.WithoutPowerRanges(p.GpuClasses)
	require.Equal(t, "A100-40GB", p.MeasuredClass("A100-40GB", a100, 0))
	require.NotZero(t, types.DefaultGpuClasses()[0].MinGflopsPerGpu, "WithoutPowerRanges copies")
}

// PowerCap: for each GPU declared, the highest ceiling among the classes that hold its
// memory (the table's highest when none does); none when one of them has no ceiling (a
// dev chain's table); saturating.
func TestPowerCap(t *testing.T) {
	p := types.DefaultParams()
	gpus := func(n int, mib uint64) []types.GpuInfo {
		out := make([]types.GpuInfo, n)
		for i := range out {
			out[i] = types.GpuInfo{Model: "NVIDIA A100-SXM4-40GB", MemoryMib: mib}
		}
		return out
	}
	a100 := types.Node{GpuClass: "A100-40GB", Gpus: gpus(3, 40960)}
	limit, ok := p.PowerCap(a100)
	require.True(t, ok)
	require.Equal(t, uint64(3_000_000), limit, "A100-40GB and RTX4090-24GB hold 40 GiB: 1,000,000 each")
	measured := a100
	measured.GpuClass, measured.ClaimedClass = "", "A100-40GB" // re-classed into none
	limit, _ = p.PowerCap(measured)
	require.Equal(t, uint64(3_000_000), limit, "the class it is in does not matter")
	renamed := types.Node{GpuClass: "T4-16GB", Gpus: gpus(2, 81559)}
	limit, _ = p.PowerCap(renamed)
	require.Equal(t, uint64(6_000_000), limit, "80 GiB: H100-80GB's 3,000,000, whatever the model name")
	mixed := types.Node{Gpus: append(gpus(1, 40960), gpus(1, 81559)...)}
	limit, _ = p.PowerCap(mixed)
	require.Equal(t, uint64(4_000_000), limit)
	limit, _ = p.PowerCap(types.Node{Gpus: gpus(2, 1024)})
	require.Equal(t, uint64(6_000_000), limit, "memory no class holds: the table's highest ceiling")
	p.GpuClasses[3].MaxGflopsPerGpu = 1 << 62
	limit, _ = p.PowerCap(types.Node{Gpus: gpus(8, 40960)})
	require.Equal(t, uint64(math.MaxUint64), limit, "saturates")
	p.GpuClasses[5].MaxGflopsPerGpu = 0 // RTX4090-24GB holds 40 GiB too
	_, ok = p.PowerCap(a100)
	require.False(t, ok, "a class that holds the memory has no ceiling")
	_, ok = p.PowerCap(types.Node{Gpus: gpus(2, 1024)})
	require.False(t, ok, "no class holds it, and one class has no ceiling")
	p.GpuClasses = types.WithoutPowerRanges(types.DefaultGpuClasses())
	_, ok = p.PowerCap(a100)
	require.False(t, ok, "no ceilings")
}

// SameGPUs compares every field of every GPU, in order.
func TestSameGPUs(t *testing.T) {
	gpus := []types.GpuInfo{{Model: "NVIDIA A100-SXM4-40GB", Uuid: "GPU-a", MemoryMib: 40960}, {Model: "NVIDIA A100-SXM4-40GB", Uuid: "GPU-b", MemoryMib: 40960}}
	same := append([]types.GpuInfo(nil), gpus...)
	require.True(t, types.SameGPUs(gpus, same))
	require.True(t, types.SameGPUs(nil, []types.GpuInfo{}))
	require.False(t, types.SameGPUs(gpus, gpus[:1]), "one gone")
	require.False(t, types.SameGPUs(gpus, []types.GpuInfo{gpus[1], gpus[0]}), "another order")
	other := append([]types.GpuInfo(nil), gpus...)
	other[1].MigInstances = []types.MigInstance{{Uuid: "MIG-b0", MemoryMib: 4864, Slices: 1}}
	require.False(t, types.SameGPUs(gpus, other), "a MIG instance made")
}
