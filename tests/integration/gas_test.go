package integration

import (
	"testing"
	"time"

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
