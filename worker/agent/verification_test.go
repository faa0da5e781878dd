package agent_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// TestAttackFakeResultOnAFailingJobSlashesTheAuditors: a provider commits a made-up result
// for an EXACT job that fails on every machine (here the job succeeds only where its
// directory names the liar, standing in for a provider that skipped the work). The
// result is audited (the liar is in its warm-up), and the auditor's run fails, as does
// the committee member's after the dispute. Before, a verification task had no answer for
// a failed run: the real workers' audit and committee runs failed, their tasks lapsed,
// and their honest providers were slashed, while the liar's result failed unpaid and
// unslashed. Now each answers the failed-run root: the committee overturns the made-up
// result, the liar is slashed for a wrong result, and the auditor and the member are paid
// and never slashed.
func TestAttackFakeResultOnAFailingJobSlashesTheAuditors(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1", "p2", "p3"}, func(m *markettypes.Params) { m.CommitteeSize = 1 })
	var mu sync.Mutex
	liar := newWorkerIn(t, &mu, a, "p1", filepath.Join(t.TempDir(), "liar"), nil)
	// a budget for an audit and a committee of 1
	j := job(t, a, exact(processSpec(a, `case "$FLOPS_OUTPUT_DIR" in */liar/*) echo made-up > "$FLOPS_OUTPUT_DIR/out" ;; *) echo boom >&2; exit 2 ;; esac`), 2))
	q := markettypesQuery(a)
	getTask := func(id uint64) markettypes.Task {
		res, err := q.Task(a.Ctx(), &markettypes.QueryTaskRequest{TaskId: id})
		require.NoError(t, err)
		return res.Task
	}
	until(t, a, 80, "the task runs on the liar's node", func() bool {
		tk := getTask(j.FirstTaskId)
		return tk.Status == markettypes.TASK_STATUS_RUNNING && tk.NodeId == liar.agent.Node().Id
	}, liar)
	w2, w3 := newWorker(t, &mu, a, "p2", nil), newWorker(t, &mu, a, "p3", nil)
	until(t, a, 300, "job finished", func() bool {
		res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
		require.NoError(t, err)
		return res.Job.FinishedHeight != 0
	}, liar, w2, w3)

	res, err := q.Job(a.Ctx(), &markettypes.QueryJobRequest{JobId: j.Id})
	require.NoError(t, err)
	require.Equal(t, markettypes.JOB_STATUS_FAILED, res.Job.Status)
	primary := getTask(j.FirstTaskId)
	require.Equal(t, markettypes.TASK_STATUS_FAILED, primary.Status)
	require.NotZero(t, primary.DisputeId, "the audit disagreed")
	d, err := q.Dispute(a.Ctx(), &markettypes.QueryDisputeRequest{DisputeId: primary.DisputeId})
	require.NoError(t, err)
	require.Equal(t, markettypes.DISPUTE_STATUS_OVERTURNED, d.Dispute.Status)
	require.Equal(t, markettypes.FailedRoot(), d.Dispute.DecidedRoot, "the committee found that the job fails")

	ss := sstypes.NewQueryClient(a.QueryConn())
	slashes, err := ss.SlashHistory(a.Ctx(), &sstypes.QuerySlashHistoryRequest{Provider: a.Account("p1").String()})
	require.NoError(t, err)
	require.Len(t, slashes.Slashes, 1)
	require.Equal(t, sstypes.SLASH_REASON_WRONG_RESULT, slashes.Slashes[0].Reason, "the liar is slashed for its made-up result")
	for _, verifier := range []uint64{d.Dispute.AuditorTask, d.Dispute.Committee[0]} {
		tk := getTask(verifier)
		require.Equal(t, markettypes.TASK_STATUS_SETTLED, tk.Status, "task %d (%s) is paid", tk.Id, tk.Role)
		require.Equal(t, markettypes.FailedRoot(), tk.ResultRoot)
		require.True(t, tk.Paid.IsPositive())
	}
	require.Zero(t, slashCount(t, a, ss, a.Account("p2").Address), "the auditor is not slashed")
	require.Zero(t, slashCount(t, a, ss, a.Account("p3").Address), "the committee member is not slashed")
}

// An audit whose run fails without answering (a signal ended it: a machine with more
// memory or time may do better, so it is no answer that the job fails) is given back to
// the chain at once (MsgReleaseTask), which draws another auditor. Before, the auditor's
// worker sent a failure report, which the chain refuses for a verification task, again
// at every block until the audit's heartbeat lapsed.
func TestWorkerGivesBackAnAuditThatDidNotAnswer(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1", "p2"}, func(m *markettypes.Params) { m.CommitteeSize = 1 })
	var mu sync.Mutex
	liar := newWorkerIn(t, &mu, a, "p1", filepath.Join(t.TempDir(), "liar"), nil)
	j := job(t, a, exact(processSpec(a, `case "$FLOPS_OUTPUT_DIR" in */liar/*) echo made-up > "$FLOPS_OUTPUT_DIR/out" ;; *) kill -TERM $$ ;; esac`), 2))
	q := markettypesQuery(a)
	until(t, a, 80, "the task runs on the liar's node", func() bool {
		res, err := q.Task(a.Ctx(), &markettypes.QueryTaskRequest{TaskId: j.FirstTaskId})
		require.NoError(t, err)
		return res.Task.Status == markettypes.TASK_STATUS_RUNNING && res.Task.NodeId == liar.agent.Node().Id
	}, liar)
	auditor := newWorker(t, &mu, a, "p2", nil)
	sent := func(typeURL string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, u := range *auditor.sent {
			if u == typeURL {
				n++
			}
		}
		return n
	}
	until(t, a, 120, "the auditor gave its audit back", func() bool { return sent("/flops.market.v1.MsgReleaseTask") > 0 }, liar, auditor)
	require.Zero(t, sent("/flops.market.v1.MsgReportFailure"), "no failure report, which the chain refuses for an audit")
	tasks := tasksOfJob(t, a, j.Id)
	var audit *markettypes.Task
	for i := range tasks {
		if tasks[i].Role == markettypes.TASK_ROLE_AUDIT {
			audit = &tasks[i]
		}
	}
	require.NotNil(t, audit)
	require.Contains(t, audit.ExcludedNodes, auditor.agent.Node().Id, "given back: not drawn again for that node")
	require.Equal(t, 1, slashCount(t, a, sstypes.NewQueryClient(a.QueryConn()), a.Account("p2").Address), "a lapse's slash")
}
