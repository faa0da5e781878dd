package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/flopsnet/flops/worker/executor"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Failure is a result (x/market/README.md, "Failure is a result"): a run that failed on
// the job's side of the contract is reported to the chain with its reason, exit code and
// the root of its captured logs, which are published like outputs so that the owner can
// read them. The chain runs the task again on another operator's node: a second failure
// confirms the report (both are paid the confirmed time), a result elsewhere refutes it
// (this provider is slashed).
//
// A run that failed on this machine's side (jobFault says no: a runtime it lacks, a spec
// it cannot run, a GPU lost under the run, its own errors) is released (MsgReleaseTask):
// the task goes to another node at once, at what its lapse would cost (abandon_slash_ppm),
// instead of the job waiting for that lapse. So is a verification task's run that failed
// without answering (a timeout or the OOM killer: another machine may do better), which
// the chain would refuse as a report.
//
// A verification task (an audit, a tie's escalation, a committee member) does not report:
// it reruns work that produced a result, and its run's failure, where every machine would
// fail alike (answersFailed), is its answer: it commits and reveals markettypes.FailedRoot,
// which the chain compares with the result like any other root. A made-up result for a job
// that fails is then outvoted, where its auditors used to lapse and be slashed.

// errGPULost: a GPU a run was given is gone from the machine (NVML reports it lost): the
// run failed on the machine's side, whatever the job's command said (gpuLostUnder).
var errGPULost = errors.New("a GPU of the run is gone from the machine")

// jobFault says whether a run's error is the job's fault, and how to report it.
func jobFault(runtime markettypes.Runtime, err error) (markettypes.FailureReason, int32, bool) {
	var exit *executor.ExitError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, executor.ErrWorkerShutdown),
		errors.Is(err, executor.ErrNoContainerRuntime), errors.Is(err, executor.ErrInvalidSpec), errors.Is(err, executor.ErrTaskLost),
		errors.Is(err, errGPULost):
		return 0, 0, false
	case errors.Is(err, executor.ErrMaxDuration):
		return markettypes.FAILURE_REASON_TIMEOUT, 0, true
	case errors.Is(err, executor.ErrDiskQuota):
		// every worker holds a task to the chain's task_disk_mib_per_gpu: another
		// operator's run of it fills its disk too, and confirms the report
		return markettypes.FAILURE_REASON_DISK, 0, true
	case errors.Is(err, executor.ErrImage):
		// its registry does not serve the pinned image, or the image, as listed or as its
		// layers unpack, is larger than the task's disk (the chain's disk per GPU): alike on
		// every worker
		return markettypes.FAILURE_REASON_IMAGE, 0, true
	case errors.Is(err, executor.ErrInputDigest), errors.Is(err, executor.ErrInputFetch):
		return markettypes.FAILURE_REASON_INPUT, 0, true
	case errors.As(err, &exit):
		switch {
		case exit.Signal == "killed" || (runtime == markettypes.RUNTIME_CONTAINER && exit.Code == 137):
			// SIGKILL that the worker did not send: the kernel's OOM killer (or the
			// container engine's memory limit)
			return markettypes.FAILURE_REASON_OUT_OF_MEMORY, 137, true
		case exit.Signal != "":
			return markettypes.FAILURE_REASON_EXIT, -1, true
		case runtime == markettypes.RUNTIME_CONTAINER && exit.Code == 125:
			// docker and podman exit 125 when the engine cannot pull or create the image's
			// container
			return markettypes.FAILURE_REASON_IMAGE, 125, true
		}
		return markettypes.FAILURE_REASON_EXIT, int32(exit.Code), true
	}
	return 0, 0, false
}

// failureAction reports a run that failed for the job's sake, once, while the chain shows
// the task running here.
func (a *Agent) failureAction(ctx context.Context, t markettypes.Task) (action, bool) {
	a.mu.Lock()
	r, ok := a.runs[t.Id]
	if !ok || r.phase != phaseFailed {
		a.mu.Unlock()
		return action{}, false
	}
	reason, code, fault := jobFault(r.job.Spec.Runtime, r.err)
	if !fault || r.task.Role != markettypes.TASK_ROLE_PRIMARY {
		a.mu.Unlock()
		return action{}, false // releaseAction's
	}
	r.phase = phaseReporting
	res, runErr := r.res, r.err
	a.mu.Unlock()
	back := func() {
		a.mu.Lock()
		r.phase = phaseFailed // try again next block
		a.mu.Unlock()
	}
	logRoot, err := executor.ManifestRoot(res.Logs)
	if err != nil {
		a.log.Error("task logs unreadable; the failure is not reported and the task lapses", "task", t.Id, "err", err)
		return action{}, false
	}
	a.publishFailedRun(ctx, t.Id, r.job.Owner, res)
	msg := &markettypes.MsgReportFailure{Provider: a.o.Chain.Address().String(), TaskId: t.Id, Reason: reason, ExitCode: code,
		LogRoot: logRoot[:], Detail: failureDetail(runErr)}
	return action{what: fmt.Sprintf("report task %d failed", t.Id), msgs: msgs(msg), after: func(err error) {
		if err != nil {
			back()
			return
		}
		a.mu.Lock()
		r.phase = phaseReported
		a.mu.Unlock()
		a.log.Info("task failure reported: it runs again elsewhere to confirm it", "task", t.Id, "reason", reason, "exit_code", code)
	}}, true
}

// releaseAction gives back a task whose run failed here on this machine's side, or (a
// verification task) without answering, once, while the chain shows it on this node.
func (a *Agent) releaseAction(t markettypes.Task) (action, bool) {
	a.mu.Lock()
	r, ok := a.runs[t.Id]
	if !ok || r.phase != phaseFailed {
		a.mu.Unlock()
		return action{}, false // no run here (stopped meanwhile), or not failed
	}
	if (errors.Is(r.err, context.Canceled) && !errors.Is(r.err, errGPULost)) || errors.Is(r.err, executor.ErrWorkerShutdown) {
		a.mu.Unlock()
		return action{}, false // stopped by this worker (its run is gone or left to the next start)
	}
	if _, _, fault := jobFault(r.job.Spec.Runtime, r.err); fault && r.task.Role == markettypes.TASK_ROLE_PRIMARY {
		a.mu.Unlock()
		return action{}, false // failureAction's
	}
	r.phase = phaseReporting
	why := failureDetail(r.err)
	if errors.Is(r.err, errGPULost) {
		why = errGPULost.Error() + ": " + why
	}
	a.mu.Unlock()
	return a.releaseTask(t, why, func(err error) {
		a.mu.Lock()
		r.phase = phaseReported
		if err != nil {
			r.phase = phaseFailed // try again next block
		}
		a.mu.Unlock()
	}), true
}

// releaseTask is the action that gives a task back to the chain (MsgReleaseTask), why in
// its history; after is told how it went.
func (a *Agent) releaseTask(t markettypes.Task, why string, after func(error)) action {
	msg := &markettypes.MsgReleaseTask{Provider: a.o.Chain.Address().String(), TaskId: t.Id, Reason: executor.PrintableLine(why, markettypes.MaxFailureDetailLen)}
	return action{what: fmt.Sprintf("release task %d", t.Id), msgs: msgs(msg), after: func(err error) {
		if err == nil {
			a.log.Warn("task given back to the chain: this machine cannot run it; it goes to another node, at the cost of a lapse (abandon_slash_ppm)", "task", t.Id, "job", t.JobId, "why", why)
		}
		after(err)
	}}
}

// publishFailedRun publishes a failed run's logs (and whatever the job wrote) for the
// owner, who reads them as it reads outputs; it returns where ("" when nothing was).
func (a *Agent) publishFailedRun(ctx context.Context, taskID uint64, owner string, res executor.Result) string {
	if a.o.Publisher == nil || res.OutputDir == "" {
		return ""
	}
	files, err := executor.ManifestRoot(res.Files)
	if err != nil {
		return ""
	}
	res.Root = files
	uri, err := a.o.Publisher.PublishOutputs(ctx, taskID, owner, res)
	if err != nil {
		a.log.Warn("publish the failed task's logs", "task", taskID, "err", err)
		return ""
	}
	return uri
}

// answersFailed says whether a verification task's run that failed with err answers that
// the job fails (markettypes.FailedRoot, x/market/README.md "Failure is a result"): a
// clean non-zero exit, a disk filled past the chain's limit, an image (as its registry
// lists it or as its layers unpack) or inputs larger than the task's disk, or an input whose bytes do not match its digest, which
// every machine meets alike. A timeout, the OOM killer, a
// signal, an image or an input that could not be fetched depend on the machine or the
// network: such a run is no answer (the task lapses, as a primary's run of it would be
// reported and confirmed elsewhere), since a machine that runs the job faster, with more
// memory or a better network may have produced the result being verified.
func answersFailed(runtime markettypes.Runtime, err error) bool {
	reason, code, fault := jobFault(runtime, err)
	switch {
	case !fault:
		return false
	case reason == markettypes.FAILURE_REASON_EXIT:
		return code > 0
	case reason == markettypes.FAILURE_REASON_DISK:
		return true
	case reason == markettypes.FAILURE_REASON_INPUT:
		return errors.Is(err, executor.ErrInputDigest) || errors.Is(err, executor.ErrInputTooLarge)
	case reason == markettypes.FAILURE_REASON_IMAGE:
		return errors.Is(err, executor.ErrImageTooLarge)
	}
	return false
}

// failureDetail says a failure in words for the chain, which everyone reads: never the
// job's own output (its stderr stays in the logs, for the owner).
func failureDetail(err error) string {
	var exit *executor.ExitError
	d := err.Error()
	if errors.As(err, &exit) {
		d = fmt.Sprintf("command exited with code %d", exit.Code)
		if exit.Signal != "" {
			d = "command killed by signal " + exit.Signal
		}
	}
	return executor.PrintableLine(d, markettypes.MaxFailureDetailLen)
}
