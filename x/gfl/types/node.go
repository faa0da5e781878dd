package types

import (
	"bytes"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/internal/sdkint"
	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/gfl/pocp"
)

const (
	maxModelLen    = 128
	maxUUIDLen     = 128
	maxEndpointLen = 256
)

var computeCapability = regexp.MustCompile(`^[0-9]{1,2}\.[0-9]{1,2}$`)

// migProfile is NVIDIA's MIG profile name: "<g>g.<m>gb", prefixed by "<c>c." when the
// compute instance is smaller than its GPU instance, e.g. "1g.10gb", "1c.2g.20gb"; a
// suffix such as "+me" is allowed.
var migProfile = regexp.MustCompile(`^([0-9]c\.)?[0-9]g\.[0-9]{1,4}gb(\+[a-z]{1,8})?$`)

// MaxMIGSlices bounds a GPU's MIG slices and instances (NVIDIA's GPUs have at most 7).
const MaxMIGSlices = 8

const maxMIGProfileLen = 32

// Validate checks a node spec against the params and returns the node's GPU class. Every
// failure is a registered error naming the offending field and value.
func (s NodeSpec) Validate(p Params) (string, error) {
	if err := s.validateSizes(p); err != nil {
		return "", err
	}
	if n := len(s.Gpus); n == 0 || uint32(n) > p.MaxGpusPerNode {
		return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus: %d GPUs, must be 1 to %d", n, p.MaxGpusPerNode)
	}
	seen := make(map[string]struct{}, len(s.Gpus))
	class := ""
	for i, g := range s.Gpus {
		if err := g.validate(i); err != nil {
			return "", err
		}
		if _, dup := seen[g.Uuid]; dup {
			return "", errorsmod.Wrapf(ErrDuplicateGpu, "gpus[%d].uuid %s appears twice in the node", i, g.Uuid)
		}
		seen[g.Uuid] = struct{}{}
		for k, m := range g.MigInstances {
			if _, dup := seen[m.Uuid]; dup {
				return "", errorsmod.Wrapf(ErrDuplicateGpu, "gpus[%d].mig_instances[%d].uuid %s appears twice in the node", i, k, m.Uuid)
			}
			seen[m.Uuid] = struct{}{}
		}
		c, ok := ClassifyGPU(p.GpuClasses, g)
		if !ok {
			return "", errorsmod.Wrapf(ErrUnknownGpuClass, "gpus[%d]: %q with %d MiB matches no class of the GPU class table", i, g.Model, g.MemoryMib)
		}
		if class != "" && c != class {
			return "", errorsmod.Wrapf(ErrMixedGpuClasses, "gpus[%d] is %s but gpus[0] is %s: register each class as its own node", i, c, class)
		}
		class = c
	}
	if err := validate.Identifier("region", s.Region); err != nil {
		return "", errorsmod.Wrap(ErrInvalidNodeSpec, err.Error())
	}
	if err := ValidateEndpoint(s.Endpoint); err != nil {
		return "", err
	}
	if len(s.Workloads) == 0 || len(s.Workloads) > len(WorkloadClasses) {
		return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "workloads: %d given, must be 1 to %d", len(s.Workloads), len(WorkloadClasses))
	}
	wl := make(map[WorkloadClass]struct{}, len(s.Workloads))
	for i, w := range s.Workloads {
		if w == WORKLOAD_CLASS_UNSPECIFIED || WorkloadClass_name[int32(w)] == "" {
			return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "workloads[%d] %d: unknown workload class", i, w)
		}
		if _, dup := wl[w]; dup {
			return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "workloads[%d] %s: duplicate", i, w)
		}
		wl[w] = struct{}{}
	}
	rt := make(map[Runtime]struct{}, len(s.Runtimes))
	for i, r := range s.Runtimes {
		if r == RUNTIME_UNSPECIFIED || Runtime_name[int32(r)] == "" {
			return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "runtimes[%d] %d: unknown runtime", i, r)
		}
		if _, dup := rt[r]; dup {
			return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "runtimes[%d] %s: duplicate", i, r)
		}
		rt[r] = struct{}{}
	}
	if err := validate.Coin("ask_per_gpu_hour", s.AskPerGpuHour, chain.BondDenom); err != nil {
		return "", errorsmod.Wrap(ErrInvalidNodeSpec, err.Error())
	}
	if !s.AskPerGpuHour.IsPositive() || s.AskPerGpuHour.Amount.GT(maxAsk) {
		return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "ask_per_gpu_hour %s: must be positive and at most %s", s.AskPerGpuHour, maxAsk)
	}
	if s.ClaimedGflops == 0 || s.ClaimedGflops > p.MaxClaimedGflops {
		return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "claimed_gflops %d: must be 1 to %d", s.ClaimedGflops, p.MaxClaimedGflops)
	}
	if s.DiskMibPerGpu != 0 && (s.DiskMibPerGpu < MinDiskMiBPerGPU || s.DiskMibPerGpu > MaxDiskMiBPerGPU) {
		return "", errorsmod.Wrapf(ErrInvalidNodeSpec, "disk_mib_per_gpu %d: 0 (none declared) or %d to %d", s.DiskMibPerGpu, MinDiskMiBPerGPU, MaxDiskMiBPerGPU)
	}
	return class, nil
}

// validateSizes checks every list and string of a node spec against its bound before its
// contents are looked at: ErrTooMany or ErrTooLarge naming the field.
func (s NodeSpec) validateSizes(p Params) error {
	if err := validate.Count("gpus", len(s.Gpus), int(p.MaxGpusPerNode)); err != nil {
		return err
	}
	for i, g := range s.Gpus {
		if err := validate.Size(fmt.Sprintf("gpus[%d].model", i), len(g.Model), maxModelLen); err != nil {
			return err
		}
		if err := validate.Size(fmt.Sprintf("gpus[%d].uuid", i), len(g.Uuid), maxUUIDLen); err != nil {
			return err
		}
		if err := validate.Size(fmt.Sprintf("gpus[%d].compute_capability", i), len(g.ComputeCapability), 5); err != nil {
			return err
		}
		if err := validate.Count(fmt.Sprintf("gpus[%d].mig_instances", i), len(g.MigInstances), MaxMIGSlices); err != nil {
			return err
		}
		for k, m := range g.MigInstances {
			if err := validate.Size(fmt.Sprintf("gpus[%d].mig_instances[%d].uuid", i, k), len(m.Uuid), maxUUIDLen); err != nil {
				return err
			}
			if err := validate.Size(fmt.Sprintf("gpus[%d].mig_instances[%d].profile", i, k), len(m.Profile), maxMIGProfileLen); err != nil {
				return err
			}
		}
	}
	if err := validate.Size("region", len(s.Region), 64); err != nil {
		return err
	}
	if err := validate.Size("endpoint", len(s.Endpoint), maxEndpointLen); err != nil {
		return err
	}
	if err := validate.Count("workloads", len(s.Workloads), len(WorkloadClasses)); err != nil {
		return err
	}
	return validate.Count("runtimes", len(s.Runtimes), len(Runtime_name)-1)
}

func (g GpuInfo) validate(i int) error {
	switch {
	case g.Model == "" || len(g.Model) > maxModelLen:
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].model %q: must be 1 to %d characters", i, g.Model, maxModelLen)
	case g.Uuid == "" || len(g.Uuid) > maxUUIDLen || strings.ContainsAny(g.Uuid, " \t\n"):
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].uuid %q: must be 1 to %d characters without spaces", i, g.Uuid, maxUUIDLen)
	case g.MemoryMib == 0:
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].memory_mib: must be positive", i)
	case !computeCapability.MatchString(g.ComputeCapability):
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].compute_capability %q: must be major.minor, e.g. 8.0", i, g.ComputeCapability)
	}
	return g.validateMIG(i)
}

// validateMIG checks a GPU's MIG instances: a MIG-capable GPU, its slice count, and
// instances that fit in it (their slices and memory add up to at most the GPU's).
func (g GpuInfo) validateMIG(i int) error {
	if len(g.MigInstances) == 0 {
		if g.MigSlices != 0 {
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_slices %d: without mig_instances, must be 0", i, g.MigSlices)
		}
		return nil
	}
	switch {
	case !g.MigCapable:
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances: the GPU is not mig_capable", i)
	case g.MigSlices == 0 || g.MigSlices > MaxMIGSlices:
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_slices %d: must be 1 to %d with mig_instances", i, g.MigSlices, MaxMIGSlices)
	}
	var slices uint32
	var mem uint64
	for k, m := range g.MigInstances {
		switch {
		case m.Uuid == "" || len(m.Uuid) > maxUUIDLen || strings.ContainsAny(m.Uuid, " \t\n"):
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances[%d].uuid %q: must be 1 to %d characters without spaces", i, k, m.Uuid, maxUUIDLen)
		case m.Profile != "" && !migProfile.MatchString(m.Profile):
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances[%d].profile %q: must be NVIDIA's name, e.g. 1g.10gb or 1c.2g.20gb (or empty)", i, k, m.Profile)
		case m.MemoryMib == 0:
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances[%d].memory_mib: must be positive", i, k)
		case m.Slices == 0:
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances[%d].slices: must be positive", i, k)
		}
		// each sum stays at most the GPU's before the next is added: no overflow
		if m.Slices > g.MigSlices-slices {
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances[%d]: %d slices on top of %d, the GPU has %d", i, k, m.Slices, slices, g.MigSlices)
		}
		if m.MemoryMib > g.MemoryMib-mem {
			return errorsmod.Wrapf(ErrInvalidNodeSpec, "gpus[%d].mig_instances[%d]: %d MiB on top of %d, the GPU has %d", i, k, m.MemoryMib, mem, g.MemoryMib)
		}
		slices += m.Slices
		mem += m.MemoryMib
	}
	return nil
}

// SchedulableUUIDs are the UUIDs of the devices work runs on, in order: each GPU's, or
// for a GPU in MIG mode its instances' instead.
func SchedulableUUIDs(gpus []GpuInfo) []string {
	var out []string
	for _, g := range gpus {
		if len(g.MigInstances) == 0 {
			out = append(out, g.Uuid)
			continue
		}
		for _, m := range g.MigInstances {
			out = append(out, m.Uuid)
		}
	}
	return out
}

// DeviceUUIDs are the UUIDs of the GPUs and their MIG instances, each unique on the chain.
func DeviceUUIDs(gpus []GpuInfo) []string {
	out := make([]string, 0, len(gpus))
	for _, g := range gpus {
		out = append(out, g.Uuid)
		for _, m := range g.MigInstances {
			out = append(out, m.Uuid)
		}
	}
	return out
}

// ValidateEndpoint checks a worker endpoint: an absolute http or https URL with a host.
func ValidateEndpoint(endpoint string) error {
	if endpoint == "" || len(endpoint) > maxEndpointLen {
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "endpoint %q: must be 1 to %d characters", endpoint, maxEndpointLen)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errorsmod.Wrapf(ErrInvalidNodeSpec, "endpoint %q: must be an http or https URL with a host", endpoint)
	}
	return nil
}

// ClassifyGPU returns the first class of the table the GPU belongs to: its model contains
// one of the class's substrings (case-insensitive) and its memory is within the class's
// range.
func ClassifyGPU(classes []GpuClass, g GpuInfo) (string, bool) {
	model := strings.ToLower(g.Model)
	for _, c := range classes {
		if !c.holdsMemoryOf(g) {
			continue
		}
		for _, sub := range c.ModelSubstrings {
			if strings.Contains(model, strings.ToLower(sub)) {
				return c.Name, true
			}
		}
	}
	return "", false
}

// InRange says whether perGPU, a node's measured PoCP power per GPU (GFLOP/s), is within
// the class's range (min_gflops_per_gpu to max_gflops_per_gpu; 0 bounds nothing).
func (c GpuClass) InRange(perGPU uint64) bool {
	return perGPU >= c.MinGflopsPerGpu && (c.MaxGflopsPerGpu == 0 || perGPU <= c.MaxGflopsPerGpu)
}

// holdsMemoryOf says whether the GPU's memory is within the class's memory range.
func (c GpuClass) holdsMemoryOf(g GpuInfo) bool {
	return g.MemoryMib >= c.MinMemoryMib && (c.MaxMemoryMib == 0 || g.MemoryMib <= c.MaxMemoryMib)
}

// holdsMemory says whether every GPU's memory is within the class's memory range.
func (c GpuClass) holdsMemory(gpus []GpuInfo) bool {
	for _, g := range gpus {
		if !c.holdsMemoryOf(g) {
			return false
		}
	}
	return len(gpus) > 0
}

// MeasuredClass is the class a node that claimed the class claimed (its inventory's
// class) belongs in once PoCP measured perGPU GFLOP/s per GPU: the claimed class while the
// measurement is within its range; otherwise, of the classes whose range holds the
// measurement and whose memory range holds every GPU of the node, the one with the
// highest floor (the first of the table on a tie), whatever the GPUs' model names say
// (they are the operator's word; the measurement and the memory are what the chain
// checked); "" when none does.
func (p Params) MeasuredClass(claimed string, gpus []GpuInfo, perGPU uint64) string {
	best := -1
	for i, c := range p.GpuClasses {
		if c.Name == claimed && c.InRange(perGPU) {
			return claimed
		}
		if c.InRange(perGPU) && c.holdsMemory(gpus) && (best < 0 || c.MinGflopsPerGpu > p.GpuClasses[best].MinGflopsPerGpu) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return p.GpuClasses[best].Name
}

// Class is the class of the table named class, false if the table lacks it.
func (p Params) Class(class string) (GpuClass, bool) {
	for _, c := range p.GpuClasses {
		if c.Name == class {
			return c, true
		}
	}
	return GpuClass{}, false
}

// AwaitsMeasurement says whether a node newly in class (registered, or claiming it) waits
// for a verified PoCP sample within the class's range before it takes a job: the class
// has a floor.
func (p Params) AwaitsMeasurement(class string) bool {
	c, ok := p.Class(class)
	return ok && c.MinGflopsPerGpu > 0
}

// PowerCap is the most index power the node is credited, and whether there is such a
// bound: for each of its GPUs, the highest ceiling (max_gflops_per_gpu) among the classes
// whose memory range holds the GPU's memory (among all classes when none does), summed;
// none when one of those classes has no ceiling. As for MeasuredClass, memory and power
// are the evidence, not model names. A node measured above that is answered by more than
// the GPUs it declares (a cluster behind one registered GPU): this keeps the power it is
// credited, and its availability reward, within what its declared GPUs, each locking
// collateral, could do.
func (p Params) PowerCap(n Node) (uint64, bool) {
	if len(p.GpuClasses) == 0 {
		return 0, false
	}
	var total uint64
	for _, g := range n.Gpus {
		held := slices.ContainsFunc(p.GpuClasses, func(c GpuClass) bool { return c.holdsMemoryOf(g) })
		best := uint64(0)
		for _, c := range p.GpuClasses {
			if held && !c.holdsMemoryOf(g) {
				continue // the classes that hold its memory, or all when none does
			}
			if c.MaxGflopsPerGpu == 0 {
				return 0, false
			}
			best = max(best, c.MaxGflopsPerGpu)
		}
		if total > math.MaxUint64-best {
			return math.MaxUint64, true
		}
		total += best
	}
	return total, true
}

// PerGPU is a power sample of the node per GPU: what a class's range bounds.
func (n Node) PerGPU(gflops uint64) uint64 { return gflops / max(n.GPUCount(), 1) }

// Claimed is the class the node's inventory matched: claimed_class when the rebalance
// re-classed it, gpu_class otherwise.
func (n Node) Claimed() string {
	if n.ClaimedClass != "" {
		return n.ClaimedClass
	}
	return n.GpuClass
}

// ClassFactors returns a class's performance factors, false if the table lacks it.
func (p Params) ClassFactors(class string) (PerformanceFactors, bool) {
	c, ok := p.Class(class)
	return c.Factors, ok
}

// Schedulable says whether a node may be challenged and given work.
func (n Node) Schedulable() bool { return n.Status == NODE_STATUS_ACTIVE }

// GPUCount is the number of GPUs of the node.
func (n Node) GPUCount() uint64 { return uint64(len(n.Gpus)) }

// Accepts says whether the node accepts a workload class.
func (n Node) Accepts(w WorkloadClass) bool {
	for _, x := range n.Workloads {
		if x == w {
			return true
		}
	}
	return false
}

// The disk a node may offer a task per GPU (NodeSpec.disk_mib_per_gpu), when it offers
// any: at least 1 GiB and at most 16 TiB, the bounds of what a job may ask for (x/market's
// task_disk_mib_per_gpu and requirements.disk_mib_per_gpu).
const (
	MinDiskMiBPerGPU = 1 << 10
	MaxDiskMiBPerGPU = 16 << 20
)

// SameGPUs says whether two GPU lists are the same inventory: every field of every GPU
// (those to come too: the encoding is deterministic), in order. x/gfl holds a change of a
// node's inventory until its tasks in flight end; the worker tells one by it.
func SameGPUs(a, b []GpuInfo) bool {
	return slices.EqualFunc(a, b, func(x, y GpuInfo) bool {
		bx, errX := x.Marshal()
		by, errY := y.Marshal()
		return errX == nil && errY == nil && bytes.Equal(bx, by)
	})
}

// DefaultRuntimes are what a node accepts when its spec lists none: the built-in
// workloads and containers. PROCESS, which runs a job's command on the provider's machine
// (in a sandbox), is only ever accepted by a provider that lists it.
var DefaultRuntimes = []Runtime{RUNTIME_BUILTIN, RUNTIME_CONTAINER}

// NodeRuntimes is the runtimes a spec declares, DefaultRuntimes when it lists none,
// sorted.
func NodeRuntimes(s NodeSpec) []Runtime {
	if len(s.Runtimes) == 0 {
		return slices.Clone(DefaultRuntimes)
	}
	out := slices.Clone(s.Runtimes)
	slices.Sort(out)
	return out
}

// HighestAsk is the highest ask per GPU-hour the node has had since its last rebalance
// (PeakAsk; its ask where no peak is recorded, in a record written before PeakAsk was).
// Zero for a node without an ask.
func (n Node) HighestAsk() sdkmath.Int {
	ask := sdkint.OrZero(n.AskPerGpuHour.Amount)
	if !n.PeakAsk.IsNil() && n.PeakAsk.GT(ask) {
		return n.PeakAsk
	}
	return ask
}

// EpochHighestAsk is the highest ask per GPU-hour of the epoch the node's power was
// measured over (EpochAsk, set by the rebalance that set the power; HighestAsk where none
// is recorded): what x/dps compares with the class's reference ask.
func (n Node) EpochHighestAsk() sdkmath.Int {
	if !n.EpochAsk.IsNil() && n.EpochAsk.IsPositive() {
		return n.EpochAsk
	}
	return n.HighestAsk()
}

// Describe names a node for error messages.
func (n Node) Describe() string { return fmt.Sprintf("node %d (%s, %s)", n.Id, n.GpuClass, n.Status) }

// maxAsk bounds a node's ask (10^30 udps per GPU-hour, far beyond any supply) so that the
// market's quotes stay well inside an Int.
var maxAsk = sdkmath.NewIntWithDecimal(1, 30)

// ValidateProofSizes checks revealed chunk proofs before any is read: at most MaxSamples
// proofs (one per sampled entry at most; the exact number is checked when they are
// verified), chunks of at most pocp.ChunkBytes, Merkle paths of at most
// validate.MaxMerklePath hashes of validate.MaxHashLen bytes.
func ValidateProofSizes(field string, proofs []ChunkProof) error {
	if err := validate.Count(field, len(proofs), MaxSamples); err != nil {
		return err
	}
	for i, p := range proofs {
		if err := validate.Size(fmt.Sprintf("%s[%d].chunk", field, i), len(p.Chunk), pocp.ChunkBytes); err != nil {
			return err
		}
		if err := validate.Count(fmt.Sprintf("%s[%d].path", field, i), len(p.Path), validate.MaxMerklePath); err != nil {
			return err
		}
		for j, h := range p.Path {
			if err := validate.Size(fmt.Sprintf("%s[%d].path[%d]", field, i, j), len(h), validate.MaxHashLen); err != nil {
				return err
			}
		}
	}
	return nil
}
