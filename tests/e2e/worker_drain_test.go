//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// checkWorkerDrain: the provider of a running task takes its machine down as the README
// says, `flops-worker drain --wait` (the binary, the worker's config written out as
// YAML, beside the running worker): the command hands the drain to the worker, which
// sends it with its own transactions (the command signing with the same key raced the
// worker for its sequence: the worker's heartbeat waited out the chain's heartbeat
// timeout, and the task lapsed), the node leaves the market, its task runs to its end,
// and the command returns once the chain deactivated the node. `flops-worker drain
// --cancel` then puts it back. It starts at once, beside what the test does while the
// task runs; the returned func waits for it and checks.
func checkWorkerDrain(t *testing.T, wc *workerChain, w *testWorker) func() {
	t.Helper()
	bin, cfg, home := workerCLI(t, w)
	drain := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"drain", "--config", cfg, "--home", home}, args...)...).CombinedOutput() //nolint:gosec // our binary
		return string(out), err
	}
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := drain("--wait")
		done <- result{out, err}
	}()
	return func() {
		t.Helper()
		r := <-done
		require.NoError(t, r.err, r.out)
		require.Contains(t, r.out, fmt.Sprintf("node %d is draining: no new work; it is deactivated when its 1 tasks in flight end", w.nodeID), r.out)
		require.Contains(t, r.out, fmt.Sprintf("node %d drained: deactivated, its collateral unlocked", w.nodeID), r.out)
		n, err := wc.client.GFL.Node(context.Background(), &gfltypes.QueryNodeRequest{NodeId: w.nodeID})
		require.NoError(t, err)
		require.Equal(t, gfltypes.NODE_STATUS_INACTIVE, n.Node.Status)
		require.True(t, w.logs.saidThat("sending its operator's drain of the node"), "%s was handed the drain, to send with its own transactions", w.name)
		require.True(t, w.logs.saidThat("the node drained: deactivated"), "%s saw its node drained", w.name)

		out, err := drain("--cancel")
		require.NoError(t, err, out)
		require.Contains(t, out, fmt.Sprintf("node %d is NODE_STATUS_ACTIVE again", w.nodeID), out)
	}
}
