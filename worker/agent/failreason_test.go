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
// OOM kill is "oom", a job over its disk "disk"), and "cancelled" or "error" for a run
// that failed on this machine's side.
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
		{markettypes.RUNTIME_PROCESS, &executor.ExitError{Code: 2}, "exit"},
		{markettypes.RUNTIME_CONTAINER, fmt.Errorf("%w: docker", executor.ErrNoContainerRuntime), "error"},
		{markettypes.RUNTIME_PROCESS, errors.New("disk full on the worker's side"), "error"},
	} {
		require.Equal(t, c.want, failReason(c.runtime, c.err), "%v", c.err)
	}
}
