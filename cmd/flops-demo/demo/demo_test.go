//go:build unix

package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A demo killed outright leaves its chain running, its pids in the demo's home. The next
// demo on that home stops that chain before it wipes the home: before, it wiped the pids
// first, the old chain kept the ports, and the new localnet could not stop it.
func TestDemoStopsTheChainAnEarlierRunLeft(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	home := t.TempDir()
	chainHome := filepath.Join(home, "chain")
	require.NoError(t, os.MkdirAll(chainHome, 0o755))
	// the earlier run's node, as localnet.sh started it (its --home names the node's home)
	old := exec.Command("sh", "-c", "sleep 600", "sh", "--home", filepath.Join(chainHome, "node0")) //nolint:gosec // a fixed command
	require.NoError(t, old.Start())
	exited := make(chan error, 1)
	go func() { exited <- old.Wait() }()
	t.Cleanup(func() { _ = old.Process.Kill(); <-exited })
	require.NoError(t, os.WriteFile(filepath.Join(chainHome, "pids"), []byte(strconv.Itoa(old.Process.Pid)+"\n"), 0o600))

	// binaries that fail: this run stops at its chain's start, after the wipe
	bins := t.TempDir()
	for _, b := range []string{"flopsd", "flops-worker"} {
		require.NoError(t, os.WriteFile(filepath.Join(bins, b), []byte("#!/bin/sh\nexit 1\n"), 0o755)) //nolint:gosec // an executable stub
	}
	var out bytes.Buffer
	_, err = Run(context.Background(), Options{Root: root, BinDir: bins, Home: home, PortOffset: 3500, Headless: true, Out: &out})
	require.Error(t, err, "the stub flopsd cannot start a chain")

	select {
	case err := <-exited:
		exited <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatalf("the earlier run's node still runs after a new demo on its home:\n%s", out.String())
	}
}
