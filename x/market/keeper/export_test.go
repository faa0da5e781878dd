package keeper

import (
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/x/market/types"
)

// Draw is the scheduler's power-of-two-choices draw for one task: how many eligible
// candidates it gathered, the two it drew and their reputation, and the node it keeps.
type Draw struct {
	Candidates     int
	A, B           types.NodeSlot
	ScoreA, ScoreB sdkmath.LegacyDec
	Winner         types.NodeSlot
}

// DrawForTest replays pickNode for a pending task on ctx without writing anything, and
// returns the draw it makes. It follows pickNode step by step (candidates, seed, the two
// indices, the comparison); tests check that its winner is the node the scheduler then
// assigns, so that it cannot drift from pickNode unnoticed.
func (k Keeper) DrawForTest(ctx sdk.Context, taskID uint64) (Draw, bool, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return Draw{}, false, err
	}
	gp, err := k.gfl.GetParams(ctx)
	if err != nil {
		return Draw{}, false, err
	}
	t, err := k.Tasks.Get(ctx, taskID)
	if err != nil {
		return Draw{}, false, err
	}
	job, err := k.Jobs.Get(ctx, t.JobId)
	if err != nil {
		return Draw{}, false, err
	}
	excluded, err := k.excludedNodes(ctx, t)
	if err != nil {
		return Draw{}, false, err
	}
	classes := job.Spec.Requirements.AllowedClasses
	if len(classes) == 0 {
		for _, c := range gp.GpuClasses {
			classes = append(classes, c.Name)
		}
	}
	seed := k.drawSeed(ctx, t.Id, uint64(t.Reassignments))
	maxID, err := k.maxNodeID(ctx)
	if err != nil {
		return Draw{}, false, err
	}
	start := beacon.Below(seed, maxID+1)
	var pool []candidate
	budget := int(p.SchedulerMaxScan)
	for _, class := range classes {
		found, err := k.gather(ctx, p, job, excluded, class, start, int(p.SchedulerCandidates), &budget)
		if err != nil {
			return Draw{}, false, err
		}
		pool = append(pool, found...)
		if budget <= 0 {
			break
		}
	}
	if len(pool) == 0 {
		return Draw{}, false, nil
	}
	n := uint64(len(pool))
	a := beacon.Below(beacon.Derive(seed[:], "a"), n)
	b := a
	if n > 1 {
		b = (a + 1 + beacon.Below(beacon.Derive(seed[:], "b"), n-1)) % n
	}
	best := pool[a]
	if better(pool[b], best) {
		best = pool[b]
	}
	return Draw{
		Candidates: len(pool), A: pool[a].slot, B: pool[b].slot, ScoreA: pool[a].score, ScoreB: pool[b].score, Winner: best.slot,
	}, true, nil
}

// LoadPPM exposes loadPPM.
func LoadPPM(used, total uint32) uint32 { return loadPPM(used, total) }
