package integration

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/testutil/apptest"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A scripted provider: it acks, commits and reveals its tasks the way flops-worker does,
// with the result root its behaviour gives (honest: the shard's true root; a cheater:
// another one), or stays silent.
type behaviour struct {
	cheat  bool // commit a wrong root
	silent bool // never act
	// late: hold a running task (with heartbeats) and commit only once the job's deadline
	// is less than its max_duration away, when a verification task bound by the job's
	// deadline could no longer run
	late bool
	// fails: the job fails on this provider's machine, as flops-worker says so: a primary
	// is reported failed (MsgReportFailure), a verification task answers the failed-run
	// root
	fails bool
}

// trueRoot is the correct result of a shard; a cheater's is different.
func trueRoot(job uint64, index uint32) []byte {
	r := sha256.Sum256([]byte(fmt.Sprintf("job %d shard %d: correct", job, index)))
	return r[:]
}

func cheatRoot(job uint64, index uint32) []byte {
	r := sha256.Sum256([]byte(fmt.Sprintf("job %d shard %d: skipped the work", job, index)))
	return r[:]
}

var driverSalt = []byte("worker-salt-0123456789")

// driver plays a set of providers.
type driver struct {
	t          *testing.T
	a          *apptest.App
	behaviours map[string]behaviour
}

func newDriver(t *testing.T, a *apptest.App, names ...string) *driver {
	d := &driver{t: t, a: a, behaviours: map[string]behaviour{}}
	for _, n := range names {
		d.behaviours[n] = behaviour{}
	}
	return d
}

// msgs is what one provider sends in the next block for its tasks.
func (d *driver) msgs(name string) []sdk.Msg {
	b := d.behaviours[name]
	if b.silent {
		return nil
	}
	acc := d.a.Account(name)
	q := marketkeeper.NewQueryServerImpl(d.a.MarketKeeper)
	res, err := q.TasksByProvider(d.a.Ctx(), &markettypes.QueryTasksByProviderRequest{Provider: acc.String()})
	require.NoError(d.t, err)
	var out []sdk.Msg
	next := d.a.Height() + 1
	for _, t := range res.Tasks {
		root := trueRoot(t.JobId, t.Index)
		switch {
		case b.cheat:
			root = cheatRoot(t.JobId, t.Index)
		case b.fails && t.Role == markettypes.TASK_ROLE_PRIMARY && t.Status == markettypes.TASK_STATUS_RUNNING:
			logs := sha256.Sum256([]byte(fmt.Sprintf("task %d on %s: exit status 2", t.Id, name)))
			out = append(out, &markettypes.MsgReportFailure{Provider: acc.String(), TaskId: t.Id, Reason: markettypes.FAILURE_REASON_EXIT,
				ExitCode: 2, LogRoot: logs[:], Detail: "command exited with code 2"})
			continue
		case b.fails:
			root = markettypes.FailedRoot()
		}
		switch t.Status {
		case markettypes.TASK_STATUS_ASSIGNED:
			out = append(out, &markettypes.MsgAckTask{Provider: acc.String(), TaskId: t.Id})
		case markettypes.TASK_STATUS_RUNNING:
			if b.late {
				job := getJob(d.t, d.a, t.JobId)
				if !d.a.BlockTime().Add(time.Second).Add(job.Spec.MaxDuration).After(job.Spec.Deadline) {
					if (d.a.Height()+1)%10 == 0 {
						out = append(out, &markettypes.MsgHeartbeat{Provider: acc.String(), NodeId: t.NodeId})
					}
					continue
				}
			}
			out = append(out, &markettypes.MsgCommitResult{Provider: acc.String(), TaskId: t.Id,
				Commitment: markettypes.Commitment(root, driverSalt, acc.Address)})
		case markettypes.TASK_STATUS_COMMITTED:
			if t.RevealDeadlineHeight != 0 && next > t.CommitHeight {
				out = append(out, &markettypes.MsgRevealResult{Provider: acc.String(), TaskId: t.Id, ResultRoot: root, Salt: driverSalt,
					OutputUri: fmt.Sprintf("https://%s.example.com/out/%d", name, t.Id)})
			}
		}
	}
	return out
}

// step runs one block with every provider's messages, one tx each, all succeeding.
func (d *driver) step() {
	d.t.Helper()
	var txs [][]byte
	for _, n := range sortedNames(d.behaviours) {
		if msgs := d.msgs(n); len(msgs) > 0 {
			txs = append(txs, d.a.SignTx(n, apptest.DefaultGas, msgs...))
		}
	}
	res := d.a.NextBlock(txs...)
	for i, r := range res.TxResults {
		require.Zerof(d.t, r.Code, "tx %d at height %d: %s", i, d.a.Height(), r.Log)
	}
}

// until steps blocks until done() or the limit, and fails the test at the limit.
func (d *driver) until(limit int, what string, done func() bool) {
	d.t.Helper()
	for i := 0; i < limit; i++ {
		if done() {
			return
		}
		d.step()
	}
	require.Truef(d.t, done(), "%s: not after %d blocks", what, limit)
}

func sortedNames(m map[string]behaviour) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// jobDone: every task of the job is final.
func jobDone(t *testing.T, a *apptest.App, job uint64) func() bool {
	return func() bool { return getJob(t, a, job).FinishedHeight != 0 }
}
