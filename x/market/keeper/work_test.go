package keeper_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/keepertest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// settleFor runs a one-task job owned by owner on a node of the provider name up to its
// settlement block and returns the task (SETTLED unless the settlement failed).
func (f *fixture) settleFor(name, owner string) types.Task {
	f.t.Helper()
	f.addNode(f.operator(name), 8, func(n *gfltypes.Node) { n.Region = name })
	spec := f.gemmSpec(1)
	spec.Requirements.Region = name
	job := f.submitAs(owner, spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	require.Equal(f.t, types.TASK_STATUS_ASSIGNED, task.Status)
	f.ack(task)
	f.blocks(1)
	f.commit(task)
	f.blocks(1)
	f.reveal(task)
	for range f.params().ChallengeWindowBlocks + 2 {
		f.blocks(1)
	}
	return f.task(task.Id)
}

// A settled task is reported to x/dps as verified work: who paid (the job's owner), who
// was paid, the workload class, the gross payment as fees and the GFLOP-seconds; x/market
// keeps no ledger of its own.
func TestSettlementReportsVerifiedWork(t *testing.T) {
	f := newFixture(t, nil)
	owner := keepertest.Addr("client2")
	f.fund(owner, sdkmath.NewInt(1_000_000_000))
	task := f.settleFor("prov", owner)
	require.Equal(t, types.TASK_STATUS_SETTLED, task.Status)
	require.Len(t, f.hooks.work, 1)
	w := f.hooks.work[0]
	require.Equal(t, sdk.MustAccAddressFromBech32(owner), w.Payer)
	require.Equal(t, sdk.MustAccAddressFromBech32(task.Provider), w.Provider)
	require.Equal(t, int32(gfltypes.WORKLOAD_CLASS_BATCH), w.Workload)
	require.Equal(t, quote10m.QuoRaw(10).AddRaw(100_000).String(), w.Fees.String(), "a minute of the ten-minute price (billing granularity), + tip, before the take")
	require.True(t, w.GflopSeconds.IsNil() == false && !w.GflopSeconds.IsNegative())
	f.assertInvariants()
}

// A settlement whose work report fails does not settle without it: the step fails whole
// and the task stays verified. (That its payment is rolled back with it is asserted on
// the wired app, whose bank is transactional; this fixture's bank is a map.)
func TestFailedWorkReportFailsTheSettlement(t *testing.T) {
	f := newFixture(t, nil)
	owner := keepertest.Addr("client3")
	f.fund(owner, sdkmath.NewInt(1_000_000_000))
	f.addNode(f.operator("prov"), 8, func(n *gfltypes.Node) { n.Region = "prov" })
	spec := f.gemmSpec(1)
	spec.Requirements.Region = "prov"
	job := f.submitAs(owner, spec)
	f.blocks(1)
	task := f.tasks(job)[0]
	f.ack(task)
	f.blocks(1)
	f.commit(task)
	f.blocks(1)
	f.reveal(task)
	f.hooks.fail = errors.New("dps is broken")
	for range f.params().ChallengeWindowBlocks + 2 {
		f.blocks(1)
	}
	require.Equal(t, types.TASK_STATUS_VERIFIED, f.task(task.Id).Status)
	require.Empty(t, f.hooks.work)
}
