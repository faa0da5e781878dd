//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/config"
)

// checkWorkerStatus: `flops-worker status`, run as a provider runs it (the binary, the
// worker's config written out as YAML), shows the worker's node and the task in flight
// on it. It lists each node's tasks in flight page by page (worker/chain TasksInFlight):
// it used to read one page of the provider's, which may end short of its tasks, and
// print fewer tasks in flight than there are. The command starts at once, beside what the
// test does while the task runs; the returned func waits for it and checks its output.
func checkWorkerStatus(t *testing.T, w *testWorker, taskID uint64) func() {
	t.Helper()
	bin, cfg, home := workerCLI(t, w)
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "status", "--config", cfg, "--home", home).CombinedOutput() //nolint:gosec // our binary
		done <- result{out, err}
	}()
	return func() {
		t.Helper()
		r := <-done
		out := string(r.out)
		require.NoError(t, r.err, out)
		require.Contains(t, out, fmt.Sprintf("node %d: ", w.nodeID))
		require.Contains(t, out, "  1 tasks in flight\n", out)
		require.Contains(t, out, fmt.Sprintf("  task %d (job ", taskID), out)
	}
}

// workerCLI is what a provider runs flops-worker's commands with beside w: the binary,
// w's config written out as YAML, and a home of its own.
func workerCLI(t *testing.T, w *testWorker) (bin, cfg, home string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin = filepath.Join(binaries(t, root), "flops-worker")
	cfg = filepath.Join(t.TempDir(), "worker.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(config.Render(w.cfg)), 0o600))
	return bin, cfg, t.TempDir()
}
