//go:build linux

package proctest

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGone(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.False(t, Gone(cmd.Process.Pid), "a running process")

	require.NoError(t, cmd.Process.Kill())
	// killed, not yet waited for: a zombie, which signal 0 still reaches
	require.Eventually(t, func() bool { return Gone(cmd.Process.Pid) }, 5e9, 1e7, "a zombie is gone")
	_ = cmd.Wait()
	require.True(t, Gone(cmd.Process.Pid), "a reaped process")
}
