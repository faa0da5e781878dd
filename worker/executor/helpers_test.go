package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// testWriter sends log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newTestExecutor is an executor in a fresh directory with fast polls and kills, its
// PROCESS tasks unsandboxed (the tests of process supervision talk to them through host
// paths); sandbox_test.go tests the sandbox.
func newTestExecutor(t *testing.T, mod func(*Options)) *Executor {
	t.Helper()
	o := Options{
		WorkDir:        t.TempDir(),
		Log:            slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Workers:        2,
		CheckpointPoll: 40 * time.Millisecond,
		KillGrace:      300 * time.Millisecond,
		Sandbox:        Sandbox{Off: true},
		// the tests' images are held by the runtime (localhost/ builds, the fake
		// runtime's): TestAttackJobRunsAnImageTheProviderHolds turns this off
		LocalImages: true,
	}
	if mod != nil {
		mod(&o)
	}
	e, err := New(o)
	require.NoError(t, err)
	return e
}

// shellSpec is a PROCESS task running script with sh.
func shellSpec(taskID uint64, script string) Spec {
	return Spec{
		TaskID:  taskID,
		JobID:   7,
		Index:   2,
		Runtime: markettypes.RUNTIME_PROCESS,
		Command: []string{"sh", "-c", script},
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readPID reads a pid a test script wrote.
func readPID(t *testing.T, p string) int {
	t.Helper()
	var b []byte
	require.Eventually(t, func() bool {
		var err error
		b, err = os.ReadFile(p)
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	}, 5*time.Second, 10*time.Millisecond, "pid file %s", p)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// killOnCleanup makes sure a process a failing test left behind does not outlive it.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}
