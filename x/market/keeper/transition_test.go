package keeper_test

import (
	"errors"
	"strings"

	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
	"github.com/flopsnet/flops/x/market/types"
)

// The lifecycle core's moves, written out: a move not listed here must be refused.
func TestCanMoveIsTheDocumentedTable(t *testing.T) {
	const (
		P = types.TASK_STATUS_PENDING
		A = types.TASK_STATUS_ASSIGNED
		R = types.TASK_STATUS_RUNNING
		C = types.TASK_STATUS_COMMITTED
		V = types.TASK_STATUS_REVEALED
		F = types.TASK_STATUS_VERIFIED
		S = types.TASK_STATUS_SETTLED
		X = types.TASK_STATUS_FAILED
		E = types.TASK_STATUS_EXPIRED
		Q = types.TASK_STATUS_CANCELLED
	)
	allowed := map[types.TaskStatus][]types.TaskStatus{
		P: {P, A, E, Q, X}, // X: a replica whose failure report another replica confirmed
		A: {R, P, X, E, Q},
		R: {C, P, X, Q},
		C: {C, V, P, X, Q},
		V: {V, F, X},
		F: {V, S, X}, // X: a settlement resolved after its provider could not be paid
	}
	all := []types.TaskStatus{P, A, R, C, V, F, S, X, E, Q}
	for _, from := range all {
		for _, to := range all {
			want := false
			for _, ok := range allowed[from] {
				want = want || ok == to
			}
			require.Equalf(t, want, keeper.CanMove(from, to), "%s -> %s", from, to)
		}
	}
}

// A settled task cannot be put back in the queue, nor a pending one paid: the core
// refuses the move and nothing changes.
func TestTransitionRefusesAMoveOutsideTheTable(t *testing.T) {
	f := newFixture(t, nil)
	pending := f.tasks(f.submit(f.unplaceable()))[0]
	for _, c := range []struct {
		name string
		task uint64
		to   types.TaskStatus
	}{
		{"pending -> settled", pending.Id, types.TASK_STATUS_SETTLED},
		{"pending -> running", pending.Id, types.TASK_STATUS_RUNNING},
		{"pending -> verified", pending.Id, types.TASK_STATUS_VERIFIED},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := f.snapshot()
			err := f.tx(func(ctx sdk.Context) error { return f.k.TransitionForTest(ctx, c.task, c.to) })
			require.ErrorContains(t, err, "is not a task transition")
			f.requireUnchanged(before)
		})
	}
	running := f.runningTask("r")
	before := f.snapshot()
	err := f.tx(func(ctx sdk.Context) error { return f.k.TransitionForTest(ctx, running.Id, types.TASK_STATUS_SETTLED) })
	require.ErrorContains(t, err, "TASK_STATUS_RUNNING -> TASK_STATUS_SETTLED")
	f.requireUnchanged(before)
	f.assertInvariants()
}

// A primary of a cancelled job whose commitment lapses is not put back in a queue nobody
// reads (where it used to wait for the job's deadline): it ends CANCELLED at once and its
// reservation returns to the owner; the provider is still slashed for the missed reveal.
func TestLapsedPrimaryOfACancelledJobEndsAtOnce(t *testing.T) {
	f := newFixture(t, nil)
	task := f.committedTask("c")
	job := f.job(task.JobId)
	_, err := f.ms.CancelJob(f.ctx, &types.MsgCancelJob{Owner: f.client, JobId: job.Id})
	require.NoError(t, err)
	require.Equal(t, types.TASK_STATUS_COMMITTED, f.task(task.Id).Status, "finished work is not cancelled")
	owner := f.balance(f.client)
	f.blocks(int(f.params().RevealTimeoutBlocks) + 1)

	got := f.task(task.Id)
	require.Equal(t, types.TASK_STATUS_CANCELLED, got.Status, got.Reason)
	require.Contains(t, got.Reason, "the job was cancelled")
	require.Len(t, f.coll.slashes, 1, "the missed reveal is slashed")
	// the whole reservation comes back (max price + tip); the fake collateral keeper pays
	// no compensation
	require.Equal(t, owner.Add(task.Reserved).String(), f.balance(f.client).String())
	j := f.job(job.Id)
	require.NotZero(t, j.FinishedHeight, "the job finishes with its last task")
	require.True(t, j.Escrow.IsZero())
	f.assertInvariants()
}

// An owner that signs with the all-uppercase spelling of its provider account (bech32
// allows it, and so does the ante handler's signer check) is refused with nothing
// changed: one account has one spelling, so "the operator is not the owner", which
// compares stored strings, cannot be dodged. Its canonical job never goes to its own node.
func TestUppercaseOwnerStillCannotHireItself(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("self")
	f.addNode(op, 8, func(n *gfltypes.Node) { n.Region = "self" })
	f.fund(op, clientFunds)
	spec := f.gemmSpec(1)
	spec.Requirements.Region = "self"
	upper := strings.ToUpper(op)
	require.NotEqual(t, op, upper)
	f.requireRejected(types.ErrInvalidAddress, func(ctx sdk.Context) error {
		_, err := f.ms.SubmitJob(ctx, &types.MsgSubmitJob{Owner: upper, Spec: spec})
		return err
	})
	id := f.submitAs(op, spec)
	f.blocks(int(f.params().AssignRetryMaxBlocks) + 2)
	task := f.tasks(id)[0]
	require.Equal(t, types.TASK_STATUS_PENDING, task.Status, "its own node must not take it")
	f.assertInvariants()
}

// A hook that cannot record a provider's event fails the step that called it: the ack is
// refused and nothing changes, so that no provider's record is skipped.
func TestFailingHookFailsTheStep(t *testing.T) {
	f := newFixture(t, nil)
	task := f.assignedTask("h")
	f.hooks.fail = errors.New("reputation is broken")
	f.requireRejected(f.hooks.fail, func(ctx sdk.Context) error {
		_, err := f.ms.AckTask(ctx, &types.MsgAckTask{Provider: task.Provider, TaskId: task.Id})
		return err
	})
	f.hooks.fail = nil
	f.ack(task)
	require.Equal(t, types.TASK_STATUS_RUNNING, f.task(task.Id).Status)
	f.assertInvariants()
}
