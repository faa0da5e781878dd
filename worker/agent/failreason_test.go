package agent

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/executor"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The failed-task metric's reason is the one the failure report gives (the kernel's
// OOM kill is "oom", a job over its disk "disk"), and "cancelled", "gpu_lost" or "error"
// for a run that failed on this machine's side.
func TestFailReasonFollowsTheReport(t *testing.T) {
	for _, c := range []struct {
		runtime markettypes.Runtime
		err     error
		want    string
	}{
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("task 1: %w", context.Canceled), "cancelled"},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("task 1 stopped: %w (10m0s)", executor.ErrMaxDuration), "timeout"},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("%w: its directories hold more than 1 bytes of disk", executor.ErrDiskQuota), "disk"},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("input x: %w", executor.ErrInputDigest), "input"},
		{markettypes.RUNTIME_PROCESS, &executor.ExitError{Code: -1, Signal: "killed"}, "oom"},
		{markettypes.RUNTIME_CONTAINER, &executor.ExitError{Code: 137}, "oom"},
		{markettypes.RUNTIME_CONTAINER, &executor.ExitError{Code: 125}, "image"},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: image x is 9 bytes", executor.ErrImageTooLarge), "image"},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: image x: not found", executor.ErrImage), "image"},
		{markettypes.RUNTIME_PROCESS, &executor.ExitError{Code: 2}, "exit"},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: docker", executor.ErrNoContainerRuntime), "error"},
		{markettypes.RUNTIME_PROCESS, errors.New("disk full on the worker's side"), "error"},
		// an exit on a card that fell off the bus is the machine's failure
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("%w (GPU-0): %w", errGPULost, &executor.ExitError{Code: 3}), "gpu_lost"},
	} {
		require.Equal(t, c.want, failReason(c.runtime, c.err), "%v", c.err)
	}
}

// A verification task answers that the job fails only for the failures every machine
// meets alike: a clean non-zero exit, a disk past the chain's limit, an image larger than
// the task's disk, an input whose bytes do not match its digest. A timeout, an OOM kill, a signal, an image or input that could
// not be fetched, or this machine's own errors are no answer (the task lapses): a faster,
// larger or better-connected machine may have produced the result under verification.
func TestVerificationAnswersOnlyMachineIndependentFailures(t *testing.T) {
	for _, c := range []struct {
		runtime markettypes.Runtime
		err     error
		answers bool
	}{
		{markettypes.RUNTIME_PROCESS, &executor.ExitError{Code: 2}, true},
		{markettypes.RUNTIME_CONTAINER, &executor.ExitError{Code: 1}, true},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("%w: its directories hold more than 1 bytes of disk", executor.ErrDiskQuota), true},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("input x: %w", executor.ErrInputDigest), true},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("input x: %w", executor.ErrInputFetch), false},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("input x: %w", executor.ErrInputTooLarge), true},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("task 1 stopped: %w (10m0s)", executor.ErrMaxDuration), false},
		{markettypes.RUNTIME_PROCESS, &executor.ExitError{Code: -1, Signal: "killed"}, false},
		{markettypes.RUNTIME_PROCESS, &executor.ExitError{Code: -1, Signal: "segmentation fault"}, false},
		{markettypes.RUNTIME_CONTAINER, &executor.ExitError{Code: 137}, false},
		{markettypes.RUNTIME_CONTAINER, &executor.ExitError{Code: 125}, false},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: image x is 9 bytes", executor.ErrImageTooLarge), true},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: image x: its registry does not serve it", executor.ErrImage), false},
		{markettypes.RUNTIME_PROCESS, fmt.Errorf("task 1: %w", context.Canceled), false},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: docker", executor.ErrNoContainerRuntime), false},
		{markettypes.RUNTIME_PROCESS, errors.New("disk full on the worker's side"), false},
	} {
		require.Equal(t, c.answers, answersFailed(c.runtime, c.err), "%v", c.err)
	}
}
