// Package simulation is x/market in the app's simulations (app/sim_test.go): random
// genesis windows, clients that submit and cancel jobs, and providers that run the task
// lifecycle (ack, heartbeat, commit, reveal) honestly or lazily, on time or late — the
// random weights and the chain's own timeouts make some late or never.
package simulation

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand" // nolint:determinism // simulation only: the simulator's seeded *rand.Rand draws the operations, never in the state machine
	"time"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/flopsnet/flops/internal/simutil"
	gflsim "github.com/flopsnet/flops/x/gfl/simulation"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// RandomParams are the defaults with short windows and timeouts (a simulation's blocks
// are few) and a random assignment rate.
func RandomParams(r *rand.Rand, denom string) types.Params {
	p := types.DefaultParams()
	p.Denom = denom
	p.AckTimeoutBlocks = uint64(2 + r.Intn(20))
	p.HeartbeatTimeoutBlocks = uint64(3 + r.Intn(30))
	p.RevealTimeoutBlocks = uint64(2 + r.Intn(30))
	p.AuctionWindowBlocks = uint64(1 + r.Intn(20))
	p.ChallengeWindowBlocks = uint64(2 + r.Intn(30))
	p.PoolRevealTimeoutBlocks = uint64(2 + r.Intn(30))
	p.MaxAssignPerBlock = uint32(1 + r.Intn(200))
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("market simulation params: %v", err))
	}
	return p
}

// RandomizedGenState writes the module's genesis with RandomParams.
func RandomizedGenState(s *module.SimulationState) {
	gs := types.DefaultGenesisState()
	gs.Params = RandomParams(s.Rand, s.BondDenom)
	s.GenState[types.ModuleName] = s.Cdc.MustMarshalJSON(gs)
}

// MsgUpdateParamsFactory is governance changing the params mid-run (windows, timeouts,
// the assignment rate), as a proposal the simulation votes through.
func MsgUpdateParamsFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgUpdateParams] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgUpdateParams) {
		cur, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		return nil, &types.MsgUpdateParams{Authority: data.ModuleAccountAddress(reporter, "gov"), Params: RandomParams(data.Rand().Rand, cur.Denom)}
	}
}

// MsgSubmitJobFactory submits a job a simulated client can pay for: a BUILTIN GEMM job
// without verification or spot-checked on chain (BUILTIN_GEMM), a replicated EXACT
// PROCESS job, or a single-replica EXACT one secured by audits; ASSIGN or AUCTION.
func MsgSubmitJobFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgSubmitJob] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgSubmitJob) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil
		}
		r := data.Rand()
		now := sdk.UnwrapSDKContext(ctx).BlockTime()
		spec := types.JobSpec{
			Workload:           []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_TRAINING, gfltypes.WORKLOAD_CLASS_INFERENCE, gfltypes.WORKLOAD_CLASS_BATCH}[r.Intn(3)],
			TaskCount:          uint32(1 + r.Intn(5)),
			Replicas:           1,
			MaxPricePerTask:    sdk.NewInt64Coin(p.Denom, int64(1_000_000+r.Intn(200_000_000))),
			MaxDuration:        time.Duration(6+r.Intn(66)) * time.Hour, // the simulator's blocks are up to 2.8 h apart
			PriorityTip:        sdk.NewInt64Coin(p.Denom, int64(r.Intn(100_000))),
			Mode:               types.ALLOCATION_MODE_ASSIGN,
			VerificationBudget: sdk.NewInt64Coin(p.Denom, 0),
		}
		spec.Deadline = now.Add(spec.MaxDuration).Add(time.Duration(1+r.Intn(240)) * time.Hour)
		if r.Intn(10) < 3 {
			spec.Mode = types.ALLOCATION_MODE_AUCTION
		}
		// MIG: tasks that may run on instances (several of one card, sometimes), of 1 or 2
		// GPUs
		spec.Requirements.GpuCount = uint32(1 + r.Intn(2))
		if r.Intn(2) == 0 {
			spec.Requirements.SharedGpuOk = true
			spec.Requirements.MultiSliceOk = r.Intn(3) == 0
		}
		// a job in four names its disk, 1 to 4 GiB a GPU: it runs only on nodes that offer it
		if r.Intn(4) == 0 {
			spec.Requirements.DiskMibPerGpu = uint64(1+r.Intn(4)) << 10
		}
		switch r.Intn(4) {
		case 0:
			spec.Runtime, spec.Image, spec.Builtin = types.RUNTIME_BUILTIN, types.BuiltinGemm, types.BuiltinArgs{GemmN: 256, GemmR: 1}
			spec.Verification, spec.Replicas = types.VERIFICATION_CLASS_NONE, uint32(1+r.Intn(2))
		case 1:
			spec.Runtime, spec.Image, spec.Builtin = types.RUNTIME_BUILTIN, types.BuiltinGemm, types.BuiltinArgs{GemmN: 256, GemmR: uint32(1 + r.Intn(2))}
			spec.Verification = types.VERIFICATION_CLASS_BUILTIN_GEMM
			// a client challenge's committee recomputes the GEMM
			spec.VerificationBudget = sdk.NewCoin(p.Denom, spec.MaxPricePerTask.Amount.MulRaw(int64(spec.TaskCount)*int64(p.CommitteeSize)))
		case 2:
			spec.Runtime, spec.Command = gfltypes.RUNTIME_PROCESS, []string{"python3", "train.py"}
			spec.Verification, spec.Replicas = types.VERIFICATION_CLASS_EXACT, uint32(2+r.Intn(2))
		default:
			spec.Runtime, spec.Command = gfltypes.RUNTIME_PROCESS, []string{"python3", "train.py"}
			spec.Verification = types.VERIFICATION_CLASS_EXACT
			need := spec.MaxPricePerTask.Amount.MulRaw(int64(spec.TaskCount)).MulRaw(1 + int64(p.CommitteeSize))
			spec.VerificationBudget = sdk.NewCoin(p.Denom, need)
		}
		if spec.Replicas > p.MaxReplicas {
			spec.Replicas = p.MaxReplicas
		}
		owner := data.AnyAccount(reporter, simsx.WithLiquidBalanceGTE(sdk.NewCoin(p.Denom, spec.Budget())))
		if reporter.IsSkipped() {
			return nil, nil
		}
		if !owner.LiquidBalance().BlockAmount(sdk.NewCoin(p.Denom, spec.Budget())) {
			reporter.Skip("owner cannot pay the escrow")
			return nil, nil
		}
		return []simsx.SimAccount{owner}, &types.MsgSubmitJob{Owner: owner.AddressBech32, Spec: spec}
	}
}

// MsgCancelJobFactory cancels a simulated client's unfinished job.
func MsgCancelJobFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgCancelJob] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgCancelJob) {
		var open []types.Job
		err := simutil.Newest(ctx, k.Jobs.Iterate, func(j types.Job) {
			if (j.Status == types.JOB_STATUS_ACTIVE || j.Status == types.JOB_STATUS_BIDDING) && data.HasAccount(j.Owner) {
				open = append(open, j)
			}
		})
		if err != nil || len(open) == 0 {
			reporter.Skip("no open job of a simulated client")
			return nil, nil
		}
		j := open[data.Rand().Intn(len(open))]
		owner := data.GetAccount(reporter, j.Owner)
		return []simsx.SimAccount{owner}, &types.MsgCancelJob{Owner: j.Owner, JobId: j.Id}
	}
}

// MsgAckTaskFactory acks a task assigned to a simulated provider's node (late when the
// chain's ack timeout came first: the task was taken back and the ack is refused).
func MsgAckTaskFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgAckTask] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgAckTask) {
		t, prov, ok := pickTask(ctx, k, data, reporter, types.TASK_STATUS_ASSIGNED)
		if !ok {
			return nil, nil
		}
		return []simsx.SimAccount{prov}, &types.MsgAckTask{Provider: t.Provider, TaskId: t.Id}
	}
}

// MsgHeartbeatFactory keeps a node's running tasks alive, reporting progress on one.
func MsgHeartbeatFactory(k keeper.Keeper) simsx.SimMsgFactoryFn[*types.MsgHeartbeat] {
	return func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgHeartbeat) {
		t, prov, ok := pickTask(ctx, k, data, reporter, types.TASK_STATUS_RUNNING)
		if !ok {
			return nil, nil
		}
		progress := []types.TaskProgress{{TaskId: t.Id, Progress: fmt.Sprintf("step %d", data.Rand().Intn(1000))}}
		return []simsx.SimAccount{prov}, &types.MsgHeartbeat{Provider: t.Provider, NodeId: t.NodeId, Progress: progress}
	}
}

// MsgCommitResultFactory commits a running task's result: an honest provider's root is
// the job's (replicas agree; a BUILTIN_GEMM job's is the GEMM's Merkle root), a lazy
// provider's its own (for BUILTIN_GEMM, zeros under a well-formed tree). A commit after
// the run deadline is refused (ErrDeadlinePassed), which the simulation expects of a late
// one.
func MsgCommitResultFactory(k keeper.Keeper, answers *gflsim.Answers) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgCommitResult, simsx.SimDeliveryResultHandler) {
		t, prov, ok := pickTask(ctx, k, data, reporter, types.TASK_STATUS_RUNNING)
		if !ok {
			return nil, nil, nil
		}
		job, err := k.GetJob(ctx, t.JobId)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		c := types.Commitment(taskRoot(answers, job, t, prov.Address), Salt(t, prov.Address), prov.Address)
		return []simsx.SimAccount{prov}, &types.MsgCommitResult{Provider: t.Provider, TaskId: t.Id, Commitment: c}, simutil.Expect(types.ErrDeadlinePassed)
	})
}

// MsgRevealResultFactory reveals a committed result (refused while the task's group has
// not all committed, or before the block after the commitment gives a BUILTIN_GEMM
// reveal its samples: ErrRevealNotOpen, expected). A BUILTIN_GEMM reveal opens the sampled
// entries; a lazy provider's made-up GEMM must be refused (ErrWrongResult), else the
// simulation fails.
func MsgRevealResultFactory(k keeper.Keeper, answers *gflsim.Answers) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgRevealResult, simsx.SimDeliveryResultHandler) {
		t, prov, ok := pickTask(ctx, k, data, reporter, types.TASK_STATUS_COMMITTED)
		if !ok {
			return nil, nil, nil
		}
		job, err := k.GetJob(ctx, t.JobId)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		msg := &types.MsgRevealResult{
			Provider: t.Provider, TaskId: t.Id, ResultRoot: taskRoot(answers, job, t, prov.Address), Salt: Salt(t, prov.Address),
			OutputUri: fmt.Sprintf("https://sim.example/out/%d", t.Id), Usage: types.Usage{GpuSeconds: uint64(1 + data.Rand().Intn(3600))},
		}
		if job.Spec.Verification != types.VERIFICATION_CLASS_BUILTIN_GEMM {
			return []simsx.SimAccount{prov}, msg, simutil.Expect(types.ErrRevealNotOpen)
		}
		c := job.GemmChallenge(t.Index)
		if positions, err := k.GemmPositions(ctx, c, t.CommitHeight, types.DomainGemmSample, t.Id); err == nil {
			msg.GemmProofs = answers.Solve(c, Lazy(prov.Address)).Proofs(positions)
		}
		return []simsx.SimAccount{prov}, msg, gemmChecked(Lazy(prov.Address))
	})
}

// taskRoot is the result root a simulated provider commits for t.
func taskRoot(answers *gflsim.Answers, job types.Job, t types.Task, provider sdk.AccAddress) []byte {
	if job.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		return answers.Solve(job.GemmChallenge(t.Index), Lazy(provider)).Root()
	}
	return ResultRoot(t, provider)
}

// gemmChecked is what a BUILTIN_GEMM reveal may meet: too early (its samples are not
// drawn yet) and, for a lazy provider, its made-up entries refused; a lazy reveal that
// passes is the spot check failing.
func gemmChecked(lazy bool) simsx.SimDeliveryResultHandler {
	return func(err error) error {
		if lazy {
			if err == nil {
				return errors.New("a made-up GEMM passed the chain's spot check")
			}
			return simutil.Expect(types.ErrWrongResult, types.ErrRevealNotOpen)(err)
		}
		return simutil.Expect(types.ErrRevealNotOpen)(err)
	}
}

// Lazy reports whether a simulated provider makes its results up: one account in four,
// by address, so that the same provider is lazy in every task.
func Lazy(provider sdk.AccAddress) bool { return len(provider) > 0 && provider[0]%4 == 0 }

// ResultRoot is the root a simulated provider commits for t: the job's shard's for an
// honest provider (every honest replica agrees), its own for a lazy one.
func ResultRoot(t types.Task, provider sdk.AccAddress) []byte {
	h := sha256.New()
	if Lazy(provider) {
		h.Write([]byte("flops/sim lazy"))
		h.Write(provider)
		h.Write(binary.BigEndian.AppendUint64(nil, t.Id))
	} else {
		h.Write([]byte("flops/sim result"))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, t.JobId))
	h.Write(binary.BigEndian.AppendUint32(nil, t.Index))
	return h.Sum(nil)
}

// Salt is a simulated provider's salt for t (derived, so that nothing is kept between
// the commit and the reveal).
func Salt(t types.Task, provider sdk.AccAddress) []byte {
	h := sha256.New()
	h.Write([]byte("flops/sim salt"))
	h.Write(provider)
	h.Write(binary.BigEndian.AppendUint64(nil, t.Id))
	return h.Sum(nil)
}

// pickTask draws one of the newest tasks in status want whose provider is a simulated
// account.
func pickTask(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, want types.TaskStatus) (types.Task, simsx.SimAccount, bool) {
	var found []types.Task
	err := simutil.Newest(ctx, k.Tasks.Iterate, func(t types.Task) {
		if t.Status == want && t.Provider != "" && data.HasAccount(t.Provider) {
			found = append(found, t)
		}
	})
	if err != nil || len(found) == 0 {
		reporter.Skipf("no %s task of a simulated provider", want)
		return types.Task{}, simsx.SimAccount{}, false
	}
	t := found[data.Rand().Intn(len(found))]
	return t, data.GetAccount(reporter, t.Provider), !reporter.IsSkipped()
}
