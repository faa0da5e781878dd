//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Crashes, not shutdowns: validators killed with SIGKILL (mid-block, with whatever their
// WAL and stores held) and started again on their homes. A killed validator replays its
// WAL, catches up and agrees with the others' app hash at every height; the whole network
// killed at once comes back from its own disks and goes on making blocks, each node's
// invariants asserted every block.
func TestCrashValidatorsRestart(t *testing.T) {
	if os.Getenv("FLOPS_LONG_TESTS") == "" {
		t.Skip("a long run (about 80 s): make test-long")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	n := startCrashNet(t, root, binaries(t, root), 4, 6000)

	n.waitHeight(t, 0, 4, time.Minute)
	n.send(t, "1000udps")

	// one validator killed, mid-block as likely as not (1 s blocks), and restarted
	n.kill(t, 2)
	killedAt := n.height(0)
	n.waitHeight(t, 0, killedAt+4, time.Minute) // 3 of 4 keep going
	n.send(t, "2000udps")
	n.restart(t, 2)
	n.waitHeight(t, 2, n.height(0)+2, 2*time.Minute) // replayed and caught up
	n.sameAppHashes(t, killedAt-1, n.height(2)-1)

	// every validator killed at once, then started again
	for i := range n.validators {
		n.kill(t, i)
	}
	halted := 0
	for i := range n.validators {
		halted = max(halted, n.lastHeight[i])
	}
	for i := range n.validators {
		n.restart(t, i)
	}
	for i := range n.validators {
		n.waitHeight(t, i, halted+3, 2*time.Minute)
	}
	n.send(t, "3000udps")
	n.waitHeight(t, 0, n.height(0)+2, time.Minute)
	lo := halted + 3
	for i := range n.validators {
		lo = min(lo, n.height(i)-1)
	}
	n.sameAppHashes(t, halted-3, lo)
	for i := range n.validators {
		log := n.log(t, i)
		require.NotContains(t, log, "broken invariants", "node%d", i)
		require.NotContains(t, log, "CONSENSUS FAILURE", "node%d", i)
	}
}

// crashNet is a localnet (scripts/localnet.sh) whose validators a test kills and restarts.
type crashNet struct {
	root, bin, home string
	validators      int
	offset          int
	pids            []int
	lastHeight      []int
}

func startCrashNet(t *testing.T, root, bins string, validators, offset int) *crashNet {
	t.Helper()
	n := &crashNet{root: root, bin: filepath.Join(bins, "flopsd"), home: t.TempDir(), validators: validators, offset: offset}
	cmd := exec.Command(filepath.Join(root, "scripts", "localnet.sh"), "--detach", "--home", n.home, "--binary", n.bin, //nolint:gosec // our script
		"--validators", strconv.Itoa(validators), "--port-offset", strconv.Itoa(offset))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(filepath.Join(n.home, "pids"))
	require.NoError(t, err)
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		n.pids = append(n.pids, pid)
	}
	require.Len(t, n.pids, validators)
	n.lastHeight = make([]int, validators)
	t.Cleanup(func() {
		for _, pid := range n.pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			for i := range n.validators {
				t.Logf("node%d.log (tail):\n%s", i, tail(n.log(t, i), 3000))
			}
		}
	})
	return n
}

func (n *crashNet) rpc(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", 26657+n.offset+10*i) }

func (n *crashNet) log(t *testing.T, i int) string {
	raw, err := os.ReadFile(filepath.Join(n.home, fmt.Sprintf("node%d.log", i)))
	require.NoError(t, err)
	return ansi.ReplaceAllString(string(raw), "")
}

// height is node i's latest height (0 when it does not answer).
func (n *crashNet) height(i int) int {
	var st struct {
		Result struct {
			SyncInfo struct {
				LatestBlockHeight string `json:"latest_block_height"`
			} `json:"sync_info"`
		} `json:"result"`
	}
	if err := getJSON(n.rpc(i)+"/status", &st); err != nil {
		return 0
	}
	h, _ := strconv.Atoi(st.Result.SyncInfo.LatestBlockHeight)
	return h
}

func (n *crashNet) waitHeight(t *testing.T, i, h int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for n.height(i) < h {
		if time.Now().After(deadline) {
			t.Fatalf("node%d at height %d after %s, want %d", i, n.height(i), timeout, h)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kill sends SIGKILL to validator i and waits until it is gone.
func (n *crashNet) kill(t *testing.T, i int) {
	t.Helper()
	n.lastHeight[i] = n.height(i)
	require.NoError(t, syscall.Kill(n.pids[i], syscall.SIGKILL))
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(n.pids[i], &ws, 0, nil) // reaped when it is our child; else gone soon
	for syscall.Kill(n.pids[i], 0) == nil {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("node%d killed (SIGKILL) at height %d", i, n.lastHeight[i])
}

// restart starts validator i again on its home, as localnet.sh started it.
func (n *crashNet) restart(t *testing.T, i int) {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(n.home, fmt.Sprintf("node%d.log", i)), os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(n.bin, "start", "--home", filepath.Join(n.home, fmt.Sprintf("node%d", i)), "--inv-check-period", "1") //nolint:gosec // our binary
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	n.pids[i] = cmd.Process.Pid
	go func() { _ = cmd.Wait() }()
	t.Logf("node%d restarted", i)
}

// send makes a bank send from the client, through node0, and waits for its block.
func (n *crashNet) send(t *testing.T, amount string) {
	t.Helper()
	h0 := filepath.Join(n.home, "node0")
	to, err := exec.Command(n.bin, "keys", "show", "provider", "-a", "--home", h0, "--keyring-backend", "test").Output() //nolint:gosec // our binary
	require.NoError(t, err)
	out, err := exec.Command(n.bin, "tx", "bank", "send", "client", strings.TrimSpace(string(to)), amount, //nolint:gosec // our binary
		"--home", h0, "--keyring-backend", "test", "--chain-id", "flops-local-1", "--node", "tcp"+strings.TrimPrefix(n.rpc(0), "http"),
		"--yes", "--output", "json").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var res struct {
		Code   int    `json:"code"`
		TxHash string `json:"txhash"`
	}
	require.NoError(t, json.Unmarshal(lastJSON(out), &res), "%s", out)
	require.Zero(t, res.Code, "%s", out)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var tx struct {
			Result struct {
				TxResult struct {
					Code int `json:"code"`
				} `json:"tx_result"`
			} `json:"result"`
		}
		if err := getJSON(n.rpc(0)+"/tx?hash=0x"+res.TxHash, &tx); err == nil {
			require.Zero(t, tx.Result.TxResult.Code)
			return
		}
		require.True(t, time.Now().Before(deadline), "tx %s not in a block", res.TxHash)
		time.Sleep(300 * time.Millisecond)
	}
}

// sameAppHashes checks that every validator holds the same header app hash (the state
// after the block before) at every height in [from, to].
func (n *crashNet) sameAppHashes(t *testing.T, from, to int) {
	t.Helper()
	require.Less(t, from, to)
	for h := max(from, 1); h <= to; h++ {
		var want string
		for i := range n.validators {
			var b struct {
				Result struct {
					Block struct {
						Header struct {
							AppHash string `json:"app_hash"`
						} `json:"header"`
					} `json:"block"`
				} `json:"result"`
			}
			require.NoError(t, getJSON(fmt.Sprintf("%s/block?height=%d", n.rpc(i), h), &b), "node%d block %d", i, h)
			got := b.Result.Block.Header.AppHash
			require.NotEmpty(t, got, "node%d block %d", i, h)
			if i == 0 {
				want = got
				continue
			}
			require.Equal(t, want, got, "node%d's app hash at height %d differs from node0's", i, h)
		}
	}
	t.Logf("the %d validators agree on the app hash at every height from %d to %d", n.validators, from, to)
}

func getJSON(url string, v any) error {
	c := http.Client{Timeout: 3 * time.Second}
	res, err := c.Get(url) //nolint:noctx // a local test node
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, res.Status)
	}
	return json.NewDecoder(res.Body).Decode(v)
}

// lastJSON is the last line of out that looks like a JSON object (the CLI may print
// "gas estimate" lines first).
func lastJSON(out []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "{") {
			return []byte(lines[i])
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
