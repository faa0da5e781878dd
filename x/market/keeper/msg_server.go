package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

type msgServer struct{ k Keeper }

var _ types.MsgServer = msgServer{}

// NewMsgServerImpl returns the module's Msg service. Each handler decodes the signer once
// (ErrInvalidAddress when it is not an address of this chain) and calls one keeper
// method, which checks the signer's right to act and emits the events.
func NewMsgServerImpl(k Keeper) types.MsgServer { return msgServer{k: k} }

// UpdateParams checks the authority, validates and stores the new params.
func (m msgServer) UpdateParams(ctx context.Context, msg *types.MsgUpdateParams) (*types.MsgUpdateParamsResponse, error) {
	if msg.Authority != m.k.authority {
		return nil, errorsmod.Wrapf(types.ErrInvalidAuthority, "expected %s, got %s", m.k.authority, msg.Authority)
	}
	if err := msg.Params.Validate(); err != nil {
		return nil, err
	}
	old, err := m.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	if old.Denom != msg.Params.Denom {
		// escrows, bids' bonds, dispute deposits, pool budgets and prices are all in the
		// one denom: a change would strand what the escrow account holds
		return nil, errorsmod.Wrapf(types.ErrInvalidParams, "denom %s -> %s: the market denom cannot be changed by a params update", old.Denom, msg.Params.Denom)
	}
	workCap, err := m.k.wiring.workRules.WorkRewardCapPpm(ctx)
	if err != nil {
		return nil, err
	}
	if err := types.WashLoopLoses(msg.Params.TakeRatePpm, workCap); err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidParams, "take_rate_ppm: %s; lower the cap first (in one proposal, x/dps's update before x/market's)", err)
	}
	if err := m.k.Params.Set(ctx, msg.Params); err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventParamsUpdated{
		Authority: msg.Authority, Params: msg.Params,
	}); err != nil {
		return nil, err
	}
	return &types.MsgUpdateParamsResponse{}, nil
}

// SubmitJob submits a job.
func (m msgServer) SubmitJob(ctx context.Context, msg *types.MsgSubmitJob) (*types.MsgSubmitJobResponse, error) {
	signer, err := m.k.address("owner", msg.Owner)
	if err != nil {
		return nil, err
	}
	job, err := m.k.SubmitJob(ctx, signer, msg.Spec)
	if err != nil {
		return nil, err
	}
	return &types.MsgSubmitJobResponse{JobId: job.Id, Escrow: job.Escrow}, nil
}

// CancelJob cancels a job.
func (m msgServer) CancelJob(ctx context.Context, msg *types.MsgCancelJob) (*types.MsgCancelJobResponse, error) {
	signer, err := m.k.address("owner", msg.Owner)
	if err != nil {
		return nil, err
	}
	refunded, err := m.k.CancelJob(ctx, signer, msg.JobId)
	if err != nil {
		return nil, err
	}
	return &types.MsgCancelJobResponse{Refunded: refunded}, nil
}

// PlaceBid bids a node.
func (m msgServer) PlaceBid(ctx context.Context, msg *types.MsgPlaceBid) (*types.MsgPlaceBidResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.PlaceBid(ctx, signer, msg.JobId, msg.NodeId, msg.Price, msg.Quantity); err != nil {
		return nil, err
	}
	return &types.MsgPlaceBidResponse{}, nil
}

// WithdrawBid withdraws a bid.
func (m msgServer) WithdrawBid(ctx context.Context, msg *types.MsgWithdrawBid) (*types.MsgWithdrawBidResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.WithdrawBid(ctx, signer, msg.JobId, msg.NodeId); err != nil {
		return nil, err
	}
	return &types.MsgWithdrawBidResponse{}, nil
}

// AckTask starts a task.
func (m msgServer) AckTask(ctx context.Context, msg *types.MsgAckTask) (*types.MsgAckTaskResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.AckTask(ctx, signer, msg.TaskId); err != nil {
		return nil, err
	}
	return &types.MsgAckTaskResponse{}, nil
}

// Heartbeat keeps a node's running tasks alive.
func (m msgServer) Heartbeat(ctx context.Context, msg *types.MsgHeartbeat) (*types.MsgHeartbeatResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.Heartbeat(ctx, signer, msg.NodeId, msg.Progress...); err != nil {
		return nil, err
	}
	return &types.MsgHeartbeatResponse{}, nil
}

// Checkpoint records a task's saved state.
func (m msgServer) Checkpoint(ctx context.Context, msg *types.MsgCheckpoint) (*types.MsgCheckpointResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.Checkpoint(ctx, signer, msg.TaskId, msg.Sha256, msg.Uri); err != nil {
		return nil, err
	}
	return &types.MsgCheckpointResponse{}, nil
}

// CommitResult commits a task's result.
func (m msgServer) CommitResult(ctx context.Context, msg *types.MsgCommitResult) (*types.MsgCommitResultResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.CommitResult(ctx, signer, msg.TaskId, msg.Commitment); err != nil {
		return nil, err
	}
	return &types.MsgCommitResultResponse{}, nil
}

// ReportFailure reports a running task's failure for the job's sake.
func (m msgServer) ReportFailure(ctx context.Context, msg *types.MsgReportFailure) (*types.MsgReportFailureResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	status, err := m.k.ReportFailure(ctx, signer, msg.TaskId, Failure{Reason: msg.Reason, ExitCode: msg.ExitCode, LogRoot: msg.LogRoot, Detail: msg.Detail})
	if err != nil {
		return nil, err
	}
	return &types.MsgReportFailureResponse{Status: status}, nil
}

// ReleaseTask gives back a task its provider's machine cannot run.
func (m msgServer) ReleaseTask(ctx context.Context, msg *types.MsgReleaseTask) (*types.MsgReleaseTaskResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.ReleaseTask(ctx, signer, msg.TaskId, msg.Reason); err != nil {
		return nil, err
	}
	return &types.MsgReleaseTaskResponse{}, nil
}

// RevealResult opens a committed result.
func (m msgServer) RevealResult(ctx context.Context, msg *types.MsgRevealResult) (*types.MsgRevealResultResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	settle, err := m.k.RevealResult(ctx, signer, msg.TaskId, Reveal{
		ResultRoot: msg.ResultRoot, Salt: msg.Salt, OutputURI: msg.OutputUri, Usage: msg.Usage, GemmProofs: msg.GemmProofs,
	})
	if err != nil {
		return nil, err
	}
	return &types.MsgRevealResultResponse{SettleHeight: settle}, nil
}

// Challenge disputes a verified result.
func (m msgServer) Challenge(ctx context.Context, msg *types.MsgChallenge) (*types.MsgChallengeResponse, error) {
	signer, err := m.k.address("owner", msg.Owner)
	if err != nil {
		return nil, err
	}
	id, err := m.k.Challenge(ctx, signer, msg.TaskId)
	if err != nil {
		return nil, err
	}
	return &types.MsgChallengeResponse{DisputeId: id}, nil
}

// CreatePool opens a pool.
func (m msgServer) CreatePool(ctx context.Context, msg *types.MsgCreatePool) (*types.MsgCreatePoolResponse, error) {
	signer, err := m.k.address("owner", msg.Owner)
	if err != nil {
		return nil, err
	}
	id, err := m.k.CreatePool(ctx, signer, msg.Spec)
	if err != nil {
		return nil, err
	}
	return &types.MsgCreatePoolResponse{PoolId: id}, nil
}

// JoinPool adds a node to a pool.
func (m msgServer) JoinPool(ctx context.Context, msg *types.MsgJoinPool) (*types.MsgJoinPoolResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.JoinPool(ctx, signer, msg.PoolId, msg.NodeId); err != nil {
		return nil, err
	}
	return &types.MsgJoinPoolResponse{}, nil
}

// LeavePool takes a node out of a pool.
func (m msgServer) LeavePool(ctx context.Context, msg *types.MsgLeavePool) (*types.MsgLeavePoolResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.LeavePool(ctx, signer, msg.PoolId, msg.NodeId); err != nil {
		return nil, err
	}
	return &types.MsgLeavePoolResponse{}, nil
}

// SubmitUnits posts units to a pool.
func (m msgServer) SubmitUnits(ctx context.Context, msg *types.MsgSubmitUnits) (*types.MsgSubmitUnitsResponse, error) {
	signer, err := m.k.address("owner", msg.Owner)
	if err != nil {
		return nil, err
	}
	first, err := m.k.SubmitUnits(ctx, signer, msg.PoolId, msg.Units)
	if err != nil {
		return nil, err
	}
	return &types.MsgSubmitUnitsResponse{FirstUnit: first}, nil
}

// CommitUnit claims a unit.
func (m msgServer) CommitUnit(ctx context.Context, msg *types.MsgCommitUnit) (*types.MsgCommitUnitResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	deadline, err := m.k.CommitUnit(ctx, signer, msg.PoolId, msg.UnitId, msg.NodeId, msg.Commitment)
	if err != nil {
		return nil, err
	}
	return &types.MsgCommitUnitResponse{RevealDeadlineHeight: deadline}, nil
}

// RevealUnit opens a claimed unit.
func (m msgServer) RevealUnit(ctx context.Context, msg *types.MsgRevealUnit) (*types.MsgRevealUnitResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.k.RevealUnit(ctx, signer, msg.PoolId, msg.UnitId, Reveal{
		ResultRoot: msg.ResultRoot, Salt: msg.Salt, OutputURI: msg.OutputUri, GemmProofs: msg.GemmProofs,
	}); err != nil {
		return nil, err
	}
	return &types.MsgRevealUnitResponse{}, nil
}

// WithdrawPoolEarnings pays a provider's credits.
func (m msgServer) WithdrawPoolEarnings(ctx context.Context, msg *types.MsgWithdrawPoolEarnings) (*types.MsgWithdrawPoolEarningsResponse, error) {
	signer, err := m.k.address("provider", msg.Provider)
	if err != nil {
		return nil, err
	}
	paid, err := m.k.WithdrawPoolEarnings(ctx, signer, msg.PoolId)
	if err != nil {
		return nil, err
	}
	return &types.MsgWithdrawPoolEarningsResponse{Paid: paid}, nil
}

// ClosePool closes a pool.
func (m msgServer) ClosePool(ctx context.Context, msg *types.MsgClosePool) (*types.MsgClosePoolResponse, error) {
	signer, err := m.k.address("owner", msg.Owner)
	if err != nil {
		return nil, err
	}
	refunded, err := m.k.ClosePool(ctx, signer, msg.PoolId)
	if err != nil {
		return nil, err
	}
	return &types.MsgClosePoolResponse{Refunded: refunded}, nil
}
