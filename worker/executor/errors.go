package executor

import (
	"errors"
	"fmt"
)

// Sentinels for the ways a task fails; Run wraps them with the offending value.
var (
	// ErrInvalidSpec: the spec cannot be run (unknown runtime or workload, a malformed
	// image, GPU id or checkpoint).
	ErrInvalidSpec = errors.New("invalid task spec")
	// ErrInputFetch: an input could not be downloaded.
	ErrInputFetch = errors.New("input fetch failed")
	// ErrInputTooLarge: the inputs come to more than the task's disk (Spec.MaxDiskBytes):
	// the same on every machine, since their content is pinned by digest and the bound is
	// the chain's. It is an ErrInputFetch.
	ErrInputTooLarge = fmt.Errorf("%w: the inputs are larger than the task's disk", ErrInputFetch)
	// ErrInputDigest: an input's content does not match the sha256 the job names.
	ErrInputDigest = errors.New("input sha256 mismatch")
	// ErrMaxDuration: the task ran past Spec.MaxDuration and was killed.
	ErrMaxDuration = errors.New("task exceeded its max duration")
	// ErrDiskQuota: the task's directories held more than Spec.MaxDiskBytes, or more than
	// MaxOutputFiles files, and it was killed (disk.go).
	ErrDiskQuota = errors.New("task filled more disk than it may")
	// ErrNoContainerRuntime: a CONTAINER task on a machine with neither docker nor
	// podman (or without the one Options.ContainerRuntime names).
	ErrNoContainerRuntime = errors.New("no container runtime")
	// ErrNoSandbox: the sandbox PROCESS tasks run in cannot be set up (bubblewrap or
	// util-linux missing, a private path in the tasks' view, a GPU without its device
	// node).
	ErrNoSandbox = errors.New("no sandbox")
	// ErrTaskRunning: Run was called for a task this executor is already running.
	ErrTaskRunning = errors.New("task already running")
	// ErrWorkerShutdown is the cancellation cause (context.WithCancelCause) of a worker
	// that shuts down: a PROCESS or CONTAINER task then keeps running, detached, for the
	// next start of the worker to adopt (Adopt), instead of being killed.
	ErrWorkerShutdown = errors.New("worker shutting down")
	// ErrDetached: Run or Adopt returned on a worker shutdown and left the task's process
	// group running; its run record stays in the task directory (Detached).
	ErrDetached = errors.New("task left running, detached from the worker")
	// ErrTaskLost: Adopt found the recorded process gone without an exit status (killed
	// with its wrapper, or the machine rebooted); the task must start again.
	ErrTaskLost = errors.New("task process gone without an exit status")
)

// ExitError is a PROCESS or CONTAINER task whose command exited unsuccessfully.
type ExitError struct {
	// Code is the exit status, or -1 when the process was ended by a signal.
	Code int
	// Signal names the signal that ended the process, if one did.
	Signal string
	// Stderr is the end of the captured standard error (at most 1 KiB), for the log.
	Stderr string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("task command exited with code %d", e.Code)
	if e.Signal != "" {
		msg = "task command was killed by signal " + e.Signal
	}
	if e.Stderr != "" {
		msg += "; stderr ends with: " + e.Stderr
	}
	return msg
}
