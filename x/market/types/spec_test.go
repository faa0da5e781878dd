package types_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"

	"github.com/flopsnet/flops/internal/specfile"
	"github.com/flopsnet/flops/internal/validate"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market"
	"github.com/flopsnet/flops/x/market/types"
)

// specNow is the block time specs are validated at.
var specNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func udpsCoin(n int64) sdk.Coin { return sdk.NewInt64Coin("udps", n) }

// gemmSpec is the example job: 4 tasks of the BUILTIN gemm workload.
func gemmSpec() types.JobSpec {
	return types.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: types.RUNTIME_BUILTIN, Image: types.BuiltinGemm,
		Builtin:      types.BuiltinArgs{GemmN: 1024, GemmR: 4},
		Requirements: types.Requirements{GpuCount: 1, MinMemoryMib: 16000, MinComputeCapability: "8.0"},
		TaskCount:    4, Replicas: 1, Verification: types.VERIFICATION_CLASS_BUILTIN_GEMM,
		MaxPricePerTask: udpsCoin(5_000_000), MaxDuration: 10 * time.Minute, Deadline: specNow.Add(24 * time.Hour),
		PriorityTip: udpsCoin(100_000), Mode: types.ALLOCATION_MODE_ASSIGN, VerificationBudget: udpsCoin(0),
	}
}

// processSpec uses every free-form part: command, env, inputs, per-task args, classes.
func processSpec() types.JobSpec {
	s := gemmSpec()
	s.Runtime, s.Image, s.Builtin = types.RUNTIME_PROCESS, "", types.BuiltinArgs{}
	s.Workload = gfltypes.WORKLOAD_CLASS_TRAINING
	s.Command = []string{"python3", "train.py", "--epochs", "3"}
	s.Env = []types.EnvVar{{Name: "SEED", Value: "1"}, {Name: "_LR", Value: "0.001"}}
	s.Inputs = []types.Input{
		{Uri: "https://data.example.com/shard.bin", Sha256: digest, Path: "data/shard.bin"},
		{Uri: "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi", Sha256: digest, Path: "weights.pt"},
	}
	s.TaskArgs = []types.TaskArgs{{Args: []string{"0"}}, {Args: []string{"1"}}, {Args: []string{"2"}}, {Args: []string{"3"}}}
	s.Requirements.AllowedClasses = []string{"A100-40GB", "H100-80GB"}
	s.Requirements.Region = "eu-west"
	s.Replicas = 2
	s.Verification = types.VERIFICATION_CLASS_EXACT
	s.CheckpointInterval = time.Minute
	s.VerificationBudget = udpsCoin(1_000)
	return s
}

func containerSpec() types.JobSpec {
	s := processSpec()
	s.Runtime = types.RUNTIME_CONTAINER
	s.Image = "ghcr.io/flopsnet/trainer@sha256:" + digest
	return s
}

func checksumSpec() types.JobSpec {
	s := gemmSpec()
	s.Image = types.BuiltinChecksum
	s.Builtin = types.BuiltinArgs{ChecksumBytes: 1 << 30}
	s.Verification = types.VERIFICATION_CLASS_NONE
	return s
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// Every rule of JobSpec.Validate: each case breaks one, and must be rejected with
// ErrInvalidJobSpec and an error that names the field.
func TestJobSpecValidateRejects(t *testing.T) {
	p := types.DefaultParams()
	type tc struct {
		field string
		base  func() types.JobSpec
		edit  func(s *types.JobSpec)
	}
	g, pr, ct, ck := gemmSpec, processSpec, containerSpec, checksumSpec
	cases := map[string]tc{
		// workload
		"workload unspecified": {"workload", g, func(s *types.JobSpec) { s.Workload = gfltypes.WORKLOAD_CLASS_UNSPECIFIED }},
		"workload unknown":     {"workload", g, func(s *types.JobSpec) { s.Workload = 99 }},
		// runtime
		"runtime unspecified":          {"runtime", g, func(s *types.JobSpec) { s.Runtime = types.RUNTIME_UNSPECIFIED }},
		"runtime unknown":              {"runtime", g, func(s *types.JobSpec) { s.Runtime = 99 }},
		"builtin with a command":       {"command", g, func(s *types.JobSpec) { s.Command = []string{"sh"} }},
		"builtin unknown image":        {"image", g, func(s *types.JobSpec) { s.Image = "matmul" }},
		"builtin empty image":          {"image", g, func(s *types.JobSpec) { s.Image = "" }},
		"gemm n zero":                  {"builtin.gemm_n", g, func(s *types.JobSpec) { s.Builtin.GemmN = 0 }},
		"gemm n below 256":             {"builtin.gemm_n", g, func(s *types.JobSpec) { s.Builtin.GemmN = 255 }},
		"gemm n not a multiple":        {"builtin.gemm_n", g, func(s *types.JobSpec) { s.Builtin.GemmN = 300 }},
		"gemm n above 65536":           {"builtin.gemm_n", g, func(s *types.JobSpec) { s.Builtin.GemmN = 65536 + 256 }},
		"gemm r zero":                  {"builtin.gemm_r", g, func(s *types.JobSpec) { s.Builtin.GemmR = 0 }},
		"gemm 4nr = 2^24":              {"builtin.gemm_r", g, func(s *types.JobSpec) { s.Builtin.GemmN, s.Builtin.GemmR = 4096, 1024 }},
		"gemm 4nr overflows uint32":    {"builtin.gemm_r", g, func(s *types.JobSpec) { s.Builtin.GemmN, s.Builtin.GemmR = 65536, 1<<20 }},
		"gemm n x r above gemm_max_rn": {"gemm_max_rn", g, func(s *types.JobSpec) { s.Builtin.GemmN, s.Builtin.GemmR = 4096, 513 }},
		"checksum bytes zero":          {"builtin.checksum_bytes", ck, func(s *types.JobSpec) { s.Builtin.ChecksumBytes = 0 }},
		"checksum bytes above 2^40":    {"builtin.checksum_bytes", ck, func(s *types.JobSpec) { s.Builtin.ChecksumBytes = 1<<40 + 1 }},
		"process with an image":        {"image", pr, func(s *types.JobSpec) { s.Image = "gemm" }},
		"process without a command":    {"command", pr, func(s *types.JobSpec) { s.Command = nil }},
		"process 65 arguments":         {"command", pr, func(s *types.JobSpec) { s.Command = repeat("x", types.MaxArgs+1) }},
		"process argument too long":    {"command[1]", pr, func(s *types.JobSpec) { s.Command[1] = strings.Repeat("a", types.MaxArgLen+1) }},
		"process argument with NUL":    {"command[2]", pr, func(s *types.JobSpec) { s.Command[2] = "a\x00b" }},
		"disk below 1 GiB": {"requirements.disk_mib_per_gpu", g, func(s *types.JobSpec) {
			s.Requirements.DiskMibPerGpu = types.MinTaskDiskMiBPerGPU - 1
		}},
		"disk above 16 TiB": {"requirements.disk_mib_per_gpu", g, func(s *types.JobSpec) {
			s.Requirements.DiskMibPerGpu = types.MaxTaskDiskMiBPerGPU + 1
		}},
		"container image by tag":     {"image", ct, func(s *types.JobSpec) { s.Image = "ghcr.io/flopsnet/trainer:latest" }},
		"container image no repo":    {"image", ct, func(s *types.JobSpec) { s.Image = "@sha256:" + digest }},
		"container digest short":     {"image", ct, func(s *types.JobSpec) { s.Image = "trainer@sha256:" + digest[1:] }},
		"container digest uppercase": {"image", ct, func(s *types.JobSpec) { s.Image = "trainer@sha256:" + strings.ToUpper(digest) }},
		"container digest not sha256": {"image", ct, func(s *types.JobSpec) {
			s.Image = "trainer@sha512:" + digest
		}},
		"container image too long": {"image", ct, func(s *types.JobSpec) {
			s.Image = strings.Repeat("a", types.MaxImageLen-len("@sha256:")-64+1) + "@sha256:" + digest
		}},
		"container argument with NUL": {"command[0]", ct, func(s *types.JobSpec) { s.Command[0] = "\x00" }},
		// env
		"65 env variables":      {"env", pr, func(s *types.JobSpec) { s.Env = envs(types.MaxEnv + 1) }},
		"env name with a digit": {"env[0].name", pr, func(s *types.JobSpec) { s.Env[0].Name = "1SEED" }},
		"env name empty":        {"env[0].name", pr, func(s *types.JobSpec) { s.Env[0].Name = "" }},
		"env name with a dash":  {"env[1].name", pr, func(s *types.JobSpec) { s.Env[1].Name = "A-B" }},
		"env name 129 bytes":    {"env[0].name", pr, func(s *types.JobSpec) { s.Env[0].Name = strings.Repeat("A", 129) }},
		"env name duplicate":    {"env[1].name", pr, func(s *types.JobSpec) { s.Env[1].Name = s.Env[0].Name }},
		"env value too long":    {"env[0].value", pr, func(s *types.JobSpec) { s.Env[0].Value = strings.Repeat("v", types.MaxEnvValueLen+1) }},
		// inputs
		"too many inputs":         {"inputs", pr, func(s *types.JobSpec) { s.Inputs = inputs(int(p.MaxInputsPerJob) + 1) }},
		"input uri ftp":           {"inputs[0].uri", pr, func(s *types.JobSpec) { s.Inputs[0].Uri = "ftp://data.example.com/x" }},
		"input uri empty":         {"inputs[1].uri", pr, func(s *types.JobSpec) { s.Inputs[1].Uri = "" }},
		"input uri no host":       {"inputs[0].uri", pr, func(s *types.JobSpec) { s.Inputs[0].Uri = "https:///x" }},
		"input sha256 uppercase":  {"inputs[0].sha256", pr, func(s *types.JobSpec) { s.Inputs[0].Sha256 = strings.ToUpper(digest) }},
		"input sha256 short":      {"inputs[1].sha256", pr, func(s *types.JobSpec) { s.Inputs[1].Sha256 = digest[:62] }},
		"input path empty":        {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "" }},
		"input path absolute":     {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "/etc/passwd" }},
		"input path escapes":      {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "../secret" }},
		"input path dot-dot":      {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = ".." }},
		"input path dot":          {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "." }},
		"input path not clean":    {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "data/../x" }},
		"input path dot slash":    {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "./x" }},
		"input path trailing":     {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = "data/" }},
		"input path too long":     {"inputs[0].path", pr, func(s *types.JobSpec) { s.Inputs[0].Path = strings.Repeat("p", types.MaxPathLen+1) }},
		"input path duplicate":    {"inputs[1].path", pr, func(s *types.JobSpec) { s.Inputs[1].Path = s.Inputs[0].Path }},
		"17 GPUs per task":        {"requirements.gpu_count", g, func(s *types.JobSpec) { s.Requirements.GpuCount = types.MaxGPUsPerTask + 1 }},
		"compute capability 8":    {"requirements.min_compute_capability", g, func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "8" }},
		"compute capability x.y":  {"requirements.min_compute_capability", g, func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "a.b" }},
		"compute capability 3 pt": {"requirements.min_compute_capability", g, func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "8.0.1" }},
		"compute capability 100":  {"requirements.min_compute_capability", g, func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "100.0" }},
		"class empty":             {"requirements.allowed_classes[0]", pr, func(s *types.JobSpec) { s.Requirements.AllowedClasses[0] = "" }},
		"class with a space":      {"requirements.allowed_classes[1]", pr, func(s *types.JobSpec) { s.Requirements.AllowedClasses[1] = "H100 80GB" }},
		"class duplicate":         {"requirements.allowed_classes[1]", pr, func(s *types.JobSpec) { s.Requirements.AllowedClasses[1] = "A100-40GB" }},
		"region with a space":     {"requirements.region", pr, func(s *types.JobSpec) { s.Requirements.Region = "eu west" }},
		"region too long":         {"requirements.region", pr, func(s *types.JobSpec) { s.Requirements.Region = strings.Repeat("r", 65) }},
		// tasks and replicas
		"no tasks":                 {"task_count", g, func(s *types.JobSpec) { s.TaskCount = 0 }},
		"too many tasks":           {"task_count", g, func(s *types.JobSpec) { s.TaskCount = p.MaxTasksPerJob + 1 }},
		"task args count mismatch": {"task_args", pr, func(s *types.JobSpec) { s.TaskArgs = s.TaskArgs[:3] }},
		"task args too many":       {"task_args[2].args", pr, func(s *types.JobSpec) { s.TaskArgs[2].Args = repeat("a", types.MaxArgs+1) }},
		"task arg with NUL":        {"task_args[0].args[0]", pr, func(s *types.JobSpec) { s.TaskArgs[0].Args[0] = "\x00" }},
		"no replicas":              {"replicas", g, func(s *types.JobSpec) { s.Replicas = 0 }},
		"too many replicas":        {"replicas", g, func(s *types.JobSpec) { s.Replicas = p.MaxReplicas + 1 }},
		// verification
		"verification unspecified":  {"verification", g, func(s *types.JobSpec) { s.Verification = types.VERIFICATION_CLASS_UNSPECIFIED }},
		"verification unknown":      {"verification", g, func(s *types.JobSpec) { s.Verification = 99 }},
		"gemm verification process": {"verification", pr, func(s *types.JobSpec) { s.Verification = types.VERIFICATION_CLASS_BUILTIN_GEMM }},
		"gemm verification of a checksum": {"verification", ck, func(s *types.JobSpec) {
			s.Verification = types.VERIFICATION_CLASS_BUILTIN_GEMM
		}},
		// price, time, mode, budget
		"max price other denom":   {"max_price_per_task", g, func(s *types.JobSpec) { s.MaxPricePerTask = sdk.NewInt64Coin("uatom", 5) }},
		"max price zero":          {"max_price_per_task", g, func(s *types.JobSpec) { s.MaxPricePerTask = udpsCoin(0) }},
		"max price negative":      {"max_price_per_task", g, func(s *types.JobSpec) { s.MaxPricePerTask = sdk.Coin{Denom: "udps", Amount: sdkmath.NewInt(-1)} }},
		"max price unset":         {"max_price_per_task", g, func(s *types.JobSpec) { s.MaxPricePerTask = sdk.Coin{} }},
		"max duration zero":       {"max_duration", g, func(s *types.JobSpec) { s.MaxDuration = 0 }},
		"max duration negative":   {"max_duration", g, func(s *types.JobSpec) { s.MaxDuration = -time.Second }},
		"max duration above max":  {"max_duration", g, func(s *types.JobSpec) { s.MaxDuration = p.MaxJobDuration + time.Second }},
		"deadline too soon":       {"deadline", g, func(s *types.JobSpec) { s.Deadline = specNow.Add(s.MaxDuration - time.Nanosecond) }},
		"deadline in the past":    {"deadline", g, func(s *types.JobSpec) { s.Deadline = specNow.Add(-time.Hour) }},
		"deadline unset":          {"deadline", g, func(s *types.JobSpec) { s.Deadline = time.Time{} }},
		"tip other denom":         {"priority_tip", g, func(s *types.JobSpec) { s.PriorityTip = sdk.NewInt64Coin("uatom", 1) }},
		"tip negative":            {"priority_tip", g, func(s *types.JobSpec) { s.PriorityTip = sdk.Coin{Denom: "udps", Amount: sdkmath.NewInt(-1)} }},
		"tip unset":               {"priority_tip", g, func(s *types.JobSpec) { s.PriorityTip = sdk.Coin{} }},
		"mode unspecified":        {"mode", g, func(s *types.JobSpec) { s.Mode = types.ALLOCATION_MODE_UNSPECIFIED }},
		"mode unknown":            {"mode", g, func(s *types.JobSpec) { s.Mode = 99 }},
		"checkpoint negative":     {"checkpoint_interval", pr, func(s *types.JobSpec) { s.CheckpointInterval = -time.Second }},
		"checkpoint = duration":   {"checkpoint_interval", pr, func(s *types.JobSpec) { s.CheckpointInterval = s.MaxDuration }},
		"checkpoint > duration":   {"checkpoint_interval", pr, func(s *types.JobSpec) { s.CheckpointInterval = 2 * s.MaxDuration }},
		"budget other denom":      {"verification_budget", g, func(s *types.JobSpec) { s.VerificationBudget = sdk.NewInt64Coin("uatom", 1) }},
		"budget negative":         {"verification_budget", g, func(s *types.JobSpec) { s.VerificationBudget = sdk.Coin{Denom: "udps", Amount: sdkmath.NewInt(-1)} }},
		"budget unset":            {"verification_budget", g, func(s *types.JobSpec) { s.VerificationBudget = sdk.Coin{} }},
		"container without image": {"image", ct, func(s *types.JobSpec) { s.Image = "" }},
		// a single-replica EXACT job pays for its audits: task_count x max_price x
		// (1 + committee_size) = 4 x 5 DPS x 4 = 80 DPS, one udps short
		"single-replica EXACT without audit budget": {"verification_budget", pr, func(s *types.JobSpec) {
			s.Replicas = 1
			s.VerificationBudget = udpsCoin(4*5_000_000*(1+int64(p.CommitteeSize)) - 1)
		}},
	}
	for _, base := range []func() types.JobSpec{g, pr, ct, ck} {
		require.NoError(t, base().Validate(p, specNow), "the base specs are valid")
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := c.base()
			c.edit(&s)
			err := s.Validate(p, specNow)
			require.Error(t, err)
			if !errors.Is(err, validate.ErrTooMany) && !errors.Is(err, validate.ErrTooLarge) {
				require.ErrorIs(t, err, types.ErrInvalidJobSpec)
			}
			require.Contains(t, err.Error(), c.field)
		})
	}
}

func envs(n int) []types.EnvVar {
	out := make([]types.EnvVar, n)
	for i := range out {
		out[i] = types.EnvVar{Name: "V" + strings.Repeat("X", i), Value: "1"}
	}
	return out
}

func inputs(n int) []types.Input {
	out := make([]types.Input, n)
	for i := range out {
		out[i] = types.Input{Uri: "https://data.example.com/x", Sha256: digest, Path: "in/" + strings.Repeat("x", i+1)}
	}
	return out
}

// The limits themselves are allowed: each case sits exactly on one bound.
func TestJobSpecValidateAcceptsBounds(t *testing.T) {
	p := types.DefaultParams()
	cases := map[string]struct {
		base func() types.JobSpec
		edit func(s *types.JobSpec)
	}{
		"gemm n 256":               {gemmSpec, func(s *types.JobSpec) { s.Builtin.GemmN = 256 }},
		"gemm n 65536":             {gemmSpec, func(s *types.JobSpec) { s.Builtin.GemmN, s.Builtin.GemmR = 65536, 32 }},
		"gemm n x r = gemm_max_rn": {gemmSpec, func(s *types.JobSpec) { s.Builtin.GemmN, s.Builtin.GemmR = 4096, 512 }},
		"checksum 2^40 bytes":      {checksumSpec, func(s *types.JobSpec) { s.Builtin.ChecksumBytes = 1 << 40 }},
		"64 arguments of 1024":     {processSpec, func(s *types.JobSpec) { s.Command = repeat(strings.Repeat("a", types.MaxArgLen), types.MaxArgs) }},
		"64 env variables":         {processSpec, func(s *types.JobSpec) { s.Env = envs(types.MaxEnv) }},
		"env name 128 bytes":       {processSpec, func(s *types.JobSpec) { s.Env[0].Name = strings.Repeat("A", 128) }},
		"env value 4096 bytes":     {processSpec, func(s *types.JobSpec) { s.Env[0].Value = strings.Repeat("v", types.MaxEnvValueLen) }},
		"max inputs":               {processSpec, func(s *types.JobSpec) { s.Inputs = inputs(int(p.MaxInputsPerJob)) }},
		"path 256 bytes":           {processSpec, func(s *types.JobSpec) { s.Inputs[0].Path = strings.Repeat("p", types.MaxPathLen) }},
		"path with dots inside":    {processSpec, func(s *types.JobSpec) { s.Inputs[0].Path = "a/..b/c..d" }},
		"16 GPUs":                  {gemmSpec, func(s *types.JobSpec) { s.Requirements.GpuCount = types.MaxGPUsPerTask }},
		"no GPU count (one)":       {gemmSpec, func(s *types.JobSpec) { s.Requirements.GpuCount = 0 }},
		"compute capability 12.10": {gemmSpec, func(s *types.JobSpec) { s.Requirements.MinComputeCapability = "12.10" }},
		"disk 1 GiB per GPU":       {gemmSpec, func(s *types.JobSpec) { s.Requirements.DiskMibPerGpu = types.MinTaskDiskMiBPerGPU }},
		"disk 16 TiB per GPU":      {gemmSpec, func(s *types.JobSpec) { s.Requirements.DiskMibPerGpu = types.MaxTaskDiskMiBPerGPU }},
		"max tasks":                {gemmSpec, func(s *types.JobSpec) { s.TaskCount = p.MaxTasksPerJob }},
		"max replicas":             {gemmSpec, func(s *types.JobSpec) { s.Replicas = p.MaxReplicas }},
		"max duration":             {gemmSpec, func(s *types.JobSpec) { s.MaxDuration, s.Deadline = p.MaxJobDuration, specNow.Add(p.MaxJobDuration) }},
		"deadline exactly now + duration": {gemmSpec, func(s *types.JobSpec) {
			s.Deadline = specNow.Add(s.MaxDuration)
		}},
		"checkpoint just below duration": {processSpec, func(s *types.JobSpec) { s.CheckpointInterval = s.MaxDuration - time.Nanosecond }},
		"zero tip":                       {gemmSpec, func(s *types.JobSpec) { s.PriorityTip = udpsCoin(0) }},
		"auction":                        {gemmSpec, func(s *types.JobSpec) { s.Mode = types.ALLOCATION_MODE_AUCTION }},
		"no verification":                {processSpec, func(s *types.JobSpec) { s.Verification = types.VERIFICATION_CLASS_NONE }},
		"container without command":      {containerSpec, func(s *types.JobSpec) { s.Command = nil }},
		"single-replica EXACT with exactly its audit budget": {processSpec, func(s *types.JobSpec) {
			s.Replicas = 1
			s.VerificationBudget = udpsCoin(4 * 5_000_000 * (1 + int64(p.CommitteeSize)))
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := c.base()
			c.edit(&s)
			require.NoError(t, s.Validate(p, specNow))
		})
	}
}

func appCodec() codec.Codec { return moduletestutil.MakeTestEncodingConfig(market.AppModule{}).Codec }

// The example job the README points to decodes with the app's codec, validates, and
// costs what its comment says: 4 x 1 x (5 + 0.1) + 0 = 20.4 DPS.
func TestExampleJobSpec(t *testing.T) {
	bz, err := os.ReadFile("../../../examples/job.yaml")
	require.NoError(t, err)
	var spec types.JobSpec
	require.NoError(t, specfile.Decode(appCodec(), bz, &spec))
	require.NoError(t, spec.Validate(types.DefaultParams(), specNow))
	require.Equal(t, types.RUNTIME_BUILTIN, spec.Runtime)
	require.Equal(t, types.BuiltinArgs{GemmN: 1024, GemmR: 4}, spec.Builtin)
	require.Equal(t, uint64(16000), spec.Requirements.MinMemoryMib)
	require.Equal(t, 10*time.Minute, spec.MaxDuration)
	require.Equal(t, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), spec.Deadline.UTC())
	require.Equal(t, sdkmath.NewInt(20_400_000), spec.Budget())
	// unknown fields are errors, not silently dropped
	require.Error(t, specfile.Decode(appCodec(), append(bz, []byte("\nmax_price: 1\n")...), &spec))
}

// The PROCESS example decodes, validates and costs what its comment says: 2 x 1 x (1 + 0)
// + 0 = 2 DPS; each shard has its arguments and the job a checkpoint interval.
func TestExampleProcessJobSpec(t *testing.T) {
	bz, err := os.ReadFile("../../../examples/process-job.yaml")
	require.NoError(t, err)
	var spec types.JobSpec
	require.NoError(t, specfile.Decode(appCodec(), bz, &spec))
	require.NoError(t, spec.Validate(types.DefaultParams(), specNow))
	require.Equal(t, types.RUNTIME_PROCESS, spec.Runtime)
	require.Equal(t, sdkmath.NewInt(2_000_000), spec.Budget())
	require.Equal(t, []string{"sh", "-c", spec.Command[2], "job", "--shard-b", "--verbose"}, spec.ShardCommand(1))
	require.Equal(t, time.Minute, spec.CheckpointInterval)
}

// Budget = replicas x tasks x (max price + tip) + verification budget; Quote = ask per
// GPU-hour x GPUs x duration, rounded up to the udps.
func TestBudgetAndQuote(t *testing.T) {
	s := gemmSpec()
	s.TaskCount, s.Replicas = 4, 3
	s.VerificationBudget = udpsCoin(250_000)
	require.Equal(t, uint64(12), s.TotalTasks())
	require.Equal(t, sdkmath.NewInt(5_100_000), s.Reserved())
	require.Equal(t, sdkmath.NewInt(12*5_100_000+250_000), s.Budget())
	s.PriorityTip = udpsCoin(0)
	s.VerificationBudget = udpsCoin(0)
	require.Equal(t, sdkmath.NewInt(60_000_000), s.Budget())

	cases := []struct {
		name string
		ask  int64
		gpus uint32
		d    time.Duration
		want int64
	}{
		{"exact: 1 DPS x 2 GPUs x 30 min", 1_000_000, 2, 30 * time.Minute, 1_000_000},
		{"exact: 7 x 3 GPUs x 1 h", 7, 3, time.Hour, 21},
		{"10 minutes: 166,666.67 rounds up", 1_000_000, 1, 10 * time.Minute, 166_667},
		{"1 s at 3 udps an hour rounds up to 1", 3, 1, time.Second, 1},
		{"1 ms at 1 udps an hour rounds up to 1", 1, 1, time.Millisecond, 1},
		{"just above a whole udps", 3_600_001, 1, time.Second, 1_001},
		{"zero ask", 0, 4, time.Hour, 0},
		{"30 days x 16 GPUs", 2_500_000, 16, 30 * 24 * time.Hour, 28_800_000_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, sdkmath.NewInt(c.want), types.Quote(sdkmath.NewInt(c.ask), c.gpus, c.d))
		})
	}
}

// BUG: Quote truncates the duration to whole milliseconds before it rounds up, so the
// sub-millisecond part of a max_duration (which the spec allows) is never charged: at
// 3,600 DPS per GPU-hour, 1.5 ms costs 1,500 udps but is quoted 1,000.
func TestQuoteRoundsUpSubMillisecond(t *testing.T) {
	require.Equal(t, sdkmath.NewInt(1_500), types.Quote(sdkmath.NewInt(3_600_000_000), 1, 1500*time.Microsecond))
	require.Equal(t, sdkmath.NewInt(1), types.Quote(sdkmath.NewInt(1_000_000), 1, time.Microsecond))
}

// BUG: max_price_per_task and priority_tip are unbounded. Validate itself overflows (and
// panics) computing the audit budget of a single-replica EXACT job with a huge max price;
// and it accepts a max price and tip whose budget does not fit in an Int, so Budget
// (called by MsgSubmitJob right after Validate) panics. A spec must be refused with
// ErrInvalidJobSpec, never panic.
func TestJobSpecHugePriceDoesNotPanic(t *testing.T) {
	huge, ok := sdkmath.NewIntFromString("57896044618658097711785492504343953926634992332820282019728792003956564819967") // 2^255 - 1
	require.True(t, ok)
	exact := processSpec()
	exact.Replicas = 1
	exact.MaxPricePerTask = sdk.NewCoin("udps", huge)
	require.NotPanics(t, func() { _ = exact.Validate(types.DefaultParams(), specNow) }, "Validate of a single-replica EXACT job")

	s := gemmSpec()
	s.MaxPricePerTask = sdk.NewCoin("udps", huge)
	s.PriorityTip = sdk.NewCoin("udps", huge)
	if err := s.Validate(types.DefaultParams(), specNow); err == nil {
		require.NotPanics(t, func() { s.Budget() }, "a valid spec's budget is computable")
	}
}

// BUG: ValidateURI accepts "ipfs:" and "ipfs://" with no content identifier, so inputs,
// checkpoints and outputs can point nowhere.
func TestValidateURIRejectsEmptyIPFS(t *testing.T) {
	for _, uri := range []string{"ipfs:", "ipfs://", "ipfs:///"} {
		require.Error(t, types.ValidateURI(uri), uri)
	}
}

// Arbitrary bytes decoded as a job spec (YAML or JSON, with the app's codec) and validated
// never panic; a rejection is always ErrInvalidJobSpec, and a spec that validates
// survives a JSON round trip (what the CLI and the chain exchange) still valid.
func FuzzJobSpecValidate(f *testing.F) {
	cdc := appCodec()
	if bz, err := os.ReadFile("../../../examples/job.yaml"); err == nil {
		f.Add(bz)
	}
	for _, s := range []types.JobSpec{gemmSpec(), processSpec(), containerSpec(), checksumSpec()} {
		bz, err := cdc.MarshalJSON(&s)
		require.NoError(f, err)
		f.Add(bz)
	}
	for _, seed := range []string{
		"", "{}", "null", "[]", "workload: 99", "task_count: -1", "max_duration: 1e400s",
		`{"deadline": "9999-12-31T23:59:59Z", "max_duration": "315576000000s"}`,
		`{"max_price_per_task": {"denom": "udps", "amount": "1e80"}}`,
		`{"requirements": {"gpu_count": 4294967295}, "task_count": 4294967295, "replicas": 4294967295}`,
		"env: [{name: A, value: B}, {name: A}]",
	} {
		f.Add([]byte(seed))
	}
	params := types.DefaultParams()
	f.Fuzz(func(t *testing.T, bz []byte) {
		var spec types.JobSpec
		if err := specfile.Decode(cdc, bz, &spec); err != nil {
			return
		}
		if err := spec.Validate(params, specNow); err != nil {
			require.ErrorIs(t, err, types.ErrInvalidJobSpec)
			return
		}
		// a spec that validates round-trips through JSON and validates again
		js, err := cdc.MarshalJSON(&spec)
		require.NoError(t, err)
		var again types.JobSpec
		require.NoError(t, cdc.UnmarshalJSON(js, &again))
		require.NoError(t, again.Validate(params, specNow))
		require.True(t, json.Valid(js))
	})
}
