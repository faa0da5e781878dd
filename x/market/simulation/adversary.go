package simulation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// The adversaries of the hardening issues as generated operations: ids past the newest,
// specs at and over the bounds, many unplaceable tasks expiring together. Each names what
// the chain must answer: a refusal where one is due (a success fails the simulation), or
// acceptance within the bounds.

// MsgAckUnknownTaskFactory acks a task id beyond the newest (an id gap): refused with
// ErrTaskNotFound; an acceptance fails the simulation.
func MsgAckUnknownTaskFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgAckTask, simsx.SimDeliveryResultHandler) {
		_, next, err := k.PeekIDs(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		prov := data.AnyAccount(reporter)
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		id := next + uint64(data.Rand().Intn(1000))
		return []simsx.SimAccount{prov}, &types.MsgAckTask{Provider: prov.AddressBech32, TaskId: id}, func(err error) error {
			switch {
			case errors.Is(err, types.ErrTaskNotFound):
				return nil
			case err == nil:
				return fmt.Errorf("ack of task %d, past the newest, was accepted", id)
			}
			return fmt.Errorf("ack of task %d, past the newest: want ErrTaskNotFound, got %w", id, err)
		}
	})
}

// MsgSubmitMaximalJobFactory submits a big job that no node serves, with a short deadline
// (100 to 200 tasks: what the simulator's 10M-gas transactions hold; a real chain's block
// takes max_tasks_per_job): accepted, escrowed, and expired together by the block hooks in
// bounded parts; one time in four one task more than max_tasks_per_job, refused with
// ErrInvalidJobSpec (an acceptance fails the simulation).
func MsgSubmitMaximalJobFactory(k keeper.Keeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgSubmitJob, simsx.SimDeliveryResultHandler) {
		p, err := k.Params.Get(ctx)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		r := data.Rand()
		over := r.Intn(4) == 0
		now := sdk.UnwrapSDKContext(ctx).BlockTime()
		spec := types.JobSpec{
			Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: gfltypes.RUNTIME_PROCESS, Command: []string{"python3", "batch.py"},
			TaskCount: min(p.MaxTasksPerJob, uint32(100+r.Intn(101))), Replicas: 1, Verification: types.VERIFICATION_CLASS_NONE,
			Requirements:    types.Requirements{Region: "nowhere"},
			MaxPricePerTask: sdk.NewInt64Coin(p.Denom, 1_000), MaxDuration: time.Hour, Mode: types.ALLOCATION_MODE_ASSIGN,
			PriorityTip: sdk.NewInt64Coin(p.Denom, 0), VerificationBudget: sdk.NewInt64Coin(p.Denom, 0),
		}
		spec.Deadline = now.Add(spec.MaxDuration).Add(time.Duration(1+r.Intn(6)) * time.Hour)
		if over {
			spec.TaskCount = p.MaxTasksPerJob + 1
		}
		owner := data.AnyAccount(reporter, simsx.WithLiquidBalanceGTE(sdk.NewCoin(p.Denom, spec.Budget())))
		if reporter.IsSkipped() {
			return nil, nil, nil
		}
		if !owner.LiquidBalance().BlockAmount(sdk.NewCoin(p.Denom, spec.Budget())) {
			reporter.Skip("owner cannot pay the escrow")
			return nil, nil, nil
		}
		return []simsx.SimAccount{owner}, &types.MsgSubmitJob{Owner: owner.AddressBech32, Spec: spec}, func(err error) error {
			switch {
			case over && errors.Is(err, types.ErrInvalidJobSpec):
				return nil
			case over && err == nil:
				return fmt.Errorf("a job of %d tasks, over max_tasks_per_job %d, was accepted", spec.TaskCount, p.MaxTasksPerJob)
			case over:
				return fmt.Errorf("a job of %d tasks, over max_tasks_per_job %d: want ErrInvalidJobSpec, got %w", spec.TaskCount, p.MaxTasksPerJob, err)
			}
			return err
		}
	})
}
