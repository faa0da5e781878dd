package types

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// Bounds on the free-form parts of a spec (the rest are params).
const (
	MaxArgs        = 64
	MaxArgLen      = 1024
	MaxEnv         = 64
	MaxEnvValueLen = 4096
	MaxURILen      = 1024
	MaxPathLen     = 256
	MaxImageLen    = 256
	MaxGPUsPerTask = 16
	// MaxAllowedClasses bounds requirements.allowed_classes: more classes than the GPU
	// class table could hold buy nothing and cost the scheduler a read each.
	MaxAllowedClasses = 32
	// MaxTaskArgsBytes bounds the bytes of all of a job's task_args together.
	MaxTaskArgsBytes = 256 << 10
	// MaxUsageGPUs bounds a reveal's usage.gpu_uuids, MaxGPUUUIDLen each UUID.
	MaxUsageGPUs  = 64
	MaxGPUUUIDLen = 128
	// MaxSaltLen bounds a reveal's salt.
	MaxSaltLen = 64
	// MaxFailureDetailLen bounds a failure report's detail.
	MaxFailureDetailLen = 256
	// MaxProgressPerHeartbeat bounds the progress reports of one heartbeat, MaxProgressLen
	// each report.
	MaxProgressPerHeartbeat = 64
	MaxProgressLen          = 128

	BuiltinGemm     = "gemm"
	BuiltinChecksum = "checksum"
)

var (
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	ccPattern    = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]{1,2}$`)
	pinnedDigest = regexp.MustCompile(`^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$`)
)

func specErr(format string, args ...any) error {
	return errorsmod.Wrapf(ErrInvalidJobSpec, format, args...)
}

// Validate checks every field of a job spec against the params at block time now. Each
// failure is ErrInvalidJobSpec naming the field and the value.
func (s JobSpec) Validate(p Params, now time.Time) error {
	if s.Workload == gfltypes.WORKLOAD_CLASS_UNSPECIFIED || gfltypes.WorkloadClass_name[int32(s.Workload)] == "" {
		return specErr("workload %d: unknown workload class", s.Workload)
	}
	if err := s.validateRuntime(); err != nil {
		return err
	}
	if s.Runtime == RUNTIME_BUILTIN && s.Image == BuiltinGemm {
		if rn := uint64(s.Builtin.GemmN) * uint64(s.Builtin.GemmR); rn > p.GemmMaxRn {
			return specErr("builtin.gemm_n x gemm_r = %d: at most gemm_max_rn %d", rn, p.GemmMaxRn)
		}
	}
	if err := validate.Count("env", len(s.Env), MaxEnv); err != nil {
		return err
	}
	names := map[string]struct{}{}
	for i, e := range s.Env {
		if err := validate.Size(fmt.Sprintf("env[%d].name", i), len(e.Name), 128); err != nil {
			return err
		}
		if !envName.MatchString(e.Name) {
			return specErr("env[%d].name %q: must match %s", i, e.Name, envName)
		}
		if _, dup := names[e.Name]; dup {
			return specErr("env[%d].name %q: duplicate", i, e.Name)
		}
		names[e.Name] = struct{}{}
		if err := validate.Size(fmt.Sprintf("env[%d].value", i), len(e.Value), MaxEnvValueLen); err != nil {
			return err
		}
	}
	if err := validateInputs(s.Inputs, p.MaxInputsPerJob); err != nil {
		return err
	}
	if err := s.Requirements.validate(); err != nil {
		return err
	}
	if s.TaskCount == 0 || s.TaskCount > p.MaxTasksPerJob {
		return specErr("task_count %d: must be 1 to %d", s.TaskCount, p.MaxTasksPerJob)
	}
	if err := validate.Count("task_args", len(s.TaskArgs), int(s.TaskCount)); err != nil {
		return err
	}
	if len(s.TaskArgs) != 0 && len(s.TaskArgs) != int(s.TaskCount) {
		return specErr("task_args: %d entries, must be 0 or task_count %d", len(s.TaskArgs), s.TaskCount)
	}
	argBytes := 0
	for i, ta := range s.TaskArgs {
		if err := validateArgs(fmt.Sprintf("task_args[%d].args", i), ta.Args); err != nil {
			return err
		}
		for _, a := range ta.Args {
			argBytes += len(a)
		}
	}
	if err := validate.Size("task_args", argBytes, MaxTaskArgsBytes); err != nil {
		return err
	}
	if s.Replicas == 0 || s.Replicas > p.MaxReplicas {
		return specErr("replicas %d: must be 1 to %d", s.Replicas, p.MaxReplicas)
	}
	if err := s.validateVerification(); err != nil {
		return err
	}
	if err := validate.Coin("max_price_per_task", s.MaxPricePerTask, p.Denom); err != nil {
		return specErr("%s", err)
	}
	if !s.MaxPricePerTask.IsPositive() || s.MaxPricePerTask.Amount.GT(MaxAmount) {
		return specErr("max_price_per_task %s: must be positive and at most %s", s.MaxPricePerTask, MaxAmount)
	}
	if s.MaxDuration <= 0 || s.MaxDuration > p.MaxJobDuration {
		return specErr("max_duration %s: must be positive and at most %s", s.MaxDuration, p.MaxJobDuration)
	}
	if earliest := now.Add(s.MaxDuration); s.Deadline.Before(earliest) {
		return specErr("deadline %s: a task started now would end at %s", s.Deadline.UTC().Format(time.RFC3339), earliest.UTC().Format(time.RFC3339))
	}
	if err := validate.Coin("priority_tip", s.PriorityTip, p.Denom); err != nil {
		return specErr("%s", err)
	}
	if s.PriorityTip.Amount.GT(MaxAmount) {
		return specErr("priority_tip %s: at most %s", s.PriorityTip, MaxAmount)
	}
	if s.Mode != ALLOCATION_MODE_ASSIGN && s.Mode != ALLOCATION_MODE_AUCTION {
		return specErr("mode %d: must be ASSIGN or AUCTION", s.Mode)
	}
	if s.CheckpointInterval < 0 || (s.CheckpointInterval > 0 && s.CheckpointInterval >= s.MaxDuration) {
		return specErr("checkpoint_interval %s: must be 0 or shorter than max_duration %s", s.CheckpointInterval, s.MaxDuration)
	}
	if err := validate.Coin("verification_budget", s.VerificationBudget, p.Denom); err != nil {
		return specErr("%s", err)
	}
	if s.VerificationBudget.Amount.GT(MaxAmount) {
		return specErr("verification_budget %s: at most %s", s.VerificationBudget, MaxAmount)
	}
	// A single-replica EXACT job is secured by audits: its budget must pay an audit and a
	// committee for every task, or a provider who saw it run dry would cheat unaudited.
	if s.Verification == VERIFICATION_CLASS_EXACT && s.Replicas == 1 {
		need := s.MaxPricePerTask.Amount.MulRaw(int64(s.TaskCount)).MulRaw(1 + int64(p.CommitteeSize))
		if s.VerificationBudget.Amount.LT(need) {
			return specErr("verification_budget %s: a single-replica EXACT job needs task_count x max_price x (1 + committee_size) = %s for its audits", s.VerificationBudget, need)
		}
	}
	return nil
}

func (s JobSpec) validateRuntime() error {
	switch s.Runtime {
	case RUNTIME_BUILTIN:
		if len(s.Command) != 0 {
			return specErr("command: a BUILTIN job takes none")
		}
		switch s.Image {
		case BuiltinGemm:
			b := s.Builtin
			if b.GemmN < 256 || b.GemmN > 65536 || b.GemmN%256 != 0 {
				return specErr("builtin.gemm_n %d: must be a multiple of 256 in [256, 65536]", b.GemmN)
			}
			if b.GemmR == 0 || uint64(4)*uint64(b.GemmN)*uint64(b.GemmR) >= 1<<24 {
				return specErr("builtin.gemm_r %d: must be >= 1 with 4*n*r < 2^24", b.GemmR)
			}
		case BuiltinChecksum:
			if s.Builtin.ChecksumBytes == 0 || s.Builtin.ChecksumBytes > 1<<40 {
				return specErr("builtin.checksum_bytes %d: must be 1 to 2^40", s.Builtin.ChecksumBytes)
			}
		default:
			return specErr("image %q: a BUILTIN job names %q or %q", s.Image, BuiltinGemm, BuiltinChecksum)
		}
	case RUNTIME_PROCESS:
		if s.Image != "" {
			return specErr("image %q: a PROCESS job takes none", s.Image)
		}
		if len(s.Command) == 0 {
			return specErr("command: a PROCESS job needs one")
		}
		if err := validateArgs("command", s.Command); err != nil {
			return err
		}
	case RUNTIME_CONTAINER:
		if err := validate.Size("image", len(s.Image), MaxImageLen); err != nil {
			return err
		}
		if !pinnedDigest.MatchString(s.Image) {
			return specErr("image %q: must be a reference pinned by digest, repo@sha256:<64 hex>", s.Image)
		}
		if err := validateArgs("command", s.Command); err != nil {
			return err
		}
	default:
		return specErr("runtime %d: must be BUILTIN, PROCESS or CONTAINER", s.Runtime)
	}
	return nil
}

func (s JobSpec) validateVerification() error {
	switch s.Verification {
	case VERIFICATION_CLASS_EXACT, VERIFICATION_CLASS_NONE:
	case VERIFICATION_CLASS_BUILTIN_GEMM:
		if s.Runtime != RUNTIME_BUILTIN || s.Image != BuiltinGemm {
			return specErr("verification BUILTIN_GEMM: only for the BUILTIN %q workload", BuiltinGemm)
		}
	default:
		return specErr("verification %d: must be EXACT, BUILTIN_GEMM or NONE", s.Verification)
	}
	return nil
}

func validateArgs(field string, args []string) error {
	if err := validate.Count(field, len(args), MaxArgs); err != nil {
		return err
	}
	for i, a := range args {
		if err := validate.Size(fmt.Sprintf("%s[%d]", field, i), len(a), MaxArgLen); err != nil {
			return err
		}
		if strings.ContainsRune(a, 0) {
			return specErr("%s[%d]: contains NUL", field, i)
		}
	}
	return nil
}

func validateInputs(inputs []Input, max uint32) error {
	if err := validate.Count("inputs", len(inputs), int(max)); err != nil {
		return err
	}
	paths := map[string]struct{}{}
	for i, in := range inputs {
		if err := ValidateInputSizes(fmt.Sprintf("inputs[%d]", i), in); err != nil {
			return err
		}
		if err := ValidateURI(in.Uri); err != nil {
			return specErr("inputs[%d].uri: %s", i, err)
		}
		if err := ValidateSHA256Hex(in.Sha256); err != nil {
			return specErr("inputs[%d].sha256: %s", i, err)
		}
		p := in.Path
		if p == "" || len(p) > MaxPathLen || path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == ".." {
			return specErr("inputs[%d].path %q: must be a clean relative path inside the working directory", i, p)
		}
		if _, dup := paths[p]; dup {
			return specErr("inputs[%d].path %q: duplicate", i, p)
		}
		paths[p] = struct{}{}
	}
	return nil
}

func (r Requirements) validate() error {
	if r.GpuCount > MaxGPUsPerTask {
		return specErr("requirements.gpu_count %d: at most %d", r.GpuCount, MaxGPUsPerTask)
	}
	if r.MultiSliceOk && !r.SharedGpuOk {
		return specErr("requirements.multi_slice_ok: allows several MIG instances of one card, so needs shared_gpu_ok")
	}
	if r.MinComputeCapability != "" && !ccPattern.MatchString(r.MinComputeCapability) {
		return specErr("requirements.min_compute_capability %q: must be major.minor", r.MinComputeCapability)
	}
	if err := validate.Count("requirements.allowed_classes", len(r.AllowedClasses), MaxAllowedClasses); err != nil {
		return err
	}
	seen := map[string]struct{}{}
	for i, c := range r.AllowedClasses {
		if err := validate.Identifier(fmt.Sprintf("requirements.allowed_classes[%d]", i), c); err != nil {
			return specErr("%s", err)
		}
		if _, dup := seen[c]; dup {
			return specErr("requirements.allowed_classes[%d] %q: duplicate", i, c)
		}
		seen[c] = struct{}{}
	}
	if r.Region != "" {
		if err := validate.Identifier("requirements.region", r.Region); err != nil {
			return specErr("%s", err)
		}
	}
	if r.DiskMibPerGpu != 0 && (r.DiskMibPerGpu < MinTaskDiskMiBPerGPU || r.DiskMibPerGpu > MaxTaskDiskMiBPerGPU) {
		return specErr("requirements.disk_mib_per_gpu %d: 0 (the market's task_disk_mib_per_gpu) or %d to %d", r.DiskMibPerGpu, MinTaskDiskMiBPerGPU, MaxTaskDiskMiBPerGPU)
	}
	return nil
}

// GPUs is the number of GPUs one task needs.
func (r Requirements) GPUs() uint32 { return max(r.GpuCount, 1) }

// MaxAmount bounds every price, tip and budget a spec or a bid names (10^30 udps, far
// beyond any supply), so that budgets, quotes and their products stay well inside an Int.
var MaxAmount = sdkmath.NewIntWithDecimal(1, 30)

// ValidateInputSizes checks the sizes of an input's fields (uri, sha256, path) before
// their contents are looked at: ErrTooLarge naming the field.
func ValidateInputSizes(field string, in Input) error {
	if err := validate.Size(field+".uri", len(in.Uri), MaxURILen); err != nil {
		return err
	}
	if err := validate.Size(field+".sha256", len(in.Sha256), 64); err != nil {
		return err
	}
	return validate.Size(field+".path", len(in.Path), MaxPathLen)
}

// ValidateUsageSizes checks a reveal's usage report: at most MaxUsageGPUs GPU UUIDs of at
// most MaxGPUUUIDLen bytes each.
func ValidateUsageSizes(u Usage) error {
	if err := validate.Count("usage.gpu_uuids", len(u.GpuUuids), MaxUsageGPUs); err != nil {
		return err
	}
	for i, id := range u.GpuUuids {
		if err := validate.Size(fmt.Sprintf("usage.gpu_uuids[%d]", i), len(id), MaxGPUUUIDLen); err != nil {
			return err
		}
	}
	return nil
}

// ValidateURI accepts https, http and ipfs URIs (with a content identifier) of at most
// MaxURILen bytes.
func ValidateURI(uri string) error {
	if uri == "" || len(uri) > MaxURILen {
		return fmt.Errorf("%s: must be 1 to %d bytes", validate.Quote(uri), MaxURILen)
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("%q: %w", uri, err)
	}
	switch u.Scheme {
	case "https", "http":
		if u.Host == "" {
			return fmt.Errorf("%q: no host", uri)
		}
	case "ipfs":
		if cid := strings.Trim(u.Host+u.Opaque, "/"); cid == "" {
			return fmt.Errorf("%q: no content identifier", uri)
		}
	default:
		return fmt.Errorf("%q: scheme must be https, http or ipfs", uri)
	}
	return nil
}

// ValidateSHA256Hex accepts 64 lowercase hex characters.
func ValidateSHA256Hex(s string) error {
	if len(s) != 64 || strings.ToLower(s) != s {
		return fmt.Errorf("%s: must be 64 lowercase hex characters", validate.Quote(s))
	}
	if _, err := hex.DecodeString(s); err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	return nil
}

// TotalTasks is the number of task replicas of the job.
func (s JobSpec) TotalTasks() uint64 { return uint64(s.TaskCount) * uint64(s.Replicas) }

// PrimaryOffset is where a shard's primary replica stands among the job's primaries, which
// are numbered at submission shard by shard: its id is first_task_id + this.
func (s JobSpec) PrimaryOffset(index, replica uint32) uint64 {
	return uint64(index)*uint64(s.Replicas) + uint64(replica)
}

// Reserved is what one task replica holds in escrow: its max price plus its tip.
func (s JobSpec) Reserved() sdkmath.Int { return s.MaxPricePerTask.Amount.Add(s.PriorityTip.Amount) }

// Budget is the whole escrow of a job: every replica's max price and tip, plus the
// verification budget.
func (s JobSpec) Budget() sdkmath.Int {
	return s.Reserved().Mul(sdkmath.NewIntFromUint64(s.TotalTasks())).Add(s.VerificationBudget.Amount)
}

// Quote is a node's price for a task from its ask: ask per GPU-hour * GPUs * max duration,
// rounded up to the udps.
func Quote(askPerGPUHour sdkmath.Int, gpus uint32, d time.Duration) sdkmath.Int {
	return quoteShare(askPerGPUHour, uint64(gpus), 1, d)
}

// quoteShare is the ask for num/den GPUs for d, rounded up to the udps.
//
// The scheduler quotes every candidate it examines, so the usual case (an ask, a GPU
// count and a duration whose product fits 128 bits, a quote that fits 64) is computed in
// machine words; anything larger, or negative, takes the big-integer path. Both give the
// same result (TestQuoteWordsMatchBigIntegers).
func quoteShare(askPerGPUHour sdkmath.Int, num, den uint64, d time.Duration) sdkmath.Int {
	if q, ok := quoteWords(askPerGPUHour, num, den, d); ok {
		return sdkmath.NewIntFromUint64(q)
	}
	return quoteBig(askPerGPUHour, num, den, d)
}

// quoteWords is quoteShare in 64-bit words: ok is false when an operand or the result
// does not fit (the caller then computes it with big integers).
func quoteWords(askPerGPUHour sdkmath.Int, num, den uint64, d time.Duration) (uint64, bool) {
	if askPerGPUHour.IsNil() || !askPerGPUHour.IsUint64() || d < 0 || den == 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(askPerGPUHour.Uint64(), num)
	if hi != 0 {
		return 0, false
	}
	hi, lo = bits.Mul64(lo, uint64(d))
	unitHi, unit := bits.Mul64(den, uint64(time.Hour))
	if unitHi != 0 || hi >= unit {
		// the unit does not fit a word, or the quotient would not
		return 0, false
	}
	q, r := bits.Div64(hi, lo, unit)
	if r != 0 {
		if q == math.MaxUint64 {
			return 0, false
		}
		q++
	}
	return q, true
}

// quoteBig is quoteShare with big integers.
func quoteBig(askPerGPUHour sdkmath.Int, num, den uint64, d time.Duration) sdkmath.Int {
	total := askPerGPUHour.Mul(sdkmath.NewIntFromUint64(num)).Mul(sdkmath.NewInt(int64(d)))
	unit := sdkmath.NewIntFromUint64(den).Mul(sdkmath.NewInt(int64(time.Hour)))
	q, r := total.Quo(unit), total.Mod(unit)
	if r.IsPositive() {
		q = q.AddRaw(1)
	}
	return q
}

// RevealGasPerByte is the gas charged per byte of a transaction (x/auth's
// tx_size_cost_per_byte default), at which a reveal's proof bytes are counted.
const RevealGasPerByte = 10

// GemmRevealGas is the gas a provider pays to reveal a BUILTIN gemm task or unit of these
// arguments under x/gfl's params: the verification of the sampled entries (charged by
// the reveal as a PoCP reveal is) and the bytes of the sampled chunks with their Merkle
// paths. It depends only on the arguments and the params, so it is known at submission.
func GemmRevealGas(b BuiltinArgs, gp gfltypes.Params) uint64 {
	samples := uint64(gp.ChallengeSamples)
	verify := pocp.VerifyTerms(pocp.Challenge{N: b.GemmN, R: b.GemmR}, int(samples)) * gp.VerifyGasPerKterm / 1000
	leaves := uint64(b.GemmN) * uint64(b.GemmN) / pocp.ChunkEntries
	depth := uint64(bits.Len64(leaves))
	proofBytes := samples * (pocp.ChunkBytes + 32*depth + 16)
	return verify + proofBytes*RevealGasPerByte
}

// RevealCost is gas x price, rounded up, in udps.
func RevealCost(gas uint64, price sdkmath.LegacyDec) uint64 {
	return price.MulInt(sdkmath.NewIntFromUint64(gas)).Ceil().TruncateInt().Uint64()
}

// ShardCommand is the command a shard runs: the job's command followed by the shard's
// task_args, when the job has them.
func (s JobSpec) ShardCommand(index uint32) []string {
	out := append([]string(nil), s.Command...)
	if int(index) < len(s.TaskArgs) {
		out = append(out, s.TaskArgs[index].Args...)
	}
	return out
}

// Validate checks a pool spec against the params (the runtime rules are the jobs'). The
// chain runs it on MsgCreatePool; the CLI runs it before it signs.
func (s PoolSpec) Validate(p Params) error {
	js := JobSpec{
		Workload: s.Workload, Runtime: s.Runtime, Image: s.Image, Command: s.Command, Env: s.Env,
		Requirements: s.Requirements, TaskCount: 1, Replicas: 1, Verification: s.Verification,
		MaxPricePerTask: s.UnitPrice, MaxDuration: s.UnitMaxDuration, Mode: ALLOCATION_MODE_ASSIGN,
		PriorityTip: sdk.NewInt64Coin(p.Denom, 0), VerificationBudget: sdk.NewInt64Coin(p.Denom, 0), Builtin: s.Builtin,
	}
	if s.Verification != VERIFICATION_CLASS_BUILTIN_GEMM && s.Verification != VERIFICATION_CLASS_NONE {
		return errorsmod.Wrapf(ErrInvalidPool, "verification %s: a pool takes BUILTIN_GEMM or NONE", s.Verification)
	}
	// Validate against a far deadline: a pool has none of its own.
	if err := js.Validate(p, js.Deadline.Add(-js.MaxDuration)); err != nil {
		if errors.Is(err, validate.ErrTooMany) || errors.Is(err, validate.ErrTooLarge) {
			return err // a bound's own error, naming the field
		}
		return errorsmod.Wrap(ErrInvalidPool, err.Error())
	}
	if s.MaxProviders == 0 || s.MaxProviders > p.MaxPoolProviders {
		return errorsmod.Wrapf(ErrInvalidPool, "max_providers %d: must be 1 to %d", s.MaxProviders, p.MaxPoolProviders)
	}
	if s.Budget.Denom != p.Denom || s.Budget.Amount.IsNil() || s.Budget.Amount.LT(s.UnitPrice.Amount) || s.Budget.Amount.GT(MaxAmount) {
		return errorsmod.Wrapf(ErrInvalidPool, "budget %s: must be in %s, pay at least one unit of %s and be at most %s", s.Budget, p.Denom, s.UnitPrice, MaxAmount)
	}
	return nil
}
