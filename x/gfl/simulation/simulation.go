// Package simulation is x/gfl in the app's simulations (app/sim_test.go): random genesis
// params, the operators' node registration, update, deactivation and reactivation, their
// PoCP answers (honest, wrong (the lazy operators), late or never), and providers trying
// to move their ugfl.
package simulation

import (
	"context"
	"errors"
	"fmt"
	"math/rand" // nolint:determinism // simulation only: the simulator's seeded *rand.Rand draws the operations, never in the state machine
	"slices"
	"sync"
	"time"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/simutil"
	"github.com/flopsnet/flops/testutil/drandtest"
	"github.com/flopsnet/flops/x/gfl/keeper"
	"github.com/flopsnet/flops/x/gfl/pocp"
	"github.com/flopsnet/flops/x/gfl/types"
)

// RandomParams are the defaults with challenges every 20 to 200 blocks, so that a
// simulation sees nodes challenged and missing their deadlines, the smallest matrices
// (the simulated operators solve them on the simulation's CPU) and class power ranges
// those answers fall in and out of. With governed, one time
// in four admission by governance (a params change mid-run: later nodes wait PENDING for
// MsgApproveNode; a genesis with it starves a simulation's market, since the simulated
// governance passes few proposals).
func RandomParams(r *rand.Rand, governed bool) types.Params {
	p := types.DefaultParams()
	p.ChallengeIntervalBlocks = uint64(20 + r.Intn(181))
	p.ChallengeRevealBlocks = uint64(5 + r.Intn(30))
	// the simulator's blocks are up to 2.8 h apart
	p.ChallengeCommitTimeout = time.Duration(6+r.Intn(114)) * time.Hour
	p.ChallengeMinN, p.ChallengeMaxN = 256, 256
	p.ChallengeMaxRn = uint64(256 * (1 + r.Intn(4)))
	if governed && r.Intn(4) == 0 {
		p.Admission = types.ADMISSION_GOVERNED
	}
	if r.Intn(2) == 0 {
		p.Drand = RandomDrand(r)
	}
	// The simulated operators' "GPUs" are the simulation's CPU, and its blocks are up to
	// hours apart: they measure a few GFLOP/s at most, and the launch table's floors would
	// put every node in no class at the first rebalance. Half the runs have no ranges; the
	// other half floors of 0 to 2 GFLOP/s a GPU and, now and then, ceilings, so that nodes
	// are re-classed between classes, out of every class and back, tasks in flight or not.
	p.GpuClasses = types.WithoutPowerRanges(p.GpuClasses)
	if r.Intn(2) == 0 {
		for i := range p.GpuClasses {
			p.GpuClasses[i].MinGflopsPerGpu = uint64(r.Intn(3))
			if r.Intn(4) == 0 {
				p.GpuClasses[i].MaxGflopsPerGpu = p.GpuClasses[i].MinGflopsPerGpu + uint64(r.Intn(20))
			}
		}
	}
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("gfl simulation params: %v", err))
	}
	return p
}

// DrandGenesis is the simulated drand network's genesis (quicknet's), well before the
// simulations' genesis time.
const DrandGenesis = 1692803367

// RandomDrand turns the drand beacon on: a test network (testutil/drandtest, its key
// derived from the period, so that MsgSubmitBeaconFactory signs with it), a period of 3 s
// to 10 min, 1 to 10 rounds of delay and 1 to 20 blocks of wait.
func RandomDrand(r *rand.Rand) types.DrandParams {
	period := []uint32{3, 30, 600}[r.Intn(3)]
	return types.DrandParams{
		PublicKey: drandtest.New(DrandGenesis, period).PublicKey(), GenesisTime: DrandGenesis, PeriodSeconds: period,
		DelayRounds: uint32(1 + r.Intn(10)), WaitBlocks: uint32(1 + r.Intn(20)),
	}
}

// RandomizedGenState writes the module's genesis with RandomParams.
func RandomizedGenState(s *module.SimulationState) {
	gs := types.DefaultGenesisState()
	gs.Params = RandomParams(s.Rand, false)
	s.GenState[types.ModuleName] = s.Cdc.MustMarshalJSON(gs)
}

// MsgUpdateParamsFactory is governance changing the params (a proposal the simulation
// votes through; the GPU classes and the epoch stay).
func MsgUpdateParamsFactory() simsx.SimMsgFactoryFn[*types.MsgUpdateParams] {
	return func(_ context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUpdateParams) {
		return nil, &types.MsgUpdateParams{Authority: data.ModuleAccountAddress(reporter, "gov"), Params: RandomParams(data.Rand().Rand, true)}
	}
}

// MsgSubmitBeaconFactory puts a published drand round that a block in the window is bound
// to, and that is not on chain yet, on chain (a relayer's job: the simulated network's
// key signs it). Its adversaries: one time in ten a signature of another round (refused,
// ErrInvalidBeacon, else the simulation fails), one time in ten a round already on chain
// (ErrBeaconKnown) or, with drand off, any round (ErrDrandOff). A round that falls back
// before a submitter brings it leaves its blocks to the fallback.
func MsgSubmitBeaconFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgSubmitBeacon, simsx.SimDeliveryResultHandler) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		sdkCtx, r := sdk.UnwrapSDKContext(ctx), data.Rand()
		submitter := data.AnyAccount(reporter)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		d := p.Drand
		if len(d.PublicKey) == 0 {
			if r.Intn(10) != 0 {
				reporter.Skip("drand is off")
				return nil, nil, nil
			}
			msg := &types.MsgSubmitBeacon{Submitter: submitter.AddressBech32, Round: uint64(1 + r.Intn(1<<20)), Signature: make([]byte, 48)}
			return []simsx.SimAccount{submitter}, msg, refused(types.ErrDrandOff)
		}
		published := beacon.DrandRoundAt(d.GenesisTime, d.PeriodSeconds, sdkCtx.BlockTime())
		var wanted, known []uint64
		err = k.BlockRounds.Walk(ctx, nil, func(_ int64, br types.BlockRound) (bool, error) {
			has, err := k.DrandRounds.Has(ctx, br.Round)
			switch {
			case err != nil:
				return true, err
			case has:
				known = append(known, br.Round)
			case br.Round <= published && br.FallbackHeight >= sdkCtx.BlockHeight():
				wanted = append(wanted, br.Round)
			}
			return false, nil
		})
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		network := drandtest.New(d.GenesisTime, d.PeriodSeconds)
		// submit brings round with the signature of round signed
		submit := func(round, signed uint64, handle simsx.SimDeliveryResultHandler) ([]simsx.SimAccount, *types.MsgSubmitBeacon, simsx.SimDeliveryResultHandler) {
			sig, err := network.SignRound(signed)
			if err != nil {
				reporter.Skip(err.Error())
				return nil, nil, nil
			}
			return []simsx.SimAccount{submitter}, &types.MsgSubmitBeacon{Submitter: submitter.AddressBech32, Round: round, Signature: sig}, handle
		}
		switch roll := r.Intn(10); {
		case roll == 0 && len(wanted) > 0:
			round := wanted[r.Intn(len(wanted))]
			return submit(round, round+1, refused(types.ErrInvalidBeacon))
		case roll == 1 && len(known) > 0:
			round := known[r.Intn(len(known))]
			return submit(round, round, refused(types.ErrBeaconKnown))
		case len(wanted) == 0:
			reporter.Skip("no published round missing from the chain")
			return nil, nil, nil
		}
		// the oldest missing round most of the time (a relayer catching up), else any
		round := wanted[0]
		if r.Intn(4) == 0 {
			round = wanted[r.Intn(len(wanted))]
		}
		// (a round brought by an earlier operation of this block is known)
		return submit(round, round, simutil.Expect(types.ErrBeaconKnown))
	})
}

// refused expects the delivery to fail with want: a success is the attack working.
func refused(want error) simsx.SimDeliveryResultHandler {
	return func(err error) error {
		if err == nil {
			return fmt.Errorf("the chain accepted what it must refuse with %q", want.Error())
		}
		return simutil.Expect(want)(err)
	}
}

// MsgApproveNodeFactory is governance admitting a pending node (GOVERNED admission). A
// node no longer pending when the proposal passes makes its execution fail, which gov
// records; the chain stays as it was.
func MsgApproveNodeFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgApproveNode] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgApproveNode) {
		var pending []uint64
		_ = simutil.Newest(ctx, k.Nodes.Iterate, func(n types.Node) {
			if n.Status == types.NODE_STATUS_PENDING {
				pending = append(pending, n.Id)
			}
		})
		if len(pending) == 0 {
			reporter.Skip("no pending node")
			return nil, nil
		}
		id := pending[data.Rand().Intn(len(pending))]
		return nil, &types.MsgApproveNode{Authority: data.ModuleAccountAddress(reporter, "gov"), NodeId: id}
	}
}

// Operators lists the accounts whose bonded collateral covers gpus more GPUs, in address
// order (x/staking-slash; the app wires it).
type Operators func(ctx context.Context, gpus uint64) []sdk.AccAddress

// MsgRegisterNodeFactory registers a node of 1 to 4 GPUs for an account whose collateral
// covers them (one in ten tries any account: refused with ErrInsufficientCollateral, as
// the simulation expects).
func MsgRegisterNodeFactory(k keeper.Keeper, operators Operators) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgRegisterNode, simsx.SimDeliveryResultHandler) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		r := data.Rand()
		gpus := 1 + r.Intn(4)
		var op simsx.SimAccount
		if ops := operators(ctx, uint64(gpus)); len(ops) > 0 && r.Intn(10) != 0 {
			op = data.GetAccountbyAccAddr(reporter, ops[r.Intn(len(ops))])
		} else {
			op = data.AnyAccount(reporter)
		}
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		spec := RandomNodeSpec(r.Rand, p.GpuClasses[r.Intn(len(p.GpuClasses))], gpus)
		// a GPU already registered (the simulation after an import draws the same ids
		// again) is refused, as it must be
		return []simsx.SimAccount{op}, &types.MsgRegisterNode{Operator: op.AddressBech32, Spec: spec}, simutil.Expect(types.ErrInsufficientCollateral, types.ErrDuplicateGpu)
	})
}

// RandomNodeSpec is a node of gpus GPUs of class as the simulated operators register it:
// a region, endpoint, workloads, runtimes and ask at random, and one card in three in MIG
// mode with 1 to 3-slice instances (or none: offered whole).
func RandomNodeSpec(r *rand.Rand, class types.GpuClass, gpus int) types.NodeSpec {
	spec := types.NodeSpec{
		Region: []string{"eu-west", "us-east", "ap-south"}[r.Intn(3)], Endpoint: fmt.Sprintf("https://n%d.sim.example", r.Uint32()),
		Workloads:     []types.WorkloadClass{types.WORKLOAD_CLASS_TRAINING, types.WORKLOAD_CLASS_INFERENCE, types.WORKLOAD_CLASS_BATCH, types.WORKLOAD_CLASS_RENDERING}[:1+r.Intn(4)],
		Runtimes:      []types.Runtime{types.RUNTIME_BUILTIN, types.RUNTIME_CONTAINER, types.RUNTIME_PROCESS}[:1+r.Intn(3)],
		AskPerGpuHour: sdk.NewInt64Coin(sdk.DefaultBondDenom, int64(100_000+r.Intn(2_000_000))), ClaimedGflops: uint64(1 + r.Intn(1000)),
	}
	if r.Intn(2) == 0 {
		spec.DiskMibPerGpu = uint64(1+r.Intn(4)) << 10 // 1 to 4 GiB a GPU offered
	}
	for range gpus {
		g := types.GpuInfo{
			Model: "NVIDIA " + class.ModelSubstrings[0], Uuid: fmt.Sprintf("GPU-%016x", r.Uint64()), MemoryMib: class.MinMemoryMib, ComputeCapability: "8.0",
		}
		if r.Intn(3) == 0 {
			// a card in MIG mode: instances of 1 to 3 slices of its 7, each its share of
			// the memory
			g.MigCapable, g.MigSlices = true, 7
			for left := uint32(7); left > 0 && r.Intn(4) != 0; {
				s := min(uint32(1+r.Intn(3)), left)
				left -= s
				g.MigInstances = append(g.MigInstances, types.MigInstance{
					Uuid: fmt.Sprintf("MIG-%016x", r.Uint64()), Profile: fmt.Sprintf("%dg.%dgb", s, 5*s), MemoryMib: g.MemoryMib * uint64(s) / 8, Slices: s,
				})
			}
			if len(g.MigInstances) == 0 {
				g.MigSlices = 0 // MIG capable, offered whole
			}
		}
		spec.Gpus = append(spec.Gpus, g)
	}
	return spec
}

// MsgDeactivateNodeFactory takes a simulated operator's active node out of service, half
// the time draining it (a node with work in flight goes DRAINING and is deactivated when
// the market's last task on it ends); without drain a node with work in flight, and either
// way one with a challenge awaiting its reveal, is refused (ErrNodeBusy), as the
// simulation expects.
func MsgDeactivateNodeFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgDeactivateNode, simsx.SimDeliveryResultHandler) {
		n, op, ok := pickNode(ctx, k, data, reporter, types.NODE_STATUS_ACTIVE)
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{op}, &types.MsgDeactivateNode{Operator: n.Operator, NodeId: n.Id, Drain: data.Rand().Bool()}, simutil.Expect(types.ErrNodeBusy)
	})
}

// MsgReactivateNodeFactory puts a simulated operator's inactive node back (refused when
// its collateral no longer covers the GPUs: ErrInsufficientCollateral, expected), or ends
// a draining node's drain.
func MsgReactivateNodeFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgReactivateNode, simsx.SimDeliveryResultHandler) {
		want := types.NODE_STATUS_INACTIVE
		if data.Rand().Intn(4) == 0 {
			want = types.NODE_STATUS_DRAINING
		}
		n, op, ok := pickNode(ctx, k, data, reporter, want)
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{op}, &types.MsgReactivateNode{Operator: n.Operator, NodeId: n.Id}, simutil.Expect(types.ErrInsufficientCollateral)
	})
}

// pickNode draws one of the newest nodes in status want whose operator is a simulated
// account.
func pickNode(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, want types.NodeStatus) (types.Node, simsx.SimAccount, bool) {
	var found []types.Node
	_ = simutil.Newest(ctx, k.Nodes.Iterate, func(n types.Node) {
		if n.Status == want && data.HasAccount(n.Operator) {
			found = append(found, n)
		}
	})
	if len(found) == 0 {
		reporter.Skipf("no %s node of a simulated operator", want)
		return types.Node{}, simsx.SimAccount{}, false
	}
	n := found[data.Rand().Intn(len(found))]
	return n, data.GetAccount(reporter, n.Operator), !reporter.IsSkipped()
}

// Lazy says whether a simulated operator answers its challenges with made-up numbers (one
// in four, by its address): its reveals fail verification and it misses the challenge.
func Lazy(operator sdk.AccAddress) bool { return len(operator) > 0 && operator[0]%4 == 1 }

// Answers are the simulated providers' GEMM solutions (PoCP challenges, BUILTIN_GEMM tasks
// and pool units), by the GEMM's seed and shape: the commit and the reveal come in
// different operations, and solving once is enough.
type Answers struct {
	mu     sync.Mutex
	bySeed map[string]*Answer
}

// Answer is a solved (or made-up) GEMM under its Merkle tree.
type Answer struct {
	s    []int32
	tree *pocp.Tree
	n    uint32
}

// NewAnswers is an empty store of answers.
func NewAnswers() *Answers { return &Answers{bySeed: map[string]*Answer{}} }

// Solve is a provider's answer to c: the exact solution, or, for a lazy provider,
// zeros, committed under a well-formed Merkle tree.
func (a *Answers) Solve(c pocp.Challenge, lazy bool) *Answer {
	key := fmt.Sprintf("%x/%d/%d/%t", c.Seed, c.N, c.R, lazy)
	a.mu.Lock()
	defer a.mu.Unlock()
	if got, ok := a.bySeed[key]; ok {
		return got
	}
	s := make([]int32, int(c.N)*int(c.N))
	if !lazy {
		// the blocked solver on one worker: the reference's answer (pocp's tests hold the
		// two equal), 12-16x sooner; the reference took a quarter of a simulation's time
		var err error
		if s, err = pocp.Solve(context.Background(), c, 1); err != nil {
			panic(fmt.Sprintf("simulation: solve a valid challenge: %v", err))
		}
	}
	got := &Answer{s: s, tree: pocp.BuildTree(s, c.N, 1), n: c.N}
	if len(a.bySeed) > 64 {
		clear(a.bySeed)
	}
	a.bySeed[key] = got
	return got
}

// Root is the answer's Merkle root (what a provider commits).
func (a *Answer) Root() []byte {
	r := a.tree.Root()
	return r[:]
}

// Proofs open the chunks that hold positions (what a reveal carries).
func (a *Answer) Proofs(positions []pocp.Position) []types.ChunkProof {
	return types.ChunkProofs(a.tree, a.s, a.n, positions)
}

// challengeGemm is a PoCP challenge's GEMM.
func challengeGemm(c types.Challenge) pocp.Challenge {
	pc := pocp.Challenge{N: c.N, R: c.R}
	copy(pc.Seed[:], c.Seed)
	return pc
}

// MsgCommitChallengeFactory commits a simulated operator's answer to an issued challenge:
// the root of its (honest or lazy) solution. A commitment after the deadline (the
// simulator's blocks are far apart) is refused with ErrCommitTooLate, as expected.
func MsgCommitChallengeFactory(k keeper.Keeper, answers *Answers) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgCommitChallenge, simsx.SimDeliveryResultHandler) {
		c, op, ok := pickChallenge(ctx, k, data, reporter, types.CHALLENGE_STATUS_ISSUED, func(types.Challenge) bool { return true })
		if !ok {
			return nil, nil, nil
		}
		ans := answers.Solve(challengeGemm(c), Lazy(op.Address))
		return []simsx.SimAccount{op}, &types.MsgCommitChallenge{Operator: c.Operator, ChallengeId: c.Id, Root: ans.Root()}, simutil.Expect(types.ErrCommitTooLate)
	})
}

// MsgRevealChallengeFactory opens the chunks the chain samples from the beacon value of
// the block after the commitment. An honest operator passes (its node's power sample is
// recorded); a lazy one is refused with ErrWrongEntry; a reveal before the sampling block
// is committed or after the deadline is refused too, as expected.
func MsgRevealChallengeFactory(k keeper.Keeper, answers *Answers) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgRevealChallenge, simsx.SimDeliveryResultHandler) {
		// nine times in ten, a challenge in its reveal window; else any (refused too early
		// or too late, as expected)
		height, anytime := sdk.UnwrapSDKContext(ctx).BlockHeight(), data.Rand().Intn(10) == 0
		c, op, ok := pickChallenge(ctx, k, data, reporter, types.CHALLENGE_STATUS_COMMITTED, func(c types.Challenge) bool {
			return anytime || (c.CommitHeight+1 < height && height <= c.RevealDeadlineHeight)
		})
		if !ok {
			return nil, nil, nil
		}
		lazy := Lazy(op.Address)
		expect := []error{types.ErrRevealTooEarly, types.ErrRevealTooLate, types.ErrBeaconUnavailable}
		if lazy {
			expect = append(expect, types.ErrWrongEntry)
		}
		value, _, _, err := k.BeaconValue(ctx, c.CommitHeight+1)
		if err != nil {
			reporter.Skipf("challenge %d: sampling block's beacon value: %s", c.Id, err)
			return nil, nil, nil
		}
		positions := pocp.SamplePositions(pocp.SampleSeed(value, c.Id), c.N, int(c.Samples))
		msg := &types.MsgRevealChallenge{Operator: c.Operator, ChallengeId: c.Id, Proofs: answers.Solve(challengeGemm(c), lazy).Proofs(positions)}
		return []simsx.SimAccount{op}, msg, func(err error) error {
			if err == nil && lazy {
				return errors.New("a made-up answer passed PoCP verification")
			}
			return simutil.Expect(expect...)(err)
		}
	})
}

// pickChallenge draws one of the newest open challenges in status want, accepted by ok,
// whose operator is a simulated account.
func pickChallenge(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, want types.ChallengeStatus, ok func(types.Challenge) bool) (types.Challenge, simsx.SimAccount, bool) {
	var found []types.Challenge
	_ = simutil.Newest(ctx, k.Challenges.Iterate, func(c types.Challenge) {
		if c.Status == want && data.HasAccount(c.Operator) && ok(c) {
			found = append(found, c)
		}
	})
	if len(found) == 0 {
		reporter.Skipf("no %s challenge of a simulated operator", want)
		return types.Challenge{}, simsx.SimAccount{}, false
	}
	c := found[data.Rand().Intn(len(found))]
	return c, data.GetAccount(reporter, c.Operator), !reporter.IsSkipped()
}

// MsgUpdateNodeFactory changes an active node's ask, region and endpoint and, one time in
// four, its inventory (a GPU more, or any one of its GPUs lost, which on a node with MIG
// renumbers the devices after it): refused when the node's work in flight would not
// survive it (ErrNodeBusy) or when the collateral does not cover the new GPU
// (ErrInsufficientCollateral), as expected.
func MsgUpdateNodeFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUpdateNode, simsx.SimDeliveryResultHandler) {
		n, op, ok := pickNode(ctx, k, data, reporter, types.NODE_STATUS_ACTIVE)
		if !ok {
			return nil, nil, nil
		}
		r := data.Rand()
		spec := types.NodeSpec{
			Gpus: append([]types.GpuInfo(nil), n.Gpus...), Workloads: n.Workloads, Runtimes: n.Runtimes, ClaimedGflops: n.ClaimedGflops,
			Region: []string{"eu-west", "us-east", "ap-south"}[r.Intn(3)], Endpoint: fmt.Sprintf("https://n%d.sim.example", r.Uint32()),
			AskPerGpuHour: sdk.NewInt64Coin(n.AskPerGpuHour.Denom, int64(100_000+r.Intn(2_000_000))),
			DiskMibPerGpu: []uint64{0, n.DiskMibPerGpu, 4 << 10}[r.Intn(3)],
		}
		if r.Intn(4) == 0 {
			if len(spec.Gpus) > 1 && r.Intn(2) == 0 {
				lost := r.Intn(len(spec.Gpus))
				spec.Gpus = slices.Delete(spec.Gpus, lost, lost+1)
			} else {
				g := spec.Gpus[0]
				g.Uuid = fmt.Sprintf("GPU-%016x", r.Uint64())
				g.MigInstances = slices.Clone(g.MigInstances)
				for i := range g.MigInstances {
					g.MigInstances[i].Uuid = fmt.Sprintf("MIG-%016x", r.Uint64())
				}
				spec.Gpus = append(spec.Gpus, g)
			}
		}
		return []simsx.SimAccount{op}, &types.MsgUpdateNode{Operator: n.Operator, NodeId: n.Id, Spec: spec}, simutil.Expect(types.ErrNodeBusy, types.ErrInsufficientCollateral, types.ErrDuplicateGpu)
	})
}

// BalanceKeeper reads an account's balance of a denom.
type BalanceKeeper interface {
	GetBalance(ctx context.Context, addr sdk.AccAddress, denom string) sdk.Coin
}

// ugflToMove is what a provider tries to move: all the ugfl it holds, or 1 ugfl when it
// holds none (the send is refused before any balance is looked at).
func ugflToMove(ctx context.Context, bk BalanceKeeper, from sdk.AccAddress) sdk.Coins {
	held := bk.GetBalance(ctx, from, types.Denom)
	if !held.IsPositive() {
		held = sdk.NewInt64Coin(types.Denom, 1)
	}
	return sdk.NewCoins(held)
}

// ugflSender is the provider that tries to move ugfl: three times in four one that holds
// some (the genesis providers' nodes have verified power, app/sim_genesis_test.go), else
// any account with a spendable balance.
func ugflSender(ctx context.Context, bk BalanceKeeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) simsx.SimAccount {
	r := data.Rand()
	if r.Intn(4) != 0 {
		var holders []sdk.AccAddress
		for _, a := range data.AllAccounts() {
			if bk.GetBalance(ctx, a.Address, types.Denom).IsPositive() {
				holders = append(holders, a.Address)
			}
		}
		if len(holders) > 0 {
			return data.GetAccountbyAccAddr(reporter, holders[r.Intn(len(holders))])
		}
	}
	return data.AnyAccount(reporter, simsx.WithSpendableBalance())
}

// MsgSendUgflFactory is a provider trying to sell its verified power: a bank send of its
// ugfl to another account. GFL is not transferable: x/bank refuses the denom
// (send_enabled false in every genesis), and a send that went through is the attack
// working.
func MsgSendUgflFactory(bk BalanceKeeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *banktypes.MsgSend, simsx.SimDeliveryResultHandler) {
		from := ugflSender(ctx, bk, data, reporter)
		to := data.AnyAccount(reporter, simsx.ExcludeAccounts(from))
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		msg := banktypes.NewMsgSend(from.Address, to.Address, ugflToMove(ctx, bk, from.Address))
		return []simsx.SimAccount{from}, msg, refused(banktypes.ErrSendDisabled)
	})
}

// MsgFundCommunityPoolUgflFactory is a provider trying to move its ugfl by a path that
// is not a bank send: into the community pool, through x/distribution's module transfer.
// The send restriction refuses any move of ugfl that is not x/gfl's own mint or burn.
func MsgFundCommunityPoolUgflFactory(bk BalanceKeeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *distrtypes.MsgFundCommunityPool, simsx.SimDeliveryResultHandler) {
		from := ugflSender(ctx, bk, data, reporter)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		msg := &distrtypes.MsgFundCommunityPool{Depositor: from.AddressBech32, Amount: ugflToMove(ctx, bk, from.Address)}
		return []simsx.SimAccount{from}, msg, refused(types.ErrNotTransferable)
	})
}
