//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A chain left running by an earlier localnet or demo that was killed outright (its home
// wiped since, so nothing can stop it by its pids) holds the ports a new localnet wants.
// Before, localnet.sh started its nodes anyway, they failed to listen, and the old chain
// answered its height on the RPC port: "making blocks (height 65)", and the demo went on
// against a chain that was not its own. Now it refuses, naming the ports, and starts
// nothing; and a chain that takes the RPC port after that check (between the check and
// the node's start) is refused by its node id, the new nodes stopped.
func TestLocalnetRefusesAStaleChainOnItsPorts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs scripts/localnet.sh with flopsd: skipped with -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(binaries(t, root), "flopsd")
	// no other test's ports, and every one below Linux's ephemeral range (32768 up), from
	// which any process's outgoing connection may take one: at 7000 the metrics port,
	// 33660, was once taken so, and the test failed on the wrong refusal
	const offset = 4000
	rpc := fmt.Sprintf("127.0.0.1:%d", 26657+offset)

	localnet := func(home string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, filepath.Join(root, "scripts", "localnet.sh"), "--detach", //nolint:gosec // our script
			"--home", home, "--binary", bin, "--port-offset", strconv.Itoa(offset)).CombinedOutput()
		return string(out), err
	}

	t.Run("port held before the start", func(t *testing.T) {
		staleChain(t, rpc, nil)
		home := filepath.Join(t.TempDir(), "net")
		out, err := localnet(home)
		require.Error(t, err, "%s", out)
		require.Contains(t, out, "ports in use, so nothing was started")
		require.Contains(t, out, fmt.Sprintf("127.0.0.1:%d (node0 rpc)", 26657+offset), out)
		require.NotContains(t, out, "making blocks")
		_, err = os.Stat(home)
		require.ErrorIs(t, err, os.ErrNotExist, "nothing was created")
	})

	t.Run("port taken after the check", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "net")
		// the stale chain takes the RPC port once the new node's home exists: after the
		// check, before the node starts
		staleChain(t, rpc, func() bool {
			_, err := os.Stat(filepath.Join(home, "node0", "config", "genesis.json"))
			return err == nil
		})
		out, err := localnet(home)
		require.Error(t, err, "%s", out)
		require.Contains(t, out, "answers as node "+staleNodeID+" of chain flops-local-1, not as this localnet's node0", out)
		require.NotContains(t, out, "making blocks")
		require.Empty(t, nodesOf(t, home), "the new node was stopped")
	})
}

// staleNodeID is the stale chain's CometBFT node id.
const staleNodeID = "0123456789abcdef0123456789abcdef01234567"

// staleChain answers CometBFT's /status on addr as another node of a chain with the
// localnet's id at height 65, once ready says so (nil: at once).
func staleChain(t *testing.T, addr string, ready func() bool) {
	t.Helper()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":-1,"result":{"node_info":{"id":%q,"network":"flops-local-1"},"sync_info":{"latest_block_height":"65"}}}`, staleNodeID)
	})}
	if ready == nil {
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for !ready() {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("the stale chain could not take %s: %v", addr, err)
			return
		}
		_ = srv.Serve(ln) // (a server closed before this closes ln and returns)
	}()
	t.Cleanup(func() { close(stop); _ = srv.Close(); <-done })
}

// nodesOf lists the processes still running as nodes of home (flopsd start --home HOME/nodeN).
func nodesOf(t *testing.T, home string) []string {
	t.Helper()
	if _, err := os.Stat("/proc/self"); errors.Is(err, os.ErrNotExist) {
		t.Skip("no /proc to list processes")
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	require.NoError(t, err)
	var out []string
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.ReplaceAll(string(raw), "\x00", " ")
		if strings.Contains(args, " --home "+home+"/node") {
			out = append(out, args)
		}
	}
	return out
}

// localnet.sh stop (and a start on the same home, which stops the old nodes first) kills
// the pids its pids file lists: a file left from an earlier run, whose pids another
// process has taken since (after a reboot, say), must not kill that process.
func TestLocalnetStopSparesAReusedPid(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	home := t.TempDir()
	other := exec.Command("sleep", "600")
	require.NoError(t, other.Start())
	exited := make(chan error, 1)
	go func() { exited <- other.Wait() }()
	t.Cleanup(func() { _ = other.Process.Kill(); <-exited })
	require.NoError(t, os.WriteFile(filepath.Join(home, "pids"), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o600))

	out, err := exec.Command(filepath.Join(root, "scripts", "localnet.sh"), "stop", "--home", home).CombinedOutput() //nolint:gosec // our script
	require.NoError(t, err, "%s", out)
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		t.Fatalf("localnet.sh stop killed the process that took a stale pid: %v", err)
	case <-time.After(500 * time.Millisecond): // it kills before it returns
	}
	_, err = os.Stat(filepath.Join(home, "pids"))
	require.ErrorIs(t, err, os.ErrNotExist, "the stale pids file is gone")
}
