//go:build unix

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/cmd/flops-demo/demo"
	"github.com/flopsnet/flops/testutil/testdirs"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// The demo's scenario, headless, on real flopsd and flops-worker processes: the
// providers register, bond and pass PoCP, the GFL index comes out, an ASSIGN job, an
// AUCTION job and a POOL settle, the owner fetches and checks a result, and the epoch's
// rewards are paid.
func TestDemoHeadless(t *testing.T) {
	// real processes on their own ports (offset 5000): runs beside the in-process networks,
	// which wait on blocks more than they compute
	t.Parallel()
	// a challenge window the browser can click in: its last test challenges a result
	sum := runDemo(t, demo.Options{Validators: 1, PortOffset: 5000, ChallengeWindowBlocks: 12,
		AfterScenario: checkWeb(t, fmt.Sprintf("http://127.0.0.1:%d", 26657+5000))})
	checkDemo(t, sum)
	require.NotEmpty(t, sum.WebURL, "the demo serves the dashboard")
}

// The same on 4 validators, one of them killed (SIGKILL) once the jobs are submitted:
// the other three keep making blocks and the market keeps settling. A long run: `make
// test-long` (and .ci/run) runs it, `make test` skips it.
func TestDemoFourValidatorsOneKilled(t *testing.T) {
	if os.Getenv("FLOPS_LONG_TESTS") == "" {
		t.Skip("a long run (about 2 min): make test-long")
	}
	sum := runDemo(t, demo.Options{Validators: 4, KillValidator: 3, PortOffset: 5500})
	require.Equal(t, 3, sum.Killed)
	checkDemo(t, sum)
}

// ansi matches the colour codes of the nodes' console logs.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// Crashes on 1 validator (a long run): provider1's worker killed with SIGKILL (its
// process group, sandboxes with it) while a task is in flight on its node and started
// again on its home, then the only validator killed and restarted, so that both workers
// and the client lose their gRPC endpoint for a few seconds: every job and the pool still
// settle, paid exactly, and the invariants hold on the restarted node.
func TestDemoWorkerAndChainCrash(t *testing.T) {
	if os.Getenv("FLOPS_LONG_TESTS") == "" {
		t.Skip("a long run (about 2 min): make test-long")
	}
	sum := runDemo(t, demo.Options{Validators: 1, CrashWorker: 1, CrashChain: true, PortOffset: 3000})
	require.Equal(t, "provider1", sum.WorkerCrashed)
	require.True(t, sum.ChainCrashed)
	checkDemo(t, sum)
}

func runDemo(t *testing.T, o demo.Options) demo.Summary {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a localnet and two workers: skipped with -short")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	// a home the sandbox's unprivileged user can reach (provider 2 runs PROCESS jobs)
	o.Root, o.BinDir, o.Home, o.Headless = root, binaries(t, root), testdirs.Reachable(t, t.TempDir()), true
	var out bytes.Buffer
	o.Out = &out
	// a failed run, in demo.Run or in a check after it, prints the logs' tails (the
	// cleanup runs before the temp dir's)
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, o.Home, 80)
		}
	})
	sum, err := demo.Run(context.Background(), o)
	t.Log("\n" + out.String())
	require.NoError(t, err)
	// every validator asserted every registered invariant every block (the localnet's
	// default): a broken one would have halted it and failed the run above
	for i := 0; i < o.Validators; i++ {
		raw, err := os.ReadFile(filepath.Join(o.Home, "chain", fmt.Sprintf("node%d.log", i)))
		require.NoError(t, err)
		log := ansi.ReplaceAllString(string(raw), "")
		require.True(t, strings.Contains(log, "asserting the invariants") && strings.Contains(log, "every_blocks=1"),
			"node%d logs that it asserts the invariants every block", i)
	}
	return sum
}

// logTails prints the last lines of every node's and worker's log of a failed run: the
// logs live in the test's temp dir, which goes with the test, and CI keeps only its output.
func logTails(t *testing.T, home string, lines int) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(home, "chain", "node*.log"))
	workers, _ := filepath.Glob(filepath.Join(home, "provider*.log"))
	for _, p := range append(logs, workers...) {
		dumpTail(t, p, lines)
	}
}

// checkDemo asserts what the demo's summary says happened.
func checkDemo(t *testing.T, sum demo.Summary) {
	t.Helper()
	require.Len(t, sum.Nodes, 2)
	var power uint64
	for _, n := range sum.Nodes {
		require.NotZero(t, n.ID)
		require.Equal(t, 2, n.GPUs, n.Provider)
		require.True(t, n.Bonded.IsPositive(), n.Provider)
		require.NotZero(t, n.Passed, "%s passed a PoCP challenge", n.Provider)
		require.NotZero(t, n.PowerGflops, "%s has a GFL index", n.Provider)
		power += n.PowerGflops
	}
	require.Equal(t, power, sum.NetworkGflops)

	// the jobs: every task settled, paid for the time it ran (ack to commit, by the
	// minute) and its tip, never more than its price and tip; the client paid exactly that
	// and the pool's units (zero gas price on the localnet)
	require.Len(t, sum.Jobs, 2)
	spent := sdkmath.ZeroInt()
	for _, j := range sum.Jobs {
		require.Equal(t, markettypes.JOB_STATUS_COMPLETED, j.Status, "job %d", j.ID)
		for _, tk := range j.Tasks {
			require.Equal(t, markettypes.TASK_STATUS_SETTLED, tk.Status, "task %d", tk.Id)
			require.Len(t, tk.ResultRoot, 32)
			ran := tk.CommitTime.Sub(tk.StartedTime)
			want := markettypes.TimePrice(tk.Price, ran, j.MaxDuration, markettypes.DefaultParams().BillingGranularity).Add(j.Tip)
			require.Equal(t, want.String(), tk.Paid.String(), "task %d is paid for the %s it ran of %s", tk.Id, ran, j.MaxDuration)
			require.True(t, tk.Paid.LTE(tk.Price.Add(j.Tip)))
			spent = spent.Add(tk.Paid)
		}
	}
	require.Equal(t, markettypes.ALLOCATION_MODE_AUCTION, sum.Jobs[1].Mode)
	require.NotZero(t, sum.Jobs[1].Tasks[0].BidNode, "the auction's task went to a bid")
	require.EqualValues(t, sum.Pool.Units, sum.Pool.PaidUnits)
	credited := 0
	for _, n := range sum.Pool.PaidBy {
		credited += n
	}
	require.EqualValues(t, sum.Pool.PaidUnits, credited, "the members' credited units add up to the units paid: %v", sum.Pool.PaidBy)
	require.Equal(t, markettypes.POOL_STATUS_CLOSED, sum.Pool.Status)
	spent = spent.AddRaw(int64(sum.Pool.PaidUnits) * 200_000)
	require.Equal(t, spent.String(), sum.Before["client"].Sub(sum.After["client"]).String(), "the client paid the tasks and the units")

	// the result fetched as the owner and checked against the chain
	require.Equal(t, sum.Jobs[0].Tasks[0].Id, sum.Fetched.TaskID)
	require.Equal(t, 1, sum.Fetched.Files)
	require.Contains(t, sum.Fetched.Output, "the one verified on chain")

	// the epoch's rewards: both providers paid for availability; the sum is what the
	// distribution says it paid
	e := sum.Emission
	require.True(t, e.Emission.IsPositive())
	paid := sdkmath.ZeroInt()
	for _, name := range []string{"provider1", "provider2"} {
		r, ok := sum.Rewards[name]
		require.True(t, ok, "%s rewarded in epoch %d", name, e.Epoch)
		require.True(t, r.Availability.IsPositive(), name)
		paid = paid.Add(r.Availability).Add(r.Work)
	}
	require.Equal(t, e.PaidAvailability.Add(e.PaidWork).String(), paid.String())
	require.Equal(t, e.Emission.String(), e.PaidAvailability.Add(e.PaidWork).Add(e.Remainder).String())
	checkDemoMetrics(t, sum)
	require.Len(t, sum.Scores, 2)
	for _, s := range sum.Scores {
		require.True(t, s.Score.GT(sdkmath.LegacyNewDecWithPrec(5, 1)), "node %d score %s", s.NodeId, s.Score)
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// binaries is build/ when `make build` (which `make test` runs first) filled it,
// otherwise a fresh build in a temporary directory.
func binaries(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "build")
	if fresh(dir, root) {
		return dir
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "flops-e2e-bin")
		if buildErr != nil {
			return
		}
		for _, c := range []string{"flopsd", "flops-worker"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(buildDir, c), "./cmd/"+c)
			build.Dir = root
			out, err := build.CombinedOutput()
			cancel()
			if err != nil {
				buildErr = err
				t.Log(string(out))
				return
			}
		}
	})
	require.NoError(t, buildErr)
	return buildDir
}

// fresh says whether dir has both binaries, built after the last commit.
func fresh(dir, root string) bool {
	var oldest time.Time
	for _, c := range []string{"flopsd", "flops-worker"} {
		st, err := os.Stat(filepath.Join(dir, c))
		if err != nil {
			return false
		}
		if oldest.IsZero() || st.ModTime().Before(oldest) {
			oldest = st.ModTime()
		}
	}
	out, err := exec.Command("git", "-C", root, "log", "-1", "--format=%cI").Output()
	if err != nil {
		return true // not a git checkout: trust the build
	}
	head, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	return err != nil || oldest.After(head)
}

// checkDemoMetrics: validator 0's Prometheus listener (127.0.0.1 at 26660 plus the port
// offset) served the flops metrics; the state gauges agree with the summary, and so do the
// counters when the chain was not restarted (a restart starts them again).
func checkDemoMetrics(t *testing.T, sum demo.Summary) {
	t.Helper()
	m := sum.Metrics
	require.NotEmpty(t, m)
	require.Equal(t, float64(len(sum.Jobs)), m[`flops_market_jobs{status="JOB_STATUS_COMPLETED"}`], "%v", m)
	require.Equal(t, 0.0, m[`flops_market_jobs{status="JOB_STATUS_ACTIVE"}`])
	require.Equal(t, float64(len(sum.Nodes)), m[`flops_gfl_nodes{status="NODE_STATUS_ACTIVE"}`])
	require.Positive(t, m["flops_gfl_network_gflops"])
	require.Positive(t, m["flops_stakingslash_collateral_bonded_udps"])
	require.Zero(t, m["flops_state_read_failures_total"])
	if sum.ChainCrashed {
		return
	}
	tasks := 0
	for _, j := range sum.Jobs {
		tasks += len(j.Tasks)
	}
	require.Equal(t, float64(len(sum.Jobs)), m["flops_market_jobs_submitted_total"])
	require.GreaterOrEqual(t, m["flops_market_tasks_settled_total"], float64(tasks))
	require.GreaterOrEqual(t, m["flops_market_tasks_assigned_total"], float64(tasks))
	require.Positive(t, m["flops_market_task_payments_udps_total"])
	emitted := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "flops_dps_emission_paid_udps_total{") {
			emitted += v
		}
	}
	require.Positive(t, emitted, "the epoch's emission was counted")
}
