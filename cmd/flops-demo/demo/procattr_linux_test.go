package demo

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/proctest"
)

// A demo killed outright (SIGKILL: nothing of it runs to stop its children) takes the
// processes it started with it: before, its workers kept running, holding their ports,
// and the next demo's workers failed to listen on them.
func TestDemoKilledLeavesNoChildRunning(t *testing.T) {
	if os.Getenv("FLOPS_DEMO_KILLED_CHILD") == "1" {
		// the demo's side, in a process of its own that the test kills
		sleep, err := exec.LookPath("sleep")
		require.NoError(t, err)
		d := &Demo{}
		p, err := d.start("sleeper", filepath.Join(os.Getenv("FLOPS_DEMO_KILLED_DIR"), "sleeper.log"), sleep, "600")
		require.NoError(t, err)
		fmt.Printf("child %d\n", p.cmd.Process.Pid)
		time.Sleep(10 * time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDemoKilledLeavesNoChildRunning$", "-test.count=1") //nolint:gosec // this test binary
	cmd.Env = append(os.Environ(), "FLOPS_DEMO_KILLED_CHILD=1", "FLOPS_DEMO_KILLED_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "child "); ok {
			child, err = strconv.Atoi(f)
			require.NoError(t, err)
			break
		}
	}
	require.NotZero(t, child, "the demo's side started its child")
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.False(t, proctest.Gone(child), "the child runs while the demo does")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return proctest.Gone(child) }, 10*time.Second, 20*time.Millisecond,
		"the child of a demo killed with SIGKILL is still running")
}
