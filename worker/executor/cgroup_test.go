package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cgroup2Root is a writable cgroup v2 mount of this machine, "" if none.
func cgroup2Root() string {
	bz, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(bz), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && checkCgroup(f[4]) == nil {
			return f[4]
		}
	}
	return ""
}

// With a delegated cgroup, a sandboxed task runs in a cgroup of its own (the limits of
// the controllers offered are set), which is killed and removed when the task ends.
func TestSandboxCgroup(t *testing.T) {
	root := cgroup2Root()
	if root == "" {
		t.Skip("no writable cgroup v2 mount here")
	}
	parent, err := os.MkdirTemp(root, "flops-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.Remove(parent) })
	e := newSandboxExecutor(t, func(o *Options) { o.Sandbox.Cgroup = parent; o.Sandbox.Processes = 64 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, shellSpec(800, `sleep 1000`), Hooks{})
		done <- err
	}()
	var task string
	require.Eventually(t, func() bool {
		entries, _ := os.ReadDir(parent)
		for _, de := range entries {
			if de.IsDir() && strings.HasPrefix(de.Name(), "task-800-") {
				task = filepath.Join(parent, de.Name())
				procs, _ := os.ReadFile(filepath.Join(task, "cgroup.procs"))
				return len(strings.Fields(string(procs))) > 0
			}
		}
		return false
	}, 5*time.Second, 20*time.Millisecond, "the task runs in its own cgroup")
	if have, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers")); strings.Contains(string(have), "pids") {
		limit, err := os.ReadFile(filepath.Join(task, "pids.max"))
		require.NoError(t, err)
		require.Equal(t, "64", strings.TrimSpace(string(limit)))
	} else {
		t.Logf("the cgroup offers no controllers here (%q): only membership and the kill are checked", strings.TrimSpace(string(have)))
	}
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	_, err = os.Stat(task)
	require.True(t, os.IsNotExist(err), "the task's cgroup is removed with it")
}
