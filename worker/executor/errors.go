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
	// ErrInputDigest: an input's content does not match the sha256 the job names.
	ErrInputDigest = errors.New("input sha256 mismatch")
	// ErrMaxDuration: the task ran past Spec.MaxDuration and was killed.
	ErrMaxDuration = errors.New("task exceeded its max duration")
	// ErrNoContainerRuntime: a CONTAINER task on a machine with neither docker nor
	// podman (or without the one Options.ContainerRuntime names).
	ErrNoContainerRuntime = errors.New("no container runtime")
	// ErrTaskRunning: Run was called for a task this executor is already running.
	ErrTaskRunning = errors.New("task already running")
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
