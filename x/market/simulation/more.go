package simulation

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/simutil"
	gflsim "github.com/flopsnet/flops/x/gfl/simulation"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Bids, checkpoints, failure reports, challenges and pools: the rest of what clients and
// providers sign. Each factory draws among the newest records of simulated accounts and
// names the refusals a rightful actor may meet by its timing or its state.

// MsgPlaceBidFactory bids one of a simulated provider's nodes on an open auction, at a
// price up to the job's max (refused when the node does not meet the job's requirements,
// cannot cover the exposure, or already bid).
func MsgPlaceBidFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgPlaceBid, simsx.SimDeliveryResultHandler) {
		job, ok := pickJob(ctx, k, data, reporter, func(j types.Job) bool { return j.Status == types.JOB_STATUS_BIDDING }, false)
		if !ok {
			return nil, nil, nil
		}
		slot, prov, ok := pickSlot(ctx, k, data, reporter, func(types.NodeSlot) bool { return true })
		if !ok {
			return nil, nil, nil
		}
		r := data.Rand()
		full, err := k.GetJob(ctx, job.Id)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		price := sdkmath.NewInt(1 + r.Int63n(full.Spec.MaxPricePerTask.Amount.Int64()))
		qty := uint32(1 + r.Intn(int(full.Spec.TotalTasks())))
		msg := &types.MsgPlaceBid{Provider: slot.Operator, JobId: job.Id, NodeId: slot.NodeId, Price: price, Quantity: qty}
		return []simsx.SimAccount{prov}, msg, simutil.Expect(types.ErrNodeNotEligible, types.ErrDuplicateBid, types.ErrInvalidBid, types.ErrInsufficientFunds)
	})
}

// MsgWithdrawBidFactory withdraws a simulated provider's open bid before its auction
// closes; refused in a full auction, whose bids are binding, as expected.
func MsgWithdrawBidFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgWithdrawBid, simsx.SimDeliveryResultHandler) {
		bids, err := simutil.Matching(ctx, k.Bids.Walk, func(b types.Bid) bool {
			return b.Status == types.BID_STATUS_OPEN && data.HasAccount(b.Provider)
		})
		if err != nil || len(bids) == 0 {
			reporter.Skip("no open bid of a simulated provider")
			return nil, nil, nil
		}
		b := bids[data.Rand().Intn(len(bids))]
		prov := data.GetAccount(reporter, b.Provider)
		return []simsx.SimAccount{prov}, &types.MsgWithdrawBid{Provider: b.Provider, JobId: b.JobId, NodeId: b.NodeId}, simutil.Expect(types.ErrInvalidBid, types.ErrBidBinding)
	})
}

// MsgCheckpointFactory records a checkpoint of a running task.
func MsgCheckpointFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgCheckpoint, simsx.SimDeliveryResultHandler) {
		t, prov, ok := pickTask(ctx, k, data, reporter, types.TASK_STATUS_RUNNING)
		if !ok {
			return nil, nil, nil
		}
		sum := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("flops/sim checkpoint"), data.Rand().Uint64()))
		msg := &types.MsgCheckpoint{Provider: t.Provider, TaskId: t.Id, Sha256: hex.EncodeToString(sum[:]), Uri: fmt.Sprintf("https://sim.example/ckpt/%d/%x", t.Id, sum[:4])}
		return []simsx.SimAccount{prov}, msg, simutil.Expect(types.ErrDeadlinePassed)
	})
}

// MsgReportFailureFactory reports that a running task failed on its node (the task runs
// again elsewhere to confirm the report); refused for a verification task, after the run
// deadline, or when the report's hold is more than the run's and the provider's collateral
// does not cover the difference (failure_penalty_multiple above result_penalty_multiple),
// as expected.
func MsgReportFailureFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgReportFailure, simsx.SimDeliveryResultHandler) {
		t, prov, ok := pickTask(ctx, k, data, reporter, types.TASK_STATUS_RUNNING)
		if !ok {
			return nil, nil, nil
		}
		r := data.Rand()
		root := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("flops/sim log"), t.Id))
		msg := &types.MsgReportFailure{
			Provider: t.Provider, TaskId: t.Id, Reason: types.FailureReason(1 + r.Intn(5)), ExitCode: int32(r.Intn(256)),
			LogRoot: root[:], Detail: "simulated failure",
		}
		return []simsx.SimAccount{prov}, msg, simutil.Expect(types.ErrInvalidFailure, types.ErrDeadlinePassed, sstypes.ErrExposureLimit)
	})
}

// MsgReleaseTaskFactory: a simulated provider gives back an assigned or running task (it
// lapses at once: slashed as abandoned, the task to another node).
func MsgReleaseTaskFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgReleaseTask, simsx.SimDeliveryResultHandler) {
		want := types.TASK_STATUS_ASSIGNED
		if data.Rand().Intn(2) == 0 {
			want = types.TASK_STATUS_RUNNING
		}
		t, prov, ok := pickTask(ctx, k, data, reporter, want)
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{prov}, &types.MsgReleaseTask{Provider: t.Provider, TaskId: t.Id, Reason: "simulated GPU failure"}, nil
	})
}

// MsgChallengeFactory: a simulated client challenges a verified result of its job in the
// challenge window (a committee reruns it); refused when the job's verification budget
// cannot pay a committee or the client cannot post the bond.
func MsgChallengeFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgChallenge, simsx.SimDeliveryResultHandler) {
		// nine times in ten a result the job's verification budget can dispute
		any := data.Rand().Intn(10) == 0
		var found []types.Task
		err := simutil.Newest(ctx, k.Tasks.Iterate, func(t types.Task) {
			if t.Status != types.TASK_STATUS_VERIFIED || t.DisputeId != 0 || t.Role != types.TASK_ROLE_PRIMARY {
				return
			}
			if j, err := k.GetJob(ctx, t.JobId); any || (err == nil && j.Spec.Verification != types.VERIFICATION_CLASS_NONE && j.VerificationLeft.IsPositive()) {
				found = append(found, t)
			}
		})
		if err != nil || len(found) == 0 {
			reporter.Skip("no verified task")
			return nil, nil, nil
		}
		t := found[data.Rand().Intn(len(found))]
		job, err := k.GetJob(ctx, t.JobId)
		if err != nil || !data.HasAccount(job.Owner) {
			reporter.Skip("the task's job has no simulated owner")
			return nil, nil, nil
		}
		owner := data.GetAccount(reporter, job.Owner)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		return []simsx.SimAccount{owner}, &types.MsgChallenge{Owner: job.Owner, TaskId: t.Id}, simutil.Expect(types.ErrInsufficientFunds, types.ErrNotChallengeable)
	})
}

// MsgCreatePoolFactory opens a pool for continuous inference or batch units, funded for 1
// to 50 units: a NONE pool of a PROCESS service, or (one in three) a BUILTIN GEMM pool
// whose units are spot-checked on chain.
func MsgCreatePoolFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgCreatePool, simsx.SimDeliveryResultHandler) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		r := data.Rand()
		price := sdkmath.NewInt(int64(100_000 + r.Intn(5_000_000)))
		spec := types.PoolSpec{
			Workload: []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_INFERENCE, gfltypes.WORKLOAD_CLASS_BATCH}[r.Intn(2)],
			Runtime:  gfltypes.RUNTIME_PROCESS, Command: []string{"python3", "serve.py"},
			Verification: types.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewCoin(p.Denom, price),
			Budget:       sdk.NewCoin(p.Denom, price.MulRaw(int64(1+r.Intn(50)))),
			MaxProviders: uint32(1 + r.Intn(int(min(p.MaxPoolProviders, 8)))), UnitMaxDuration: time.Duration(1+r.Intn(60)) * time.Minute,
		}
		if r.Intn(3) == 0 {
			spec.Runtime, spec.Command, spec.Image = gfltypes.RUNTIME_BUILTIN, nil, types.BuiltinGemm
			spec.Builtin, spec.Verification = types.BuiltinArgs{GemmN: 256, GemmR: 1}, types.VERIFICATION_CLASS_BUILTIN_GEMM
		}
		owner := data.AnyAccount(reporter, simsx.WithLiquidBalanceGTE(spec.Budget))
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		if !owner.LiquidBalance().BlockAmount(spec.Budget) {
			reporter.Skip("owner cannot fund the pool")
			return nil, nil, nil
		}
		return []simsx.SimAccount{owner}, &types.MsgCreatePool{Owner: owner.AddressBech32, Spec: spec}, simutil.Expect(types.ErrInvalidPool)
	})
}

// MsgJoinPoolFactory joins a simulated provider's node to an open pool (refused when full,
// already a member, or the node is not eligible).
func MsgJoinPoolFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgJoinPool, simsx.SimDeliveryResultHandler) {
		pool, ok := pickPool(ctx, k, data, reporter, false)
		if !ok {
			return nil, nil, nil
		}
		// nine times in ten a node that serves the pool's workload and runtime
		any := data.Rand().Intn(10) == 0
		slot, prov, ok := pickSlot(ctx, k, data, reporter, func(s types.NodeSlot) bool {
			return any || (slices.Contains(s.Workloads, pool.Spec.Workload) && slices.Contains(s.Runtimes, pool.Spec.Runtime))
		})
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{prov}, &types.MsgJoinPool{Provider: slot.Operator, PoolId: pool.Id, NodeId: slot.NodeId}, simutil.Expect(types.ErrInvalidPool, types.ErrAlreadyMember, types.ErrNodeNotEligible)
	})
}

// MsgLeavePoolFactory takes a simulated provider's node out of a pool.
func MsgLeavePoolFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgLeavePool, simsx.SimDeliveryResultHandler) {
		m, prov, ok := pickMember(ctx, k, data, reporter)
		if !ok {
			return nil, nil, nil
		}
		return []simsx.SimAccount{prov}, &types.MsgLeavePool{Provider: m.Provider, PoolId: m.PoolId, NodeId: m.NodeId}, nil
	})
}

// MsgSubmitUnitsFactory posts 1 to 10 units to a simulated client's open pool (refused
// when the pool's free budget cannot pay them).
func MsgSubmitUnitsFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgSubmitUnits, simsx.SimDeliveryResultHandler) {
		pool, ok := pickPool(ctx, k, data, reporter, true)
		if !ok {
			return nil, nil, nil
		}
		owner := data.GetAccount(reporter, pool.Owner)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		r := data.Rand()
		units := make([]types.Input, 1+r.Intn(10))
		for i := range units {
			sum := sha256.Sum256(binary.BigEndian.AppendUint64([]byte("flops/sim unit"), r.Uint64()))
			units[i] = types.Input{Uri: fmt.Sprintf("https://sim.example/in/%x", sum[:8]), Sha256: hex.EncodeToString(sum[:])}
		}
		return []simsx.SimAccount{owner}, &types.MsgSubmitUnits{Owner: pool.Owner, PoolId: pool.Id, Units: units}, simutil.Expect(types.ErrInsufficientFunds)
	})
}

// MsgCommitUnitFactory claims an open unit for a member node of a simulated provider,
// the node the unit is drawn for when it is one (else refused while the unit is reserved
// for its designee, or when the provider cannot cover the exposure).
func MsgCommitUnitFactory(k keeper.Keeper, answers *gflsim.Answers) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgCommitUnit, simsx.SimDeliveryResultHandler) {
		type claim struct {
			u types.Unit
			m types.PoolMember
		}
		var claims []claim
		err := k.OpenUnits.Walk(ctx, nil, func(key collections.Pair[uint64, uint64]) (bool, error) {
			u, err := k.Units.Get(ctx, key)
			if err != nil {
				return true, err
			}
			var members []types.PoolMember
			if err := k.PoolMembers.Walk(ctx, collections.NewPrefixedPairRange[uint64, uint64](key.K1()), func(_ collections.Pair[uint64, uint64], m types.PoolMember) (bool, error) {
				if data.HasAccount(m.Provider) {
					members = append(members, m)
				}
				return false, nil
			}); err != nil {
				return true, err
			}
			for _, m := range members {
				if m.NodeId == u.DesignatedNode {
					members = []types.PoolMember{m}
					break
				}
			}
			if len(members) > 0 {
				claims = append(claims, claim{u: u, m: members[data.Rand().Intn(len(members))]})
			}
			return len(claims) >= simutil.ScanLimit, nil
		})
		if err != nil || len(claims) == 0 {
			reporter.Skip("no open unit in a pool with a member of a simulated provider")
			return nil, nil, nil
		}
		c := claims[data.Rand().Intn(len(claims))]
		prov := data.GetAccount(reporter, c.m.Provider)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		pool, err := k.Pools.Get(ctx, c.u.PoolId)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		commitment := types.Commitment(unitRoot(answers, pool, c.u, prov.Address), unitSalt(c.u, prov.Address), prov.Address)
		msg := &types.MsgCommitUnit{Provider: c.m.Provider, PoolId: c.u.PoolId, UnitId: c.u.Id, NodeId: c.m.NodeId, Commitment: commitment}
		return []simsx.SimAccount{prov}, msg, simutil.Expect(types.ErrUnitReserved, types.ErrNodeNotEligible)
	})
}

// MsgRevealUnitFactory reveals a claimed unit in a later block (refused in its commit
// block, as expected). A BUILTIN_GEMM pool's unit opens its sampled entries; a lazy
// provider's made-up GEMM must be refused.
func MsgRevealUnitFactory(k keeper.Keeper, answers *gflsim.Answers) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgRevealUnit, simsx.SimDeliveryResultHandler) {
		claimed, err := simutil.Matching(ctx, k.Units.Walk, func(u types.Unit) bool {
			return u.Status == types.UNIT_STATUS_COMMITTED && data.HasAccount(u.Provider)
		})
		if err != nil || len(claimed) == 0 {
			reporter.Skip("no claimed unit of a simulated provider")
			return nil, nil, nil
		}
		u := claimed[data.Rand().Intn(len(claimed))]
		prov := data.GetAccount(reporter, u.Provider)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		pool, err := k.Pools.Get(ctx, u.PoolId)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		msg := &types.MsgRevealUnit{
			Provider: u.Provider, PoolId: u.PoolId, UnitId: u.Id, ResultRoot: unitRoot(answers, pool, u, prov.Address), Salt: unitSalt(u, prov.Address),
			OutputUri: fmt.Sprintf("https://sim.example/unit/%d/%d", u.PoolId, u.Id),
		}
		if pool.Spec.Verification != types.VERIFICATION_CLASS_BUILTIN_GEMM {
			return []simsx.SimAccount{prov}, msg, simutil.Expect(types.ErrRevealNotOpen)
		}
		c := pool.UnitGemm(u)
		if positions, err := k.GemmPositions(ctx, c, u.CommitHeight, types.DomainPoolSample, u.PoolId, u.Id); err == nil {
			msg.GemmProofs = answers.Solve(c, Lazy(prov.Address)).Proofs(positions)
		}
		return []simsx.SimAccount{prov}, msg, gemmChecked(Lazy(prov.Address))
	})
}

// MsgWithdrawPoolEarningsFactory pays a simulated provider its credits from a pool.
func MsgWithdrawPoolEarningsFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgWithdrawPoolEarnings, simsx.SimDeliveryResultHandler) {
		owed, err := simutil.Matching(ctx, k.PoolEarnings.Walk, func(e types.PoolEarning) bool {
			return e.Amount.IsPositive() && data.HasAccount(e.Provider)
		})
		if err != nil || len(owed) == 0 {
			reporter.Skip("no pool credits of a simulated provider")
			return nil, nil, nil
		}
		e := owed[data.Rand().Intn(len(owed))]
		prov := data.GetAccount(reporter, e.Provider)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		return []simsx.SimAccount{prov}, &types.MsgWithdrawPoolEarnings{Provider: e.Provider, PoolId: e.PoolId}, nil
	})
}

// MsgClosePoolFactory closes a simulated client's open pool (its open units are
// cancelled, its free budget returned; claimed units stay payable).
func MsgClosePoolFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgClosePool, simsx.SimDeliveryResultHandler) {
		pool, ok := pickPool(ctx, k, data, reporter, true)
		if !ok {
			return nil, nil, nil
		}
		owner := data.GetAccount(reporter, pool.Owner)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		return []simsx.SimAccount{owner}, &types.MsgClosePool{Owner: pool.Owner, PoolId: pool.Id}, nil
	})
}

// unitRoot and unitSalt are a simulated provider's result for a pool unit (derived, so
// that nothing is kept between the claim and the reveal).
func unitRoot(answers *gflsim.Answers, pool types.Pool, u types.Unit, provider sdk.AccAddress) []byte {
	if pool.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		return answers.Solve(pool.UnitGemm(u), Lazy(provider)).Root()
	}
	return ResultRoot(types.Task{Id: u.Id, JobId: u.PoolId}, provider)
}

func unitSalt(u types.Unit, provider sdk.AccAddress) []byte {
	return Salt(types.Task{Id: u.Id<<20 | u.PoolId}, provider)
}

// pickJob draws one of the newest jobs accepted by ok (of a simulated owner when owned).
func pickJob(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, ok func(types.Job) bool, owned bool) (types.Job, bool) {
	var found []types.Job
	err := simutil.Newest(ctx, k.Jobs.Iterate, func(j types.Job) {
		if ok(j) && (!owned || data.HasAccount(j.Owner)) {
			found = append(found, j)
		}
	})
	if err != nil || len(found) == 0 {
		reporter.Skip("no such job")
		return types.Job{}, false
	}
	return found[data.Rand().Intn(len(found))], true
}

// pickSlot draws one of the newest active nodes of a simulated provider accepted by ok.
func pickSlot(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, ok func(types.NodeSlot) bool) (types.NodeSlot, simsx.SimAccount, bool) {
	var found []types.NodeSlot
	err := simutil.Newest(ctx, k.Slots.Iterate, func(s types.NodeSlot) {
		if s.Active && data.HasAccount(s.Operator) && ok(s) {
			found = append(found, s)
		}
	})
	if err != nil || len(found) == 0 {
		reporter.Skip("no active node of a simulated provider")
		return types.NodeSlot{}, simsx.SimAccount{}, false
	}
	s := found[data.Rand().Intn(len(found))]
	return s, data.GetAccount(reporter, s.Operator), !reporter.IsSkipped()
}

// pickPool draws one of the newest open pools (of a simulated owner when owned).
func pickPool(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter, owned bool) (types.Pool, bool) {
	var found []types.Pool
	err := simutil.Newest(ctx, k.Pools.Iterate, func(p types.Pool) {
		if p.Status == types.POOL_STATUS_OPEN && (!owned || data.HasAccount(p.Owner)) {
			found = append(found, p)
		}
	})
	if err != nil || len(found) == 0 {
		reporter.Skip("no open pool")
		return types.Pool{}, false
	}
	return found[data.Rand().Intn(len(found))], true
}

// pickMember draws a pool member node of a simulated provider.
func pickMember(ctx context.Context, k keeper.Keeper, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) (types.PoolMember, simsx.SimAccount, bool) {
	found, err := simutil.Matching(ctx, k.PoolMembers.Walk, func(m types.PoolMember) bool { return data.HasAccount(m.Provider) })
	if err != nil || len(found) == 0 {
		reporter.Skip("no pool member of a simulated provider")
		return types.PoolMember{}, simsx.SimAccount{}, false
	}
	m := found[data.Rand().Intn(len(found))]
	return m, data.GetAccount(reporter, m.Provider), !reporter.IsSkipped()
}
