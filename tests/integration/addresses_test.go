package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// TestAttackUppercaseOwnerRunsOwnJob: an operator submits a job under the upper-case
// spelling of its own address (valid bech32, and the ante handler's signer check accepts
// it) so that "the node's operator is not the job's owner", a string comparison, would
// let its own node take, and get paid and scored for, its own job. Every flops Msg
// refuses the spelling; the job as submitted canonically never goes to the owner's node.
func TestAttackUppercaseOwnerRunsOwnJob(t *testing.T) {
	a, _ := marketAppN(t, 1, nil) // p1 is the only provider: its node is the only one
	owner := a.Account("p1")
	upper := strings.ToUpper(owner.String())

	spec := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
	escrow := a.ModuleBalance(markettypes.ModuleName, udps)
	r := a.Deliver("p1", &markettypes.MsgSubmitJob{Owner: upper, Spec: spec})
	require.Equal(t, markettypes.ErrInvalidAddress.ABCICode(), r.Code, r.Log)
	require.Equal(t, markettypes.ModuleName, r.Codespace)
	require.Contains(t, r.Log, "canonical")
	require.Equal(t, escrow, a.ModuleBalance(markettypes.ModuleName, udps))

	for _, msg := range []sdk.Msg{
		&gfltypes.MsgRegisterNode{Operator: upper, Spec: a100("owner2", 1)},
		&sstypes.MsgBond{Provider: upper, Amount: sdk.NewInt64Coin(udps, 1)},
		&markettypes.MsgCancelJob{Owner: upper, JobId: 1},
	} {
		r := a.Deliver("p1", msg)
		require.NotZerof(t, r.Code, "%T with an upper-case signer went through", msg)
		require.Containsf(t, r.Log, "canonical", "%T: %s", msg, r.Log)
	}

	// the canonical spelling: owner's job goes to another provider's node or to none
	job := submittedJob(t, a.MustDeliver("p1", &markettypes.MsgSubmitJob{Owner: owner.String(), Spec: spec}).Data)
	a.NextBlocks(3)
	for _, task := range jobTasks(t, a, job) {
		require.NotEqual(t, owner.String(), task.Provider, "owner's node took owner's job")
	}
}
