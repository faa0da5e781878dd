package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// gasJobSpec is a 1-GPU BUILTIN gemm batch job of n tasks (ASSIGN, no verification).
func gasJobSpec(a *apptest.App, tasks uint32) markettypes.JobSpec {
	return markettypes.JobSpec{
		Workload: gfltypes.WORKLOAD_CLASS_BATCH, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinGemm,
		Builtin:   markettypes.BuiltinArgs{GemmN: 256, GemmR: 1},
		TaskCount: tasks, Replicas: 1, Verification: markettypes.VERIFICATION_CLASS_NONE,
		MaxPricePerTask: sdk.NewInt64Coin("udps", 5_000_000), MaxDuration: 10 * time.Minute,
		Deadline: a.BlockTime().Add(24 * time.Hour), PriorityTip: sdk.NewInt64Coin("udps", 100_000),
		Mode: markettypes.ALLOCATION_MODE_ASSIGN, VerificationBudget: sdk.NewInt64Coin("udps", 0),
	}
}

// The gas a user pays for a MsgSubmitJob of 1 task and of 100 tasks, next to a bank
// MsgSend, each in its own tx from the same account of the same app (signature checks
// and tx-size costs included, as the user sees them). DESIGN.md section 8 says a
// submit-job costs at most 3x a bank send; the figures are logged for the report, the
// test asserts only that each tx succeeds (gas is a measurement, not a contract here).
func TestGasSubmitJobVersusBankSend(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "bob"))
	client := a.Account("client").String()
	send := a.MustDeliver("client", &banktypes.MsgSend{
		FromAddress: client, ToAddress: a.Account("bob").String(), Amount: sdk.NewCoins(sdk.NewInt64Coin("udps", 1_000_000)),
	})
	one := a.MustDeliver("client", &markettypes.MsgSubmitJob{Owner: client, Spec: gasJobSpec(a, 1)})
	hundred := a.MustDeliver("client", &markettypes.MsgSubmitJob{Owner: client, Spec: gasJobSpec(a, 100)})
	t.Logf("gas used: bank MsgSend %d; MsgSubmitJob 1 task %d (%.2fx the send); MsgSubmitJob 100 tasks %d (%.2fx the send, %d per extra task)",
		send.GasUsed, one.GasUsed, float64(one.GasUsed)/float64(send.GasUsed),
		hundred.GasUsed, float64(hundred.GasUsed)/float64(send.GasUsed), (hundred.GasUsed-one.GasUsed)/99)
}

// maximalJob is the largest legal job: the most tasks and replicas the params allow and
// every list of the spec at its bound (a PROCESS job: command, env, inputs, allowed
// classes, task arguments).
func maximalJob(t testing.TB, a *apptest.App) markettypes.JobSpec {
	t.Helper()
	p, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	s := gasJobSpec(a, p.MaxTasksPerJob)
	s.Runtime, s.Image, s.Builtin = markettypes.RUNTIME_PROCESS, "", markettypes.BuiltinArgs{}
	s.Replicas, s.Verification = p.MaxReplicas, markettypes.VERIFICATION_CLASS_EXACT
	for i := range markettypes.MaxArgs {
		s.Command = append(s.Command, fmt.Sprintf("%03d", i)+long('c', 64-3))
	}
	for i := range markettypes.MaxEnv {
		s.Env = append(s.Env, markettypes.EnvVar{Name: fmt.Sprintf("V%03d", i), Value: long('v', 256)})
	}
	for i := range int(p.MaxInputsPerJob) {
		s.Inputs = append(s.Inputs, markettypes.Input{
			Uri: fmt.Sprintf("https://in.example.com/%d/", i) + long('u', 200), Sha256: long('a', 64), Path: fmt.Sprintf("in/%d", i),
		})
	}
	for i := range markettypes.MaxAllowedClasses {
		s.Requirements.AllowedClasses = append(s.Requirements.AllowedClasses, fmt.Sprintf("class-%02d", i)+long('k', 40))
	}
	s.Requirements.AllowedClasses[0] = "A100-40GB" // one that exists, so the job can run
	per := markettypes.MaxTaskArgsBytes / int(s.TaskCount)
	for range s.TaskCount {
		s.TaskArgs = append(s.TaskArgs, markettypes.TaskArgs{Args: []string{long('t', per)}})
	}
	s.MaxPricePerTask = sdk.NewInt64Coin("udps", 1_000)
	s.PriorityTip = sdk.NewInt64Coin("udps", 0)
	s.VerificationBudget = sdk.NewInt64Coin("udps", 0)
	require.NoError(t, s.Validate(p, a.BlockTime()), "the maximal job is legal")
	return s
}

// The gas of the maximal legal MsgSubmitJob, next to a bank send, and its bytes: it must
// fit in a block (the consensus max_gas) with room to spare. The figures are logged for
// the report.
func TestGasMaximalLegalSubmitJob(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client", "bob"))
	client := a.Account("client").String()
	send := a.MustDeliver("client", &banktypes.MsgSend{
		FromAddress: client, ToAddress: a.Account("bob").String(), Amount: sdk.NewCoins(sdk.NewInt64Coin("udps", 1_000_000)),
	})
	spec := maximalJob(t, a)
	msg := &markettypes.MsgSubmitJob{Owner: client, Spec: spec}
	maxGas := a.ConsensusParamsMaxGas()
	res := a.NextBlock(a.SignTx("client", uint64(maxGas), msg))
	require.Len(t, res.TxResults, 1)
	require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
	gas := uint64(res.TxResults[0].GasUsed)
	t.Logf("maximal MsgSubmitJob: %d bytes, %d tasks, gas %d (%.0fx a bank send of %d); block max_gas %d",
		msg.Size(), spec.TotalTasks(), gas, float64(gas)/float64(send.GasUsed), send.GasUsed, maxGas)
	require.Less(t, gas, uint64(maxGas)/2, "the largest legal job fits in half a block")
}

// The largest legal BUILTIN_GEMM reveal (gemm_n x gemm_r at gemm_max_rn, the deepest
// Merkle path: n = 65,536) and the largest PoCP reveal (challenge_max_rn) are priced at
// submission (GemmRevealGas) and fit in a block with room to spare: under a quarter of
// the consensus max_gas. The figures are logged for the report.
func TestGasLargestGemmReveal(t *testing.T) {
	a := apptest.New(t)
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	gp, err := a.GFLKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	maxGas := uint64(a.ConsensusParamsMaxGas())
	worst := uint64(0)
	for n := uint32(256); n <= 65536; n *= 2 {
		r := uint32(mp.GemmMaxRn / uint64(n))
		if r == 0 {
			continue
		}
		worst = max(worst, markettypes.GemmRevealGas(markettypes.BuiltinArgs{GemmN: n, GemmR: r}, gp))
	}
	pocpWorst := markettypes.GemmRevealGas(markettypes.BuiltinArgs{GemmN: 65536, GemmR: uint32(gp.ChallengeMaxRn / 65536)}, gp)
	t.Logf("largest GEMM reveal %d gas, largest PoCP reveal %d gas, block max_gas %d", worst, pocpWorst, maxGas)
	require.Less(t, worst, maxGas/4)
	require.Less(t, pocpWorst, maxGas/4)
}
