package types

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// The market's pure rules: what the chain and a worker must compute the same way. No
// keeper, no store; x/market's keeper and flops-worker both call these.

// Commitment is what a provider commits: sha256(result_root || salt || provider address
// bytes). Binding the provider's address means a copied commitment cannot be revealed by
// anyone else.
func Commitment(root, salt []byte, provider sdk.AccAddress) []byte {
	h := sha256.New()
	h.Write(root)
	h.Write(salt)
	h.Write(provider)
	return h.Sum(nil)
}

// FailedRoot is the result root a verification task (an audit, a tie's escalation, a
// committee member) commits and reveals when its run of the job failed on the job's side
// (the causes a primary reports with MsgReportFailure): the job's failure is its answer,
// compared with the other members' roots like any result. A primary reports a failure
// instead (x/market/README.md, "Failure is a result"), and its reveal of this root is
// refused. It hashes a domain string, so no Merkle root of outputs is this value:
//
//	FailedRoot = sha256(DomainFailedRun)
func FailedRoot() []byte {
	h := sha256.Sum256([]byte(DomainFailedRun))
	return h[:]
}

// IsFailedRoot: root is FailedRoot.
func IsFailedRoot(root []byte) bool {
	return string(root) == string(FailedRoot())
}

// GemmChallenge is the GEMM a BUILTIN gemm task of the job computes: the job's seed mixed
// with the shard index, so that every shard is distinct work (docs/pocp.md, section 8):
//
//	seed = sha256(DomainGemmSeed || job gemm_seed || index BE32)
func (j Job) GemmChallenge(index uint32) pocp.Challenge {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], index)
	h := sha256.New()
	h.Write([]byte(DomainGemmSeed))
	h.Write(j.GemmSeed)
	h.Write(b[:])
	var c pocp.Challenge
	copy(c.Seed[:], h.Sum(nil))
	c.N, c.R = j.Spec.Builtin.GemmN, j.Spec.Builtin.GemmR
	return c
}

// UnitGemm is the GEMM of a BUILTIN gemm pool unit (docs/pocp.md, section 8): seeded by
// the pool, the unit and its input, so that every unit is distinct work:
//
//	seed = sha256(DomainPoolGemm || pool id BE64 || unit id BE64 || input sha256 hex)
func (p Pool) UnitGemm(u Unit) pocp.Challenge {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], p.Id)
	binary.BigEndian.PutUint64(b[8:], u.Id)
	h := sha256.New()
	h.Write([]byte(DomainPoolGemm))
	h.Write(b[:])
	h.Write([]byte(u.Input.Sha256))
	var c pocp.Challenge
	copy(c.Seed[:], h.Sum(nil))
	c.N, c.R = p.Spec.Builtin.GemmN, p.Spec.Builtin.GemmR
	return c
}

// GemmSamplePositions are the entries a BUILTIN_GEMM reveal must open: samples positions
// of the n x n product drawn from seed (the beacon's draw for the block after the
// commitment).
func GemmSamplePositions(seed [32]byte, c pocp.Challenge, samples uint32) []pocp.Position {
	return pocp.SamplePositions(seed, c.N, int(samples))
}

// Payment is how a gross payment is shared out.
type Payment struct {
	Provider, Pool, FeeCollector sdkmath.Int
}

// SplitPayment: take = floor(gross * take_rate), pool = floor(take * pool_share),
// fee collector = take - pool, provider = gross - take. Nothing is created or lost: the
// three parts add up to gross.
func SplitPayment(gross sdkmath.Int, takeRatePPM, poolSharePPM uint32) Payment {
	take := gross.MulRaw(int64(takeRatePPM)).QuoRaw(validate.PPMOne)
	pool := take.MulRaw(int64(poolSharePPM)).QuoRaw(validate.PPMOne)
	return Payment{Provider: gross.Sub(take), Pool: pool, FeeCollector: take.Sub(pool)}
}

// WashLoopLoses is the rule that keeps wash work from paying: a provider that pays for
// jobs on its own nodes through an account the chain cannot link to it (funded through an
// intermediary, over IBC or off chain) pays x/market's take, take_rate_ppm of the fees F
// it routes, and earns at most x/dps's work_reward_cap_ppm of F as work reward. So the
// cap must be below the take, or 0 (work earns nothing). x/market's and x/dps's params
// updates and the chain's genesis are held to it (x/dps/README.md, "Self-dealing does not
// pay"); the error names both params.
func WashLoopLoses(takeRatePpm uint32, workRewardCapPpm uint64) error {
	if workRewardCapPpm == 0 || workRewardCapPpm < uint64(takeRatePpm) {
		return nil
	}
	return fmt.Errorf("x/dps's work_reward_cap_ppm %d is not below x/market's take_rate_ppm %d: "+
		"a provider paying for jobs on its own nodes through an account it funded out of the chain's sight "+
		"would earn more work reward than the take it pays (x/dps README, \"Self-dealing does not pay\")",
		workRewardCapPpm, takeRatePpm)
}

// SlotFromNode is the market's view of an x/gfl node: its class, region, GPUs, the
// weakest GPU's memory and compute capability, and tensor cores and MIG only when every
// GPU has them. Usage counters (GPUs in use, tasks) are the caller's. A node that measured
// into no class (x/gfl re-classed it to none), or that waits for PoCP to show its class's
// floor, is not scheduled.
func SlotFromNode(n gfltypes.Node) NodeSlot {
	s := NodeSlot{
		NodeId: n.Id, Operator: n.Operator, GpuClass: n.GpuClass, Region: n.Region, Gpus: uint32(len(n.Gpus)),
		Workloads: n.Workloads, Runtimes: n.Runtimes, AskPerGpuHour: n.AskPerGpuHour.Amount, Active: n.Schedulable() && n.GpuClass != "" && !n.AwaitingMeasurement, PowerGflops: n.PowerGflops,
		TensorCores: len(n.Gpus) > 0, MigCapable: len(n.Gpus) > 0, DiskMibPerGpu: n.DiskMibPerGpu,
	}
	mig := false
	for i, g := range n.Gpus {
		if i == 0 || g.MemoryMib < s.MinMemoryMib {
			s.MinMemoryMib = g.MemoryMib
		}
		if i == 0 || CompareComputeCapability(g.ComputeCapability, s.ComputeCapability) < 0 {
			s.ComputeCapability = g.ComputeCapability
		}
		s.TensorCores = s.TensorCores && g.TensorCores
		s.MigCapable = s.MigCapable && g.MigCapable
		mig = mig || len(g.MigInstances) > 0
	}
	if mig {
		// its devices: each GPU offered whole, or its MIG instances
		for card, g := range n.Gpus {
			if len(g.MigInstances) == 0 {
				s.Devices = append(s.Devices, SlotDevice{Card: uint32(card), MemoryMib: g.MemoryMib})
				continue
			}
			for _, m := range g.MigInstances {
				s.Devices = append(s.Devices, SlotDevice{Card: uint32(card), MemoryMib: m.MemoryMib, Slices: m.Slices, CardSlices: g.MigSlices})
			}
		}
		// the smallest device's memory (shown; FitDevices checks each device's)
		s.Gpus = uint32(len(s.Devices))
		for _, d := range s.Devices {
			s.MinMemoryMib = min(s.MinMemoryMib, d.MemoryMib)
		}
	}
	return s
}

// TimePrice is the part of a task's price (agreed for max_duration) that pays for run, the
// time from its ack to its commitment, rounded up to a multiple of granularity (at least
// one): price x
// billed / max_duration, truncated to the udps, never more than price. A provider that
// stalls is bounded by the price; one that finishes early charges what it used.
func TimePrice(price sdkmath.Int, run, maxDuration, granularity time.Duration) sdkmath.Int {
	if maxDuration <= 0 || granularity <= 0 {
		return price
	}
	run = max(run, 0)
	if run >= maxDuration {
		return price
	}
	billed := max((run+granularity-1)/granularity, 1) * granularity
	if billed >= maxDuration {
		return price
	}
	return price.Mul(sdkmath.NewInt(int64(billed))).Quo(sdkmath.NewInt(int64(maxDuration)))
}

// PrintableLine: s is valid UTF-8 on one line, with no control character (a failure
// report's detail, a task's progress: words that every client prints).
func PrintableLine(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0
}
