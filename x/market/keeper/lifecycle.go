package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// The provider's side of a task: ASSIGNED -> RUNNING (ack) -> COMMITTED (commit) ->
// REVEALED (reveal); heartbeats keep running tasks alive and checkpoints record their
// progress. Only the assigned provider may send these.

// providerTask returns a task after checking that signer is its provider and that it is
// in status want.
func (k Keeper) providerTask(ctx context.Context, signer string, id uint64, want types.TaskStatus) (types.Task, types.Job, error) {
	if _, err := k.address("provider", signer); err != nil {
		return types.Task{}, types.Job{}, err
	}
	t, err := k.GetTask(ctx, id)
	if err != nil {
		return t, types.Job{}, err
	}
	if t.Provider != signer {
		return t, types.Job{}, errorsmod.Wrapf(types.ErrNotProvider, "task %d is assigned to %q, not %s", id, t.Provider, signer)
	}
	if t.Status != want {
		return t, types.Job{}, errorsmod.Wrapf(types.ErrInvalidTaskStatus, "task %d is %s, not %s", id, t.Status, want)
	}
	job, err := k.GetJob(ctx, t.JobId)
	return t, job, err
}

// AckTask starts an assigned task: its run deadline is ack + max_duration (at most the
// job's deadline), its node's heartbeat starts, and an auction winner's deposit returns.
func (k Keeper) AckTask(ctx context.Context, provider string, id uint64) error {
	t, job, err := k.providerTask(ctx, provider, id, types.TASK_STATUS_ASSIGNED)
	if err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if err := k.dequeue(ctx, job, t); err != nil {
		return err
	}
	now := sdkCtx.BlockTime()
	t.Status = types.TASK_STATUS_RUNNING
	t.StartedTime = now
	t.RunDeadline = now.Add(job.Spec.MaxDuration)
	if job.Spec.Deadline.Before(t.RunDeadline) {
		t.RunDeadline = job.Spec.Deadline
	}
	if err := k.enqueue(ctx, job, t); err != nil {
		return err
	}
	if err := k.touch(ctx, p, t.NodeId); err != nil {
		return err
	}
	if t.BidNode != 0 {
		if err := k.settleBidDeposit(ctx, &job, t.BidNode, false); err != nil {
			return err
		}
	}
	if err := k.Tasks.Set(ctx, id, t); err != nil {
		return err
	}
	k.addHistory(ctx, &job, p, "TaskRunning", id, t.NodeId, "acked")
	if err := k.Jobs.Set(ctx, job.Id, job); err != nil {
		return err
	}
	k.hooks().AfterTaskAcked(ctx, t.NodeId, sdkCtx.BlockHeight() <= t.AckDeadlineHeight)
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: id, JobId: t.JobId, NodeId: t.NodeId, Status: t.Status})
}

// Heartbeat keeps every running task of a node alive for heartbeat_timeout_blocks.
func (k Keeper) Heartbeat(ctx context.Context, provider string, nodeID uint64) error {
	if _, err := k.address("provider", provider); err != nil {
		return err
	}
	s, err := k.Slots.Get(ctx, nodeID)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return errorsmod.Wrapf(types.ErrNodeUnknown, "node %d", nodeID)
	} else if err != nil {
		return err
	}
	if s.Operator != provider {
		return errorsmod.Wrapf(types.ErrNotProvider, "node %d is operated by %s, not %s", nodeID, s.Operator, provider)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	return k.touch(ctx, p, nodeID)
}

// touch moves a node's heartbeat deadline to now + heartbeat_timeout_blocks.
func (k Keeper) touch(ctx context.Context, p types.Params, nodeID uint64) error {
	due := sdk.UnwrapSDKContext(ctx).BlockHeight() + int64(p.HeartbeatTimeoutBlocks)
	old, err := k.Heartbeats.Get(ctx, nodeID)
	if err == nil {
		if err := k.HeartbeatDue.Remove(ctx, collections.Join(old, nodeID)); err != nil {
			return err
		}
	} else if !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	if err := k.Heartbeats.Set(ctx, nodeID, due); err != nil {
		return err
	}
	return k.HeartbeatDue.Set(ctx, collections.Join(due, nodeID))
}

// Checkpoint records a running task's saved state; a reassignment hands it to the next node.
func (k Keeper) Checkpoint(ctx context.Context, provider string, id uint64, sum, uri string) error {
	t, _, err := k.providerTask(ctx, provider, id, types.TASK_STATUS_RUNNING)
	if err != nil {
		return err
	}
	if err := types.ValidateSHA256Hex(sum); err != nil {
		return errorsmod.Wrapf(types.ErrInvalidCheckpoint, "sha256: %s", err)
	}
	if err := types.ValidateURI(uri); err != nil {
		return errorsmod.Wrapf(types.ErrInvalidCheckpoint, "uri: %s", err)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	t.Checkpoint = types.Checkpoint{Sha256: sum, Uri: uri, Height: sdkCtx.BlockHeight()}
	if err := k.Tasks.Set(ctx, id, t); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventCheckpoint{TaskId: id, Sha256: sum, Uri: uri})
}

// CommitResult records sha256(result_root || salt || provider address) before the run
// deadline. The node's GPUs are free again; the reveal must follow within
// reveal_timeout_blocks.
func (k Keeper) CommitResult(ctx context.Context, provider string, id uint64, commitment []byte) error {
	t, job, err := k.providerTask(ctx, provider, id, types.TASK_STATUS_RUNNING)
	if err != nil {
		return err
	}
	if len(commitment) != sha256.Size {
		return errorsmod.Wrapf(types.ErrInvalidCommitment, "commitment is %d bytes, must be 32", len(commitment))
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if sdkCtx.BlockTime().After(t.RunDeadline) {
		return errorsmod.Wrapf(types.ErrDeadlinePassed, "task %d: run deadline %s", id, t.RunDeadline)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.dequeue(ctx, job, t); err != nil {
		return err
	}
	if err := k.adjustSlot(ctx, t.NodeId, -int64(job.Spec.Requirements.GPUs()), 0); err != nil {
		return err
	}
	t.Status = types.TASK_STATUS_COMMITTED
	t.Commitment = commitment
	t.CommitHeight = sdkCtx.BlockHeight()
	t.CommitTime = sdkCtx.BlockTime()
	t.RevealDeadlineHeight = 0
	switch {
	case job.Spec.Verification == types.VERIFICATION_CLASS_EXACT && t.Role == types.TASK_ROLE_PRIMARY && job.Spec.Replicas == 1 && !t.Audited:
		// its audit is drawn from the next block's hash, available two blocks from now
		if err := k.AuditDraws.Set(ctx, collections.Join(t.CommitHeight+2, t.Id)); err != nil {
			return err
		}
	case job.Spec.Verification == types.VERIFICATION_CLASS_EXACT || t.Role == types.TASK_ROLE_COMMITTEE:
		// its group's reveals open once every member has committed
	default:
		t.RevealDeadlineHeight = t.CommitHeight + int64(p.RevealTimeoutBlocks)
		if err := k.enqueue(ctx, job, t); err != nil {
			return err
		}
	}
	if err := k.Tasks.Set(ctx, id, t); err != nil {
		return err
	}
	if err := k.afterGroupChange(ctx, p, &job, t); err != nil {
		return err
	}
	k.addHistory(ctx, &job, p, "TaskCommitted", id, t.NodeId, "")
	if err := k.Jobs.Set(ctx, job.Id, job); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: id, JobId: t.JobId, NodeId: t.NodeId, Status: t.Status})
}

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

// RevealResult opens a commitment once its group's reveals are open: the result root, the
// salt, where the owner fetches the output, the usage measured, and for BUILTIN_GEMM the
// sampled chunks with their Merkle paths. A GEMM or NONE result is verified at once; an
// EXACT result waits for its group's decision.
func (k Keeper) RevealResult(ctx context.Context, msg *types.MsgRevealResult) (int64, error) {
	t, job, err := k.providerTask(ctx, msg.Provider, msg.TaskId, types.TASK_STATUS_COMMITTED)
	if err != nil {
		return 0, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if t.RevealDeadlineHeight == 0 || sdkCtx.BlockHeight() <= t.CommitHeight {
		return 0, errorsmod.Wrapf(types.ErrRevealNotOpen, "task %d: reveals open after the commit block and once every replica, audit or committee member of its group has committed", t.Id)
	}
	switch {
	case len(msg.ResultRoot) != sha256.Size:
		return 0, errorsmod.Wrapf(types.ErrInvalidReveal, "result_root is %d bytes, must be 32", len(msg.ResultRoot))
	case len(msg.Salt) < 16 || len(msg.Salt) > 64:
		return 0, errorsmod.Wrapf(types.ErrInvalidReveal, "salt is %d bytes, must be 16 to 64", len(msg.Salt))
	case len(msg.Usage.GpuUuids) > 64:
		return 0, errorsmod.Wrapf(types.ErrInvalidReveal, "usage.gpu_uuids: %d, at most 64", len(msg.Usage.GpuUuids))
	}
	if err := types.ValidateURI(msg.OutputUri); err != nil {
		return 0, errorsmod.Wrapf(types.ErrInvalidReveal, "output_uri: %s", err)
	}
	provider := k.mustAcc(msg.Provider)
	if !bytes.Equal(Commitment(msg.ResultRoot, msg.Salt, provider), t.Commitment) {
		return 0, errorsmod.Wrapf(types.ErrRevealMismatch, "task %d: sha256(root || salt || provider) differs from the commitment", t.Id)
	}
	if job.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		if err := k.verifyGemm(ctx, gemmChallenge(job, t.Index), msg.ResultRoot, t.CommitHeight, msg.GemmProofs, types.DomainGemmSample, t.Id); err != nil {
			return 0, err
		}
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	if err := k.dequeue(ctx, job, t); err != nil {
		return 0, err
	}
	if err := k.adjustSlot(ctx, t.NodeId, 0, -1); err != nil {
		return 0, err
	}
	t.Status = types.TASK_STATUS_REVEALED
	t.ResultRoot = msg.ResultRoot
	t.OutputUri = msg.OutputUri
	t.Usage = msg.Usage
	t.RevealHeight = sdkCtx.BlockHeight()
	k.addHistory(ctx, &job, p, "TaskRevealed", t.Id, t.NodeId, "output "+msg.OutputUri)
	if job.Spec.Verification == types.VERIFICATION_CLASS_EXACT || t.Role == types.TASK_ROLE_COMMITTEE {
		if err := k.Tasks.Set(ctx, t.Id, t); err != nil {
			return 0, err
		}
		if err := k.afterGroupChange(ctx, p, &job, t); err != nil {
			return 0, err
		}
		if t, err = k.Tasks.Get(ctx, t.Id); err != nil {
			return 0, err
		}
	} else if err := k.verify(ctx, p, &job, &t); err != nil {
		return 0, err
	}
	if err := k.Jobs.Set(ctx, job.Id, job); err != nil {
		return 0, err
	}
	return t.SettleHeight, sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: t.Id, JobId: t.JobId, NodeId: t.NodeId, Status: types.TASK_STATUS_REVEALED})
}
