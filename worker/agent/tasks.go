package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flopsnet/flops/worker/config"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/worker/executor"
	"github.com/flopsnet/flops/worker/gpu"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// taskActions: ack what was assigned (and start it at once, beside the ack), keep what
// runs running, commit what finished, report what failed for the job's sake, reveal what
// the chain lets us reveal, publish new checkpoints, and heartbeat while anything runs,
// with the progress the running tasks wrote.
func (a *Agent) taskActions(ctx context.Context, height int64, tasks []markettypes.Task) []action {
	op := a.o.Chain.Address().String()
	var acts []action
	var progress []markettypes.TaskProgress
	busy := false
	for _, t := range tasks {
		if t.NodeId != a.node.Id {
			continue // another machine of the same provider
		}
		switch t.Status {
		case markettypes.TASK_STATUS_ASSIGNED:
			busy = true
			if !a.start(ctx, t) {
				// waits, unacked, for the GPUs the chain gave it, or gives it back if they
				// are gone from the machine (gpuShortfall)
				if act, ok := a.gpusGoneAction(t); ok {
					acts = append(acts, act)
				}
				continue
			}
			if act, ok := a.releaseAction(t); ok {
				acts = append(acts, act) // failed at once, on this machine's side
				continue
			}
			acts = append(acts, action{what: fmt.Sprintf("ack task %d", t.Id), msgs: msgs(&markettypes.MsgAckTask{Provider: op, TaskId: t.Id}),
				after: func(err error) {
					if err != nil {
						a.stop(t.Id, fmt.Errorf("ack refused: %w", err))
					}
				}})
		case markettypes.TASK_STATUS_RUNNING:
			busy = true
			if !a.start(ctx, t) {
				// run again after a restart, and its GPUs are not free here
				if act, ok := a.gpusGoneAction(t); ok {
					acts = append(acts, act)
				}
				continue
			}
			if pr := a.o.Executor.Progress(t.Id); pr != "" && pr != t.Progress && len(progress) < markettypes.MaxProgressPerHeartbeat && a.uncommitted(t.Id) {
				progress = append(progress, markettypes.TaskProgress{TaskId: t.Id, Progress: pr})
			}
			if act, ok := a.commitAction(ctx, t); ok {
				acts = append(acts, act)
			}
			if act, ok := a.failureAction(ctx, t); ok {
				acts = append(acts, act)
			}
			if act, ok := a.releaseAction(t); ok {
				acts = append(acts, act)
			}
			if act, ok := a.checkpointAction(t); ok {
				acts = append(acts, act)
			}
		case markettypes.TASK_STATUS_COMMITTED:
			if act, ok := a.revealAction(ctx, height, t); ok {
				acts = append(acts, act)
			}
		}
	}
	every := max(a.params.HeartbeatTimeoutBlocks/3, 1)
	a.mu.Lock()
	beat := busy && height-a.lastBeat >= int64(every)
	a.mu.Unlock()
	if beat {
		// the progress the running tasks wrote since the chain last heard it rides along;
		// the heartbeat goes first, before a commitment ends one of those tasks' run
		acts = append([]action{{what: "heartbeat", msgs: msgs(&markettypes.MsgHeartbeat{Provider: op, NodeId: a.node.Id, Progress: progress}),
			after: func(err error) {
				if err == nil {
					a.mu.Lock()
					a.lastBeat = height
					a.mu.Unlock()
				}
			}}}, acts...)
	}
	return acts
}

// uncommitted: the task's commitment is not on its way from this machine (its run may
// have finished): its progress can still be reported with the chain's status RUNNING.
func (a *Agent) uncommitted(taskID uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.runs[taskID]
	return ok && (r.phase == phaseRunning || r.phase == phaseFinished || r.phase == phaseFailed)
}

// start runs a task on this machine unless it already runs (or ran) here. It says
// whether the task runs (or ran) here: false while the GPUs the chain gave it are not
// free on this machine (gpuShortfall), and then nothing of it runs.
func (a *Agent) start(ctx context.Context, t markettypes.Task) bool {
	a.mu.Lock()
	if _, ok := a.runs[t.Id]; ok {
		a.mu.Unlock()
		return true
	}
	if rec, ok, _ := a.state.get(taskKey(t.Id)); ok {
		// finished and recorded before a restart: nothing to run, the commit follows
		a.runs[t.Id] = &run{task: t, phase: phaseFinished, usage: rec.Usage}
		a.mu.Unlock()
		return true
	}
	r := &run{task: t, started: a.o.Now()}
	a.runs[t.Id] = r
	a.mu.Unlock()

	job, err := a.market.Job(ctx, &markettypes.QueryJobRequest{JobId: t.JobId})
	if err != nil {
		a.finish(r, executor.Result{}, fmt.Errorf("job %d: %w", t.JobId, err))
		return true
	}
	r.job = job.Job
	// A run a previous start of this worker left running (executor.ErrDetached) is
	// adopted, on the GPUs it was pinned to, instead of started again.
	detached, adopt := a.o.Executor.Detached(t.Id)
	var short string // why the task cannot have its GPUs now
	var gone bool    // and they are not on the machine
	switch {
	case adopt:
		r.gpus = a.pinAll(t.Id, detached.GPUs)
	case len(t.Devices) > 0:
		// a node with MIG: the chain gave the task exact devices (whole GPUs or MIG
		// instances), which it counts as taken until the task ends
		uuids, err := markettypes.DeviceUUIDs(a.Node(), t.Devices)
		if err != nil {
			a.finish(r, executor.Result{}, fmt.Errorf("task %d: %w", t.Id, err))
			return true
		}
		r.gpus, short, gone = a.pinDevices(t.Id, uuids)
	default:
		r.gpus, short, gone = a.pinFree(t.Id, job.Job.Spec.Requirements.GPUs())
	}
	if short != "" {
		a.mu.Lock()
		delete(a.runs, t.Id)
		a.mu.Unlock()
		a.gpuShortfall(t, short, gone)
		return false
	}
	a.mu.Lock()
	delete(a.gpuWait, t.Id)
	a.mu.Unlock()
	spec := executor.Spec{
		TaskID: t.Id, JobID: t.JobId, Owner: job.Job.Owner, Index: t.Index, Runtime: job.Job.Spec.Runtime, Image: job.Job.Spec.Image,
		Command: job.Job.Spec.ShardCommand(t.Index), Env: job.Job.Spec.Env, Inputs: job.Job.Spec.Inputs, Builtin: job.Job.Spec.Builtin,
		MaxDuration: runLimit(job.Job.Spec.MaxDuration), GPUs: r.gpus, CheckpointInterval: job.Job.Spec.CheckpointInterval,
		MaxDiskBytes: a.params.TaskDiskBytes(job.Job.Spec.Requirements),
	}
	if spec.Runtime == markettypes.RUNTIME_BUILTIN && spec.Image == markettypes.BuiltinGemm {
		c := job.Job.GemmChallenge(t.Index)
		spec.Gemm = &c
	}
	if t.Checkpoint.Sha256 != "" {
		spec.Resume = &executor.Checkpoint{SHA256: t.Checkpoint.Sha256, URI: t.Checkpoint.Uri}
		a.log.Info("resuming from the last checkpoint", "task", t.Id, "sha256", t.Checkpoint.Sha256)
	}
	runCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	workload := job.Job.Spec.Workload.String()
	a.mu.Lock()
	assignedAt := a.blockTime
	if t.AssignedHeight != a.height {
		assignedAt = time.Time{}
	}
	a.mu.Unlock()
	a.background(ctx, func(context.Context) error {
		defer cancel()
		if m := a.o.Metrics; m != nil {
			m.TaskStarted(workload)
			if !assignedAt.IsZero() {
				m.ObserveDispatch(a.since(assignedAt))
			}
		}
		r.meter = gpu.StartMeter(a.o.GPUs, r.gpus, gpu.WithClock(a.o.Now))
		hooks := executor.Hooks{Checkpoint: func(cp executor.Checkpoint) { a.checkpoint(ctx, t.Id, cp) }}
		var res executor.Result
		var err error
		if adopt {
			a.log.Info("re-attached to the running task process", "task", t.Id, "job", t.JobId, "runtime", spec.Runtime, "gpus", r.gpus)
			res, err = a.o.Executor.Adopt(runCtx, t.Id, hooks)
		} else {
			a.log.Info("task started", "task", t.Id, "job", t.JobId, "runtime", spec.Runtime, "image", spec.Image, "gpus", r.gpus)
			res, err = a.o.Executor.Run(runCtx, spec, hooks)
		}
		if errors.Is(err, executor.ErrWorkerShutdown) {
			// Not the task's failure: its process, if it had one, runs on (ErrDetached)
			// for the next start to adopt; otherwise the next start runs it again.
			r.meter.Stop()
			a.log.Info("worker shutting down: task left to the next start", "task", t.Id, "detached", errors.Is(err, executor.ErrDetached))
			return nil
		}
		a.mu.Lock()
		lost := r.lostGPU
		a.mu.Unlock()
		if lost != "" {
			err = fmt.Errorf("%w (%s): the run was stopped: %w", errGPULost, lost, err)
		} else {
			err = a.gpuLostUnder(ctx, r.gpus, err)
		}
		a.finish(r, res, err)
		if m := a.o.Metrics; m != nil {
			if err == nil {
				m.TaskCompleted(workload, a.o.Now().Sub(r.started), r.usage)
			} else {
				m.TaskFailed(workload, failReason(r.job.Spec.Runtime, err), a.o.Now().Sub(r.started))
			}
		}
		// a result, or a verification task's answer that the job failed (finish recorded
		// either and left the run finished); a failed run stays for its report
		a.commitNow(ctx, r)
		return nil
	})
	return true
}

// runLimit is how long a task may run here: its max_duration less a margin in which a
// timed-out run's failure report reaches the chain before the run deadline (the chain
// counts from the ack, which lands a block or more after the run starts here).
func runLimit(max time.Duration) time.Duration {
	return max - min(max/10, 30*time.Second)
}

// failReason is a short cause for the failed-task metric: the reason a failure report
// gives, for a run that failed for the job's sake (jobFault), else "cancelled",
// "gpu_lost" or "error" (this machine's side).
func failReason(runtime markettypes.Runtime, err error) string {
	reason, _, fault := jobFault(runtime, err)
	switch {
	case errors.Is(err, errGPULost):
		return "gpu_lost"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case !fault:
		return "error"
	}
	switch reason {
	case markettypes.FAILURE_REASON_OUT_OF_MEMORY:
		return "oom"
	case markettypes.FAILURE_REASON_TIMEOUT:
		return "timeout"
	case markettypes.FAILURE_REASON_INPUT:
		return "input"
	case markettypes.FAILURE_REASON_IMAGE:
		return "image"
	case markettypes.FAILURE_REASON_DISK:
		return "disk"
	}
	return "exit"
}

// finish records a run's outcome: for a success, the record that lets us reveal.
func (a *Agent) finish(r *run, res executor.Result, err error) {
	usage := r.usage
	if r.meter != nil {
		usage = r.meter.Stop()
	}
	if err == nil {
		var rec record
		rec, err = a.recordResult(r, res, usage)
		if err == nil {
			err = a.state.put(rec)
		}
	} else if r.task.Role != markettypes.TASK_ROLE_PRIMARY && answersFailed(r.job.Spec.Runtime, err) {
		// a verification task's answer is that the job fails: committed and revealed as
		// markettypes.FailedRoot, compared with the result it verifies
		rec, ferr := a.recordFailedRun(r, res, usage)
		if ferr == nil {
			ferr = a.state.put(rec)
		}
		if ferr != nil {
			a.log.Error("the failed run's answer could not be recorded; the task lapses", "task", r.task.Id, "err", ferr)
		} else {
			a.log.Info("the job failed here: this verification task answers that it fails", "task", r.task.Id, "role", r.task.Role, "err", err)
			err = nil
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r.phase, r.err, r.res, r.usage = phaseFinished, err, res, usage
	if err != nil {
		r.phase = phaseFailed
	}
	// The run no longer uses its GPUs: the chain frees the node's slot at the reveal, while
	// the task stays in flight until it settles, so a pin held until then would leave the
	// next task the chain assigns without a GPU.
	a.unpin(r.task.Id)
	if err != nil {
		a.log.Warn("task failed here", "task", r.task.Id, "err", err)
	}
}

// recordResult publishes the outputs and makes the record to commit and reveal with.
func (a *Agent) recordResult(r *run, res executor.Result, usage marketUsage) (record, error) {
	s, err := salt()
	if err != nil {
		return record{}, err
	}
	root := res.Root[:]
	if a.cfg.Cheat && config.CheatBuild {
		// tests of the chain's verification only: a result that skipped the work
		bad := sha256.Sum256(append([]byte("skipped the work"), res.Root[:]...))
		root = bad[:]
	}
	uri := a.cfg.Node.Endpoint
	if a.o.Publisher != nil {
		if uri, err = a.o.Publisher.PublishOutputs(context.Background(), r.task.Id, r.job.Owner, res); err != nil {
			return record{}, fmt.Errorf("publish outputs: %w", err)
		}
	}
	return record{Kind: "task", TaskID: r.task.Id, Root: hexOf(root), Salt: hexOf(s), OutputURI: uri, Usage: usage, Gemm: res.Gemm != nil}, nil
}

// recordFailedRun makes the record of a verification task whose run failed for the job's
// sake: the failed-run root, and the logs published for the owner, as a failure report's
// are.
func (a *Agent) recordFailedRun(r *run, res executor.Result, usage marketUsage) (record, error) {
	s, err := salt()
	if err != nil {
		return record{}, err
	}
	uri := a.publishFailedRun(context.Background(), r.task.Id, r.job.Owner, res)
	if uri == "" {
		uri = a.cfg.Node.Endpoint
	}
	return record{Kind: "task", TaskID: r.task.Id, Root: hexOf(markettypes.FailedRoot()), Salt: hexOf(s), OutputURI: uri, Usage: usage}, nil
}

type marketUsage = markettypes.Usage

// commitNow sends a finished task's commitment right away (the next tick would too, a
// block later), when the task was already running on chain when it was last seen.
func (a *Agent) commitNow(ctx context.Context, r *run) {
	if r.task.Status != markettypes.TASK_STATUS_RUNNING {
		return // its ack may not have landed: the next tick commits
	}
	act, ok := a.commitAction(ctx, r.task)
	if !ok {
		return
	}
	err := a.submit(ctx, act.what, act.msgs...)
	act.after(err)
}

// commitAction is the commitment of a finished run, unless one is on its way.
func (a *Agent) commitAction(_ context.Context, t markettypes.Task) (action, bool) {
	a.mu.Lock()
	r, ok := a.runs[t.Id]
	if !ok || r.phase != phaseFinished {
		a.mu.Unlock()
		return action{}, false
	}
	r.phase = phaseCommitting
	a.mu.Unlock()
	back := func() {
		a.mu.Lock()
		r.phase = phaseFinished // try again next block
		a.mu.Unlock()
	}
	rec, found, err := a.state.get(taskKey(t.Id))
	if err != nil || !found {
		a.log.Error("no readable record of a finished task; the commit is retried", "task", t.Id, "err", err)
		back()
		return action{}, false
	}
	root, _ := hex.DecodeString(rec.Root)
	s, _ := hex.DecodeString(rec.Salt)
	msg := &markettypes.MsgCommitResult{Provider: a.o.Chain.Address().String(), TaskId: t.Id,
		Commitment: markettypes.Commitment(root, s, a.o.Chain.Address())}
	return action{what: fmt.Sprintf("commit task %d", t.Id), msgs: msgs(msg), after: func(err error) {
		if err != nil {
			back()
			return
		}
		a.mu.Lock()
		r.phase = phaseCommitted
		a.mu.Unlock()
		a.log.Info("task committed", "task", t.Id)
	}}, true
}

// revealAction opens a commitment once the chain lets it (every member of its group
// committed: RevealDeadlineHeight is set; and, for a GEMM result, the block whose hash
// draws the samples is committed).
//
// The sampling block is CommitHeight+1. A node simulates a tx in the state of its last
// committed block, whose own hash the beacon does not serve yet, so the worker waits until
// the block after the sampling block is committed: one block later than the chain would
// take the reveal, instead of a failed simulation and a retry.
func (a *Agent) revealAction(ctx context.Context, height int64, t markettypes.Task) (action, bool) {
	if t.RevealDeadlineHeight == 0 || height < t.CommitHeight+2 {
		return action{}, false
	}
	a.mu.Lock()
	r, ok := a.runs[t.Id]
	if !ok {
		// committed before a restart: nothing runs here, the record opens it
		r = &run{task: t, phase: phaseCommitted}
		a.runs[t.Id] = r
	}
	if !r.phase.revealable() {
		a.mu.Unlock()
		return action{}, false
	}
	r.phase = phaseRevealing
	a.mu.Unlock()
	undo := func() {
		a.mu.Lock()
		r.phase = phaseCommitted // try again next block
		a.mu.Unlock()
	}
	rec, found, err := a.state.get(taskKey(t.Id))
	if err != nil || !found {
		a.log.Error("no readable record of a committed task; the reveal is retried (it lapses if none comes)", "task", t.Id, "err", err)
		undo()
		return action{}, false
	}
	root, _ := hex.DecodeString(rec.Root)
	s, _ := hex.DecodeString(rec.Salt)
	msg := &markettypes.MsgRevealResult{Provider: a.o.Chain.Address().String(), TaskId: t.Id, ResultRoot: root, Salt: s,
		OutputUri: rec.OutputURI, Usage: rec.Usage}
	if rec.Gemm {
		proofs, err := a.gemmProofs(ctx, r, t)
		if err != nil {
			a.log.Warn("gemm proofs", "task", t.Id, "err", err)
			undo()
			return action{}, false
		}
		msg.GemmProofs = proofs
	}
	return action{what: fmt.Sprintf("reveal task %d", t.Id), msgs: msgs(msg), after: func(err error) {
		if err != nil {
			undo()
			return
		}
		a.mu.Lock()
		r.phase = phaseRevealed
		a.mu.Unlock()
		a.log.Info("task revealed", "task", t.Id, "output", rec.OutputURI)
	}}, true
}

// gemmProofs opens the entries the chain samples from the block after the commitment;
// after a restart the product is recomputed (it is deterministic).
func (a *Agent) gemmProofs(ctx context.Context, r *run, t markettypes.Task) ([]gfltypes.ChunkProof, error) {
	job, err := a.market.Job(ctx, &markettypes.QueryJobRequest{JobId: t.JobId})
	if err != nil {
		return nil, err
	}
	c := job.Job.GemmChallenge(t.Index)
	if r.res.Gemm == nil {
		res, err := a.o.Executor.Run(ctx, executor.Spec{TaskID: t.Id, JobID: t.JobId, Index: t.Index, Runtime: markettypes.RUNTIME_BUILTIN,
			Image: markettypes.BuiltinGemm, Gemm: &c, MaxDuration: job.Job.Spec.MaxDuration}, executor.Hooks{})
		if err != nil {
			return nil, fmt.Errorf("recompute the product: %w", err)
		}
		r.res = res
	}
	hash, err := a.beaconValue(ctx, t.CommitHeight+1)
	if err != nil {
		return nil, err
	}
	samples, err := a.samples(ctx)
	if err != nil {
		return nil, err
	}
	seed := beacon.Derive(hash, markettypes.DomainGemmSample, t.Id)
	return r.res.Gemm.Proofs(markettypes.GemmSamplePositions(seed, c, samples)), nil
}

// samples is x/gfl's challenge_samples (the entries a reveal opens).
func (a *Agent) samples(ctx context.Context) (uint32, error) {
	p, err := a.gfl.Params(ctx, &gfltypes.QueryParamsRequest{})
	if err != nil {
		return 0, err
	}
	return p.Params.ChallengeSamples, nil
}

// checkpoint publishes a running task's checkpoint; the next tick records it on chain.
func (a *Agent) checkpoint(ctx context.Context, taskID uint64, cp executor.Checkpoint) {
	if a.o.Publisher == nil {
		return
	}
	uri, err := a.o.Publisher.PublishCheckpoint(ctx, taskID, cp)
	if err != nil {
		a.log.Warn("publish checkpoint", "task", taskID, "err", err)
		return
	}
	cp.URI = uri
	a.mu.Lock()
	a.checkpts[taskID] = cp
	a.mu.Unlock()
	a.log.Info("checkpoint", "task", taskID, "sha256", cp.SHA256)
}

// checkpointAction records the newest published checkpoint the chain does not have yet.
func (a *Agent) checkpointAction(t markettypes.Task) (action, bool) {
	a.mu.Lock()
	cp, ok := a.checkpts[t.Id]
	a.mu.Unlock()
	if !ok || cp.SHA256 == t.Checkpoint.Sha256 {
		return action{}, false
	}
	msg := &markettypes.MsgCheckpoint{Provider: a.o.Chain.Address().String(), TaskId: t.Id, Sha256: cp.SHA256, Uri: cp.URI}
	return action{what: fmt.Sprintf("checkpoint task %d", t.Id), msgs: msgs(msg)}, true
}

// stop cancels a task's run (its ack was refused, or it left this node).
func (a *Agent) stop(taskID uint64, why error) {
	a.mu.Lock()
	r, ok := a.runs[taskID]
	if ok {
		delete(a.runs, taskID)
	}
	a.unpin(taskID)
	a.mu.Unlock()
	if ok && r.cancel != nil {
		r.cancel()
	}
	if ok {
		a.log.Info("task stopped here", "task", taskID, "why", why)
	}
}

// forget drops what this machine holds for tasks no longer in flight for it (settled,
// failed, or reassigned elsewhere): runs, GPU pins, records, and the processes a
// previous start of the worker left running for such tasks.
func (a *Agent) forget(active []markettypes.Task) {
	live := map[uint64]bool{}
	for _, t := range active {
		if t.NodeId == a.node.Id {
			live[t.Id] = true
		}
	}
	a.mu.Lock()
	var gone []uint64
	for _, id := range sortedKeys(a.runs) {
		if !live[id] {
			gone = append(gone, id)
		}
	}
	for id := range a.gpuWait {
		if !live[id] {
			delete(a.gpuWait, id) // given to another node, or ended
		}
	}
	a.mu.Unlock()
	detached := map[uint64]bool{}
	for _, id := range a.o.Executor.DetachedTasks() {
		detached[id] = true
		a.mu.Lock()
		_, running := a.runs[id]
		a.mu.Unlock()
		if !live[id] && !running {
			// left running by a previous start, and reassigned or ended since
			a.o.Executor.Abandon(context.Background(), id)
		}
	}
	for _, id := range gone {
		a.stop(id, errors.New("no longer in flight on this node"))
		if err := a.state.del(taskKey(id)); err != nil {
			a.log.Warn("state", "task", id, "err", err)
		}
		a.mu.Lock()
		delete(a.checkpts, id)
		a.mu.Unlock()
	}
	a.removeTaskDirs(live, detached)
}

// removeTaskDirs removes the directories of tasks no longer in flight here (their
// inputs, outputs, checkpoints and scratch files): what the owner fetches was stored with
// the outputs when the run ended. They had stayed for good, so every task a node ran,
// honest or not, kept up to its disk bound on the provider's disk. A run still under way
// (stopping after a cancel) or left running by a previous start is removed at a later
// block. A pool unit's run keeps its directory while this node holds the unit's claim
// (its outputs are published before the commitment; a revealed or forgotten claim needs
// none of it).
func (a *Agent) removeTaskDirs(live, detached map[uint64]bool) {
	a.mu.Lock()
	held := make(map[uint64]bool, len(a.claims)+len(a.runs))
	for _, c := range a.claims {
		held[unitTaskID(c.pool.Id, c.unit.Id)] = true
	}
	for id := range a.runs {
		held[id] = true
	}
	a.mu.Unlock()
	for _, id := range a.o.Executor.TaskDirs() {
		if live[id] || held[id] || detached[id] {
			continue
		}
		if err := a.o.Executor.Cleanup(id); err == nil {
			a.log.Debug("task directory removed", "task", id)
		} else if !errors.Is(err, executor.ErrTaskRunning) {
			a.log.Warn("task directory not removed", "task", id, "err", err)
		}
	}
}

// pin reserves n free GPU (or MIG) UUIDs for a task or a pool unit, all or none.
func (a *Agent) pin(taskID uint64, n uint32) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	free := a.freeUnits()
	if uint32(len(free)) < n {
		return nil, false
	}
	for _, u := range free[:n] {
		a.pinned[u] = taskID
	}
	return free[:n], true
}

// gpusHeldByTasks counts the GPU (or MIG) UUIDs the chain's tasks hold here: pool units
// give theirs up for a task (pinFree), so the bidder counts them free (a.mu held).
func (a *Agent) gpusHeldByTasks() uint32 {
	n := uint32(0)
	for _, id := range a.pinned {
		if !isUnitRun(id) {
			n++
		}
	}
	return n
}

// freeUnits are the machine's GPU (or MIG) UUIDs no run holds (a.mu held).
func (a *Agent) freeUnits() []string {
	var free []string
	for _, u := range a.units {
		if _, used := a.pinned[u]; !used {
			free = append(free, u)
		}
	}
	return free
}

// A task runs only on as many GPUs as its job asks for, and on a node with MIG only on
// the devices the chain gave it. The chain counts those as free on the node, and the
// machine may not have them free:
//   - pool units claimed here hold them (the chain does not count a pool's units on the
//     node's GPUs): the task comes first, and the units it needs are given up (their race
//     is lost, nothing is on chain yet) for the task to start at the next tick;
//   - a card failed and the chain keeps the node's spec with it while the node's tasks
//     in flight need its GPUs (refreshNode sends the spec without it again at every
//     block, and it lands once they no longer do);
//   - a run the chain no longer has on the node holds them until forget stops it, after
//     this tick's actions.
//
// Such a task waits, unacked, and pool units claim nothing meanwhile; one whose GPUs are
// not on the machine (more than it has, or a device the chain gave it that is gone) is
// given back at once (MsgReleaseTask: it goes to another node, and the release costs
// abandon_slash_ppm of the provider's collateral, as the ack's lapse would: its hardware
// failed the task). Before, it ran on the GPUs that were free, or on none, so a job that
// paid for eight GPUs ran on seven, or a GPU job ran on none and failed, and its failure
// report was refuted.

// pinFree reserves n free GPU (or MIG) UUIDs for a task, or says why it cannot, giving up
// the pool units that hold the ones it lacks if that is enough.
func (a *Agent) pinFree(taskID uint64, n uint32) (pinned []string, why string, gone bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	free := a.freeUnits()
	if uint32(len(free)) >= n {
		for _, u := range free[:n] {
			a.pinned[u] = taskID
		}
		return free[:n], "", false
	}
	if uint32(len(a.units)) < n {
		return nil, fmt.Sprintf("it needs %d GPUs and the machine has %d", n, len(a.units)), true
	}
	lack := int(n) - len(free)
	var units []string // held by pool units, in the machine's order
	for _, u := range a.units {
		if id, used := a.pinned[u]; used && isUnitRun(id) {
			units = append(units, u)
		}
	}
	if len(units) >= lack {
		given := a.giveUpUnits(units[:lack])
		return nil, fmt.Sprintf("%d of the %d GPUs it needs are free; pool units %s give theirs up", len(free), n, given), false
	}
	// The machine has fewer GPUs than its node on the chain (a card lost, and the node's
	// spec without it refused while tasks held its GPUs): the chain counted GPUs free that
	// are not, and the task's would come free only as other tasks end, long after its ack
	// deadline.
	if registered := len(gfltypes.SchedulableUUIDs(a.node.Gpus)); len(a.units) < registered {
		return nil, fmt.Sprintf("%d of the %d GPUs it needs are free, and the machine has %d of the %d its node has on the chain", len(free), n, len(a.units), registered), true
	}
	return nil, fmt.Sprintf("%d of the %d GPUs it needs are free", len(free), n), false
}

// pinDevices reserves the GPU (or MIG) UUIDs the chain gave a task on a node with MIG, or
// says why it cannot, giving up the pool units that hold them if that is enough.
func (a *Agent) pinDevices(taskID uint64, uuids []string) (pinned []string, why string, gone bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var held []string
	for _, u := range uuids {
		if !slices.Contains(a.units, u) {
			return nil, fmt.Sprintf("device %s is not on the machine", u), true
		}
		id, used := a.pinned[u]
		switch {
		case !used || id == taskID:
		case isUnitRun(id):
			held = append(held, u)
		default:
			return nil, fmt.Sprintf("device %s is held by task %d", u, id), false
		}
	}
	if len(held) > 0 {
		return nil, fmt.Sprintf("pool units %s give its devices up", a.giveUpUnits(held)), false
	}
	for _, u := range uuids {
		a.pinned[u] = taskID
	}
	return uuids, "", false
}

// gpuShortfall records that a task cannot have its GPUs (why and gone: pinFree's or
// pinDevices'), and says so once while it waits for them.
func (a *Agent) gpuShortfall(t markettypes.Task, why string, gone bool) {
	a.mu.Lock()
	w, said := a.gpuWait[t.Id]
	a.gpuWait[t.Id] = gpuWait{why: why, gone: gone, releasing: w.releasing}
	a.mu.Unlock()
	if !said && !gone {
		a.log.Warn("the task waits for the GPUs the chain gave it, unacked: it does not run short of them; still waiting at its ack deadline, it goes to another node",
			"task", t.Id, "job", t.JobId, "status", t.Status, "why", why, "ack_deadline_height", t.AckDeadlineHeight)
	}
}

// gpuWait is why a task waits for its GPUs (gpuShortfall); gone: they are not on the
// machine, and the task is given back (releasing: that is on its way).
type gpuWait struct {
	why             string
	gone, releasing bool
}

// gpusGoneAction gives back a task whose GPUs are not on the machine, once at a time.
func (a *Agent) gpusGoneAction(t markettypes.Task) (action, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w := a.gpuWait[t.Id]
	if !w.gone || w.releasing {
		return action{}, false
	}
	w.releasing = true
	a.gpuWait[t.Id] = w
	return a.releaseTask(t, "its GPUs are not on the machine: "+w.why, func(err error) {
		if err != nil {
			a.mu.Lock()
			if w, ok := a.gpuWait[t.Id]; ok {
				w.releasing = false // tried again at the next tick
				a.gpuWait[t.Id] = w
			}
			a.mu.Unlock()
		}
	}), true
}

// gpuLostUnder wraps a failed run's error in errGPULost when a GPU it ran on is no longer
// on the machine, read again now: the run failed on the machine's side, and the task is
// given back (releaseAction), where a report of the job's failure would be refuted by
// another node's result.
func (a *Agent) gpuLostUnder(ctx context.Context, gpus []string, err error) error {
	if err == nil || a.mockGPUs || len(gpus) == 0 || errors.Is(err, context.Canceled) || errors.Is(err, executor.ErrWorkerShutdown) {
		return err
	}
	devs, derr := a.offerableGPUs(ctx)
	if derr != nil {
		a.log.Warn("GPU inventory, after a run failed", "err", derr)
		return err
	}
	have := gpu.SchedulableUUIDs(devs)
	for _, u := range gpus {
		if !slices.Contains(have, u) {
			return fmt.Errorf("%w (%s): %w", errGPULost, u, err)
		}
	}
	return err
}

// pinAll reserves the given GPU (or MIG) UUIDs for a task: those an adopted run was
// started on.
func (a *Agent) pinAll(taskID uint64, uuids []string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range uuids {
		if other, used := a.pinned[u]; used && other != taskID {
			a.log.Warn("a device the chain gave a task is pinned to another", "task", taskID, "device", u, "other", other)
		}
		a.pinned[u] = taskID
	}
	return uuids
}

// unpin frees a task's GPUs (a.mu held).
func (a *Agent) unpin(taskID uint64) {
	for u, id := range a.pinned {
		if id == taskID {
			delete(a.pinned, u)
		}
	}
}

func msgs(m ...sdk.Msg) []sdk.Msg { return m }
