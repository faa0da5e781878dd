package agent_test

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/config"
)

// A task's directory (its inputs, outputs, checkpoints, scratch) stayed on the provider's
// disk for good once the task was over, beside the copy of its outputs the owner fetches:
// every job a node ran, honest or not, kept up to its disk bound there, and a client's
// stream of cheap jobs filled the provider's disk. Once the task is no longer in flight
// here its directory is removed, and the owner still gets the outputs from the store; a
// directory a previous start of the worker left for a task long gone is removed too.
func TestAttackJobsFillTheDiskWithTaskDirectories(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	home := t.TempDir()
	w := newWorkerIn(t, &mu, a, "p1", home, nil)
	tasksDir := filepath.Join(home, "work", "tasks")
	orphan := filepath.Join(tasksDir, "424242", "output")
	require.NoError(t, os.MkdirAll(orphan, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(orphan, "left.bin"), make([]byte, 1<<20), 0o644))

	j := job(t, a, processSpec(a, `head -c 1048576 /dev/zero > "$FLOPS_OUTPUT_DIR/big"; echo done > "$FLOPS_OUTPUT_DIR/r"`))
	untilCompleted(t, a, 40, w, j.Id)
	id := tasksOfJob(t, a, j.Id)[0].Id
	gone := func(dir string) func() bool {
		return func() bool {
			_, err := os.Stat(dir)
			return os.IsNotExist(err)
		}
	}
	until(t, a, 10, "the task's directory removed", gone(filepath.Join(tasksDir, strconv.FormatUint(id, 10))), w)
	until(t, a, 10, "the orphan directory removed", gone(filepath.Dir(orphan)), w)

	f, _, err := w.store.OpenFile(id, "r")
	require.NoError(t, err, "the owner still gets the outputs")
	b, err := io.ReadAll(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	require.Equal(t, "done\n", string(b))
}

// A pool unit's run directory went the way of a task's: kept for good. Once the node
// no longer holds the unit's claim (revealed and paid), it is removed; the pool's owner
// still gets the unit's outputs from the store.
func TestPoolUnitDirectoriesRemovedOnceRevealed(t *testing.T) {
	a := appWithProviders(t, "p1")
	var mu sync.Mutex
	home := t.TempDir()
	w := newWorkerIn(t, &mu, a, "p1", home, func(c *config.Config) { c.Pools.Auto = true; c.Pools.MaxClaims = 1 })
	runOneUnitPool(t, a, w, `head -c 65536 /dev/zero > "$FLOPS_OUTPUT_DIR/scratch"; echo ok > "$FLOPS_OUTPUT_DIR/out"`)
	tasksDir := filepath.Join(home, "work", "tasks")
	until(t, a, 10, "the unit's run directory removed", func() bool {
		entries, err := os.ReadDir(tasksDir)
		require.NoError(t, err)
		return len(entries) == 0
	}, w)
	f, _, err := w.store.OpenFile(1<<63|1<<32|1, "out") // pool 1's first unit (agent's unitTaskID)
	require.NoError(t, err, "the pool's owner still gets the unit's outputs")
	require.NoError(t, f.Close())
}
