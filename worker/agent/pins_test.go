package agent

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// pinsOf is an agent's GPU bookkeeping alone: a node of registered GPUs on the chain, the
// machine's units (the first of them), and the pins given.
func pinsOf(registered, units int, pinned map[string]uint64) *Agent {
	a := &Agent{log: slog.New(slog.NewTextHandler(io.Discard, nil)), pinned: pinned, gpuWait: map[uint64]gpuWait{}, runs: map[uint64]*run{}}
	for i := range registered {
		u := fmt.Sprintf("GPU-%d", i)
		a.node.Gpus = append(a.node.Gpus, gfltypes.GpuInfo{Uuid: u})
		if i < units {
			a.units = append(a.units, u)
		}
	}
	return a
}

// What pinFree makes of a task the machine cannot give its GPUs now: it waits while they
// may come free (runs the chain no longer has here, pool units giving theirs up), and is
// given back (gone) when the machine lacks GPUs its node has on the chain.
func TestPinFreeTellsWaitingFromGone(t *testing.T) {
	task := func(id uint64) map[string]uint64 {
		return map[string]uint64{"GPU-0": id, "GPU-1": id, "GPU-2": id, "GPU-3": id}
	}
	for _, c := range []struct {
		name              string
		registered, units int
		pinned            map[string]uint64
		need              uint32
		pins              []string
		gone              bool
	}{
		{name: "free", registered: 8, units: 8, pinned: task(1), need: 4, pins: []string{"GPU-4", "GPU-5", "GPU-6", "GPU-7"}},
		{name: "held by a task the chain moved away", registered: 8, units: 8, pinned: task(1), need: 5},
		{name: "more than the machine has", registered: 8, units: 7, pinned: map[string]uint64{}, need: 8, gone: true},
		// 4 held, 3 free on a machine that lost a card the chain still counts: the chain
		// saw 4 free
		{name: "a card lost the chain still counts", registered: 8, units: 7, pinned: task(1), need: 4, gone: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := pinsOf(c.registered, c.units, c.pinned)
			pins, why, gone := a.pinFree(9, c.need)
			require.Equal(t, c.pins, pins)
			require.Equal(t, c.pins == nil, why != "", why)
			require.Equal(t, c.gone, gone, why)
		})
	}
}

// A task whose run is no longer here (stopped by a refused ack between the tick's start
// and its actions) has nothing to give back: releaseAction says so. It read the run's
// error before it checked that there was a run, and panicked.
func TestReleaseActionWithoutARun(t *testing.T) {
	a := pinsOf(1, 1, map[string]uint64{})
	_, ok := a.releaseAction(markettypes.Task{Id: 7, Status: markettypes.TASK_STATUS_ASSIGNED})
	require.False(t, ok)
}
