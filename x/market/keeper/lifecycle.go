package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The provider's side of a task: ASSIGNED -> RUNNING (ack) -> COMMITTED (commit) ->
// REVEALED (reveal); heartbeats keep running tasks alive and checkpoints record their
// progress. Only the assigned provider may send these.

// providerTask returns a task after checking that signer is its provider and that it is
// in status want.
func (k Keeper) providerTask(ctx context.Context, provider sdk.AccAddress, id uint64, want types.TaskStatus) (types.Task, types.Job, error) {
	signer, err := k.addressString("provider", provider)
	if err != nil {
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
func (k Keeper) AckTask(ctx context.Context, provider sdk.AccAddress, id uint64) error {
	t, job, err := k.providerTask(ctx, provider, id, types.TASK_STATUS_ASSIGNED)
	if err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if err := k.touch(ctx, p, t.NodeId); err != nil {
		return err
	}
	if t.BidNode != 0 {
		if err := k.settleBidDeposit(ctx, &job, t.BidNode, false); err != nil {
			return err
		}
	}
	now := sdkCtx.BlockTime()
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_RUNNING, step{history: "TaskRunning", node: t.NodeId, detail: "acked"}, func(t *types.Task) {
		t.StartedTime = now
		t.RunDeadline = now.Add(job.Spec.MaxDuration)
		if d := taskDeadline(job, *t); d.Before(t.RunDeadline) {
			t.RunDeadline = d
		}
	}); err != nil {
		return err
	}
	onTime := sdkCtx.BlockHeight() <= t.AckDeadlineHeight
	counts, err := k.counts(ctx, job, t)
	if err != nil {
		return err
	}
	if counts || !onTime { // a late ack always counts against its provider
		if err := k.hooks().AfterTaskAcked(ctx, t.NodeId, onTime); err != nil {
			return err
		}
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: id, JobId: t.JobId, NodeId: t.NodeId, Status: t.Status})
}

// ReleaseTask gives back a task its provider's machine cannot run (ASSIGNED, or RUNNING:
// not once its result is committed): it lapses at once, as it would at its ack or
// heartbeat deadline, with the same slash (abandon_slash_ppm), deposit forfeit and
// reputation event, and goes to another node (or ends, out of reassignments). A release
// costs what waiting for the lapse costs, so it is never a way out of a dearer outcome;
// it spares the job the wait. reason is kept in the task's history.
func (k Keeper) ReleaseTask(ctx context.Context, provider sdk.AccAddress, id uint64, reason string) error {
	if err := validate.Size("reason", len(reason), types.MaxFailureDetailLen); err != nil {
		return err
	}
	if !types.PrintableLine(reason) {
		return errorsmod.Wrap(types.ErrInvalidRelease, "reason must be printable UTF-8 on one line")
	}
	t, _, err := k.providerTask(ctx, provider, id, types.TASK_STATUS_ASSIGNED)
	if errorsmod.IsOf(err, types.ErrInvalidTaskStatus) && t.Status == types.TASK_STATUS_RUNNING {
		err = nil
	}
	if err != nil {
		return err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	why := "released by its provider"
	if reason != "" {
		why += ": " + reason
	}
	return k.lapse(sdk.UnwrapSDKContext(ctx), p, t, why, p.AbandonSlashPpm, sstypes.SLASH_REASON_ABANDONED_TASK)
}

// Heartbeat keeps every running task of a node alive for heartbeat_timeout_blocks, and
// records the progress its running tasks report (each must run on the node).
func (k Keeper) Heartbeat(ctx context.Context, providerAddr sdk.AccAddress, nodeID uint64, progress ...types.TaskProgress) error {
	if err := validate.Count("progress", len(progress), types.MaxProgressPerHeartbeat); err != nil {
		return err
	}
	for _, pr := range progress {
		if err := validate.Size("progress", len(pr.Progress), types.MaxProgressLen); err != nil {
			return err
		}
		if !types.PrintableLine(pr.Progress) {
			return errorsmod.Wrapf(types.ErrInvalidProgress, "task %d: progress must be printable UTF-8 on one line", pr.TaskId)
		}
	}
	provider, err := k.addressString("provider", providerAddr)
	if err != nil {
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
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	for i, pr := range progress {
		for _, seen := range progress[:i] {
			if seen.TaskId == pr.TaskId {
				return errorsmod.Wrapf(types.ErrInvalidProgress, "task %d: reported twice", pr.TaskId)
			}
		}
		t, err := k.GetTask(ctx, pr.TaskId)
		if err != nil {
			return err
		}
		if t.NodeId != nodeID || t.Status != types.TASK_STATUS_RUNNING {
			return errorsmod.Wrapf(types.ErrInvalidProgress, "task %d is %s on node %d, not running on node %d", pr.TaskId, t.Status, t.NodeId, nodeID)
		}
		t.Progress, t.ProgressHeight = pr.Progress, h
		if err := k.Tasks.Set(ctx, t.Id, t); err != nil {
			return err
		}
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
func (k Keeper) Checkpoint(ctx context.Context, provider sdk.AccAddress, id uint64, sum, uri string) error {
	if err := validate.Size("sha256", len(sum), 64); err != nil {
		return err
	}
	if err := validate.Size("uri", len(uri), types.MaxURILen); err != nil {
		return err
	}
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
	t.Checkpoint = types.Checkpoint{Sha256: sum, Uri: uri, Height: sdkCtx.BlockHeight(), Author: t.Provider}
	if err := k.Tasks.Set(ctx, id, t); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventCheckpoint{TaskId: id, Sha256: sum, Uri: uri})
}

// CommitResult records sha256(result_root || salt || provider address) before the run
// deadline. The node's GPUs are free again; the reveal must follow within
// reveal_timeout_blocks.
func (k Keeper) CommitResult(ctx context.Context, provider sdk.AccAddress, id uint64, commitment []byte) error {
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
	h := sdkCtx.BlockHeight()
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_COMMITTED, step{history: "TaskCommitted", node: t.NodeId}, func(t *types.Task) {
		t.Commitment = commitment
		t.CommitHeight = h
		t.CommitTime = sdkCtx.BlockTime()
		t.RevealDeadlineHeight = 0
		// A single-replica EXACT primary's audit is drawn first (awaitsAuditDraw), and an
		// EXACT or committee group's reveals open once every member has committed
		// (afterGroupChange); other results may be revealed from the next block.
		if job.Spec.Verification != types.VERIFICATION_CLASS_EXACT && t.Role != types.TASK_ROLE_COMMITTEE {
			t.RevealDeadlineHeight = h + int64(p.RevealTimeoutBlocks)
		}
	}); err != nil {
		return err
	}
	if err := k.afterGroupChange(ctx, p, &job, t); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: id, JobId: t.JobId, NodeId: t.NodeId, Status: t.Status})
}

// Reveal opens a commitment: the result root and the salt, where the owner fetches the
// output, the usage measured (tasks only), and for BUILTIN_GEMM the sampled chunks with
// their Merkle paths.
type Reveal struct {
	ResultRoot, Salt []byte
	OutputURI        string
	Usage            types.Usage
	GemmProofs       []gfltypes.ChunkProof
}

// validateSizes checks every field of a reveal against its bound before anything is read
// (the proofs against the most samples a challenge may draw; the exact number is checked
// when they are verified).
func (r Reveal) validateSizes() error {
	if err := validate.Size("result_root", len(r.ResultRoot), sha256.Size); err != nil {
		return err
	}
	if err := validate.Size("salt", len(r.Salt), types.MaxSaltLen); err != nil {
		return err
	}
	if err := validate.Size("output_uri", len(r.OutputURI), types.MaxURILen); err != nil {
		return err
	}
	if err := types.ValidateUsageSizes(r.Usage); err != nil {
		return err
	}
	return gfltypes.ValidateProofSizes("gemm_proofs", r.GemmProofs)
}

// RevealResult opens a commitment once its group's reveals are open. A GEMM or NONE
// result is verified at once; an EXACT result waits for its group's decision.
func (k Keeper) RevealResult(ctx context.Context, provider sdk.AccAddress, taskID uint64, msg Reveal) (int64, error) {
	if err := msg.validateSizes(); err != nil {
		return 0, err
	}
	t, job, err := k.providerTask(ctx, provider, taskID, types.TASK_STATUS_COMMITTED)
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
	}
	if err := types.ValidateURI(msg.OutputURI); err != nil {
		return 0, errorsmod.Wrapf(types.ErrInvalidReveal, "output_uri: %s", err)
	}
	if !bytes.Equal(types.Commitment(msg.ResultRoot, msg.Salt, provider), t.Commitment) {
		return 0, errorsmod.Wrapf(types.ErrRevealMismatch, "task %d: sha256(root || salt || provider) differs from the commitment", t.Id)
	}
	if t.Role == types.TASK_ROLE_PRIMARY && types.IsFailedRoot(msg.ResultRoot) {
		// a primary's failure goes through MsgReportFailure, which another operator's run
		// must confirm; revealed as a result, it would be paid as one
		return 0, errorsmod.Wrapf(types.ErrInvalidReveal, "task %d is a primary: its run's failure is reported with MsgReportFailure; the failed-run root is a verification task's answer", t.Id)
	}
	if job.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		if err := k.verifyGemm(ctx, job.GemmChallenge(t.Index), msg.ResultRoot, t.CommitHeight, msg.GemmProofs, types.DomainGemmSample, t.Id); err != nil {
			return 0, err
		}
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	if err := k.transition(ctx, p, &job, &t, types.TASK_STATUS_REVEALED, step{history: "TaskRevealed", node: t.NodeId, detail: "output " + msg.OutputURI}, func(t *types.Task) {
		t.ResultRoot = msg.ResultRoot
		t.OutputUri = msg.OutputURI
		t.Usage = msg.Usage
		t.RevealHeight = sdkCtx.BlockHeight()
	}); err != nil {
		return 0, err
	}
	if job.Spec.Verification == types.VERIFICATION_CLASS_EXACT || t.Role == types.TASK_ROLE_COMMITTEE {
		// decided with its group (it may be decided by this very reveal)
		if err := k.afterGroupChange(ctx, p, &job, t); err != nil {
			return 0, err
		}
		if t, err = k.Tasks.Get(ctx, t.Id); err != nil {
			return 0, err
		}
	} else if err := k.verify(ctx, p, &job, &t); err != nil {
		return 0, err
	}
	return t.SettleHeight, sdkCtx.EventManager().EmitTypedEvent(&types.EventTaskStatus{TaskId: t.Id, JobId: t.JobId, NodeId: t.NodeId, Status: types.TASK_STATUS_REVEALED})
}
