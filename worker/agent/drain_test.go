package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/agent"
	"github.com/flopsnet/flops/worker/config"
	"github.com/flopsnet/flops/worker/gpu"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A provider takes its busy machine down for maintenance with `flops-worker drain`
// (agent.Drain): a plain deactivation is refused while a task is in flight, and stopping
// the worker would abandon it. Drained, the node takes no new job, and the running worker
// withdraws its open bid (which would forfeit its deposit if it won: a node off the market
// cannot take the tasks) and leaves its pool, runs its task to the end, and the chain then
// deactivates the node. Started again after the maintenance, the worker puts the node
// back (registering its GPUs anew was refused: the inactive node still owns them).
func TestWorkerDrainsItsNodeAndComesBack(t *testing.T) {
	a := appWithProvidersEdit(t, []string{"p1"}, func(m *markettypes.Params) { m.AuctionWindowBlocks = 200 })
	var mu sync.Mutex
	home := t.TempDir()
	pool := gemmPool(t, a, 0)
	joinPool := func(c *config.Config) { c.Pools.Auto = false; c.Pools.Join = []uint64{pool} }
	var logs syncBuffer
	w := newWorkerOn(t, &mu, a, "p1", home, gpu.NewCPUOnly("test"), workerWith{log: &logs}, joinPool)
	node := w.agent.Node().Id
	passChallenge(t, a, w)
	q := markettypesQuery(a)
	gq := gfltypes.NewQueryClient(a.QueryConn())
	status := func() gfltypes.NodeStatus {
		res, err := gq.Node(a.Ctx(), &gfltypes.QueryNodeRequest{NodeId: node})
		require.NoError(t, err)
		return res.Node.Status
	}
	member := func() bool {
		res, err := q.PoolMembers(a.Ctx(), &markettypes.QueryPoolMembersRequest{PoolId: pool})
		require.NoError(t, err)
		return len(res.Members) == 1
	}
	until(t, a, 10, "the worker joined its pool", member, w)

	auction := job(t, a, gemmSpec(a, markettypes.ALLOCATION_MODE_AUCTION))
	until(t, a, 10, "a bid in the auction", func() bool { return bidsOn(t, a, auction.Id) == 1 }, w)
	taskOf := func(j uint64) markettypes.Task {
		res, err := q.TasksByJob(a.Ctx(), &markettypes.QueryTasksByJobRequest{JobId: j})
		require.NoError(t, err)
		require.NotEmpty(t, res.Tasks)
		return res.Tasks[0]
	}
	one := gemmSpec(a, markettypes.ALLOCATION_MODE_ASSIGN)
	one.TaskCount = 1
	running := job(t, a, one)
	require.Equal(t, markettypes.TASK_STATUS_ASSIGNED, taskOf(running.Id).Status, "assigned to the node, not yet taken up")

	// the operator's deactivation is refused
	ch := appChain{mu: &mu, a: a, name: "p1", sent: new([]string)} // the operator's CLI, beside its worker
	_, err := ch.Submit(context.Background(), &gfltypes.MsgDeactivateNode{Operator: ch.Address().String(), NodeId: node})
	require.ErrorIs(t, err, gfltypes.ErrNodeBusy)
	// the drain is handed to the running worker, which sends it with its own transactions
	// (the command signing it with the same key would race the worker for its sequence)
	stateDir := filepath.Join(home, "state")
	require.NoError(t, agent.RequestDrain(stateDir, node, false))
	until(t, a, 5, "the worker sent the drain", func() bool {
		done, err := agent.DrainResult(stateDir)
		require.NoError(t, err)
		return done
	}, w)
	require.Contains(t, *w.sent, sdk.MsgTypeURL(&gfltypes.MsgDeactivateNode{}), "sent by the worker")
	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, status())
	require.NoError(t, agent.RequestDrain(stateDir, node+1, true))
	tick(t, a, w)
	_, err = agent.DrainResult(stateDir)
	require.ErrorContains(t, err, fmt.Sprintf("this worker runs node %d, not node %d", node, node+1))

	// with no worker on the state directory named, the command signs itself: here the
	// drain's cancel, then the drain again
	var out bytes.Buffer
	alone := agent.DrainOptions{StateDir: t.TempDir(), Handoff: 50 * time.Millisecond}
	cancel := alone
	cancel.Cancel = true
	require.NoError(t, agent.Drain(context.Background(), ch, cancel, &out))
	require.Contains(t, out.String(), "is NODE_STATUS_ACTIVE again")
	require.Equal(t, gfltypes.NODE_STATUS_ACTIVE, status())
	require.NoError(t, agent.Drain(context.Background(), ch, alone, &out))
	require.Contains(t, out.String(), "is draining: no new work; it is deactivated when its 1 tasks in flight end")
	require.Equal(t, gfltypes.NODE_STATUS_DRAINING, status())
	require.ErrorIs(t, agent.Drain(context.Background(), ch, alone, &out), agent.ErrNoNodeToDrain, "no node left on the market")
	require.Equal(t, []string{sdk.MsgTypeURL(&gfltypes.MsgDeactivateNode{}), sdk.MsgTypeURL(&gfltypes.MsgReactivateNode{}), sdk.MsgTypeURL(&gfltypes.MsgDeactivateNode{})}, *ch.sent)

	waiting := job(t, a, one)
	require.Equal(t, markettypes.TASK_STATUS_PENDING, taskOf(waiting.Id).Status, "no new task for a draining node")
	until(t, a, 30, "the node deactivated once its task ended", func() bool { return status() == gfltypes.NODE_STATUS_INACTIVE }, w)
	tk := taskOf(running.Id)
	require.Equal(t, node, tk.NodeId)
	require.Zero(t, tk.Reassignments, "run to its end here, not abandoned")
	require.Contains(t, []markettypes.TaskStatus{markettypes.TASK_STATUS_REVEALED, markettypes.TASK_STATUS_VERIFIED, markettypes.TASK_STATUS_SETTLED}, tk.Status)
	until(t, a, 10, "the open bid withdrawn and the pool left", func() bool { return bidsOn(t, a, auction.Id) == 0 && !member() }, w)
	require.Equal(t, markettypes.TASK_STATUS_PENDING, taskOf(waiting.Id).Status)
	tick(t, a, w)
	require.Contains(t, logs.String(), "the node drained: deactivated, its collateral unlocked; the worker can be stopped")

	// back after the maintenance: the worker started again reactivates the node
	w2 := newWorkerIn(t, &mu, a, "p1", home, joinPool)
	require.Equal(t, node, w2.agent.Node().Id, "the same node")
	require.Equal(t, gfltypes.NODE_STATUS_ACTIVE, status())
	until(t, a, 40, "the waiting job's tasks assigned to it once its challenge passed", func() bool {
		return taskOf(waiting.Id).NodeId == node
	}, w2)
	until(t, a, 10, "the pool joined again", member, w2)
}

// syncBuffer is a log the worker's goroutines write while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
