package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/chain"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// stubChain is a Chain that only knows its address (the actions built here are not sent).
type stubChain struct{ addr sdk.AccAddress }

func (c stubChain) Address() sdk.AccAddress                        { return c.addr }
func (stubChain) Height(context.Context) (int64, time.Time, error) { return 0, time.Time{}, nil }
func (stubChain) Conn() grpc.ClientConnInterface                   { return nil }
func (stubChain) Submit(context.Context, ...sdk.Msg) (*chain.TxResult, error) {
	return nil, errors.New("stub")
}

// stateAgent is an agent with a state directory and nothing else: enough to build the
// commit and reveal of a task it recorded.
func stateAgent(t *testing.T) *Agent {
	t.Helper()
	st, err := newStore(t.TempDir())
	require.NoError(t, err)
	return &Agent{
		o: Options{Chain: stubChain{addr: sdk.AccAddress(make([]byte, 20))}}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		state: st, runs: map[uint64]*run{}, pinned: map[string]uint64{}, claims: map[string]*claim{},
	}
}

// recordTask writes the record of a finished task, as finish does.
func recordTask(t *testing.T, a *Agent, id uint64) {
	t.Helper()
	require.NoError(t, a.state.put(record{Kind: "task", TaskID: id, Root: hexOf(make([]byte, 32)), Salt: hexOf(make([]byte, 16)), OutputURI: "https://w/1"}))
}

// breakRecord makes the task's record unreadable (garbage on disk) and returns a function
// that repairs it.
func breakRecord(t *testing.T, a *Agent, id uint64) func() {
	t.Helper()
	path := a.state.path(taskKey(id))
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	return func() { require.NoError(t, os.WriteFile(path, good, 0o600)) }
}

// A failed read of a finished task's record must not leave its commitment "on its way":
// the next tick commits it. (The commitment used to stay marked as sent, so the task was
// never committed and its provider was slashed for abandoning it.)
func TestCommitRetriedAfterAFailedRecordRead(t *testing.T) {
	a := stateAgent(t)
	task := markettypes.Task{Id: 7, Status: markettypes.TASK_STATUS_RUNNING}
	recordTask(t, a, task.Id)
	a.runs[task.Id] = &run{task: task, phase: phaseFinished}
	repair := breakRecord(t, a, task.Id)

	_, ok := a.commitAction(context.Background(), task)
	require.False(t, ok, "no commitment without the record")
	repair()
	act, ok := a.commitAction(context.Background(), task)
	require.True(t, ok, "the next tick commits")
	require.Len(t, act.msgs, 1)
	require.IsType(t, &markettypes.MsgCommitResult{}, act.msgs[0])

	_, ok = a.commitAction(context.Background(), task)
	require.False(t, ok, "never sent twice while on its way")
	act.after(errors.New("refused"))
	_, ok = a.commitAction(context.Background(), task)
	require.True(t, ok, "a refused commitment is sent again")
}

// The same for the reveal of a committed task.
func TestRevealRetriedAfterAFailedRecordRead(t *testing.T) {
	a := stateAgent(t)
	task := markettypes.Task{Id: 9, Status: markettypes.TASK_STATUS_COMMITTED, CommitHeight: 10, RevealDeadlineHeight: 20}
	recordTask(t, a, task.Id)
	a.runs[task.Id] = &run{task: task, phase: phaseCommitted}
	repair := breakRecord(t, a, task.Id)

	_, ok := a.revealAction(context.Background(), 12, task)
	require.False(t, ok, "no reveal without the record")
	repair()
	act, ok := a.revealAction(context.Background(), 12, task)
	require.True(t, ok, "the next tick reveals")
	require.IsType(t, &markettypes.MsgRevealResult{}, act.msgs[0])
	_, ok = a.revealAction(context.Background(), 12, task)
	require.False(t, ok, "never sent twice while on its way")
	act.after(errors.New("refused"))
	_, ok = a.revealAction(context.Background(), 12, task)
	require.True(t, ok, "a refused reveal is sent again")
}
