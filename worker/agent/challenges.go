package agent

import (
	"context"
	"fmt"

	"github.com/flopsnet/flops/worker/config"

	wpocp "github.com/flopsnet/flops/worker/pocp"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// challengeActions answers the node's PoCP challenges: an issued one is solved beside the
// loop and committed as soon as it is solved and the chain is past its issue block (the
// measured power is the work over the time from the start of the operator's challenge
// round to the round's last commitment); a committed one is revealed once the block
// after the commitment, whose hash draws the samples, is committed and the round is
// closed.
func (a *Agent) challengeActions(ctx context.Context, height int64) []action {
	op := a.o.Chain.Address().String()
	res, err := a.gfl.OpenChallenges(ctx, &gfltypes.QueryOpenChallengesRequest{Operator: op})
	if err != nil {
		a.log.Warn("open challenges", "err", err)
		return nil
	}
	var acts []action
	open := map[uint64]bool{}
	for _, c := range res.Challenges {
		if c.NodeId != a.node.Id {
			continue
		}
		open[c.Id] = true
		switch c.Status {
		case gfltypes.CHALLENGE_STATUS_ISSUED:
			a.solve(ctx, c, true)
			a.mu.Lock()
			ch := a.answers[c.Id]
			a.mu.Unlock()
			a.background(ctx, func(ctx context.Context) error { a.commitChallenge(ctx, c, ch); return nil })
		case gfltypes.CHALLENGE_STATUS_COMMITTED:
			if act, ok := a.revealChallenge(ctx, height, c); ok {
				acts = append(acts, act)
			}
		}
	}
	a.mu.Lock()
	for id := range a.answers {
		if !open[id] {
			delete(a.answers, id)
		}
	}
	a.mu.Unlock()
	return acts
}

// solve starts solving a challenge unless it is being (or was) solved; commit: send the
// commitment as soon as the answer is ready.
func (a *Agent) solve(ctx context.Context, c gfltypes.Challenge, commit bool) {
	a.mu.Lock()
	ch, ok := a.answers[c.Id]
	if ok && ch.phase != challengeFailed {
		a.mu.Unlock()
		return
	}
	ch = &challenge{phase: challengeSolving}
	a.answers[c.Id] = ch
	a.mu.Unlock()
	pc := gflpocp.Challenge{N: c.N, R: c.R}
	copy(pc.Seed[:], c.Seed)
	// the node is measured whole: an external solver spreads the challenge over its GPUs
	// a card in MIG mode through its instances (CUDA cannot use it whole), those of the
	// registered node that the machine still has (a card lost since waits in the node's
	// spec while the chain refuses the change under its tasks)
	gpus := a.present(gfltypes.SchedulableUUIDs(a.node.Gpus))
	a.background(ctx, func(ctx context.Context) error {
		ans, err := wpocp.Prepare(wpocp.OnDevices(ctx, gpus), a.o.Solver, pc)
		a.mu.Lock()
		ch.phase, ch.answer, ch.err = challengeSolved, ans, err
		if err != nil {
			ch.phase = challengeFailed
		}
		a.mu.Unlock()
		if err != nil {
			return fmt.Errorf("challenge %d: %w", c.Id, err)
		}
		gflops := wpocp.GFLOPS(c.N, c.R, ans.Elapsed())
		if m := a.o.Metrics; m != nil {
			m.ObservePoCPSolve(a.o.Solver.Name(), ans.Elapsed(), float64(gflops))
		}
		a.log.Info("challenge solved", "challenge", c.Id, "n", c.N, "r", c.R, "took", ans.Elapsed(), "gflops", gflops)
		if commit {
			a.commitChallenge(ctx, c, ch)
		}
		return nil
	})
}

// commitChallenge sends a solved challenge's commitment, once the chain is past the issue
// block: a commitment simulated on the issue block's state has no elapsed time and is
// refused. A refused commitment is sent again at the next tick.
func (a *Agent) commitChallenge(ctx context.Context, c gfltypes.Challenge, ch *challenge) {
	a.mu.Lock()
	if ch == nil || ch.phase != challengeSolved || a.height <= c.IssuedHeight {
		a.mu.Unlock()
		return
	}
	ch.phase = challengeCommitting
	root := ch.answer.Root
	a.mu.Unlock()
	if a.cfg.Cheat && config.CheatBuild {
		root[0] ^= 0xff // a wrong answer: the reveal cannot verify
	}
	err := a.submit(ctx, fmt.Sprintf("commit challenge %d", c.Id),
		&gfltypes.MsgCommitChallenge{Operator: a.o.Chain.Address().String(), ChallengeId: c.Id, Root: root[:]})
	a.mu.Lock()
	ch.phase = challengeCommitted
	if err != nil {
		ch.phase = challengeSolved // sent again at the next tick
	}
	a.mu.Unlock()
}

// revealChallenge opens the sampled chunks of a committed challenge.
func (a *Agent) revealChallenge(ctx context.Context, height int64, c gfltypes.Challenge) (action, bool) {
	// The sampling block is CommitHeight+1; the chain takes the reveal in a later block, and
	// a node simulates the tx at its last committed height, so wait for one more block.
	if height < c.CommitHeight+2 {
		return action{}, false
	}
	if c.RoundId != 0 {
		// The chain takes reveals once every challenge of the operator's round is
		// committed or missed: the samples are measured to the round's last commitment.
		res, err := a.gfl.ChallengeRound(ctx, &gfltypes.QueryChallengeRoundRequest{RoundId: c.RoundId})
		if err != nil {
			a.log.Warn("challenge round", "challenge", c.Id, "round", c.RoundId, "err", err)
			return action{}, false
		}
		if res.Round.Issued > 0 {
			return action{}, false
		}
	}
	a.mu.Lock()
	ch, ok := a.answers[c.Id]
	if !ok || ch.answer == nil {
		a.mu.Unlock()
		// restarted after committing: solve again (deterministic), reveal next block
		a.solve(ctx, c, false)
		return action{}, false
	}
	switch ch.phase {
	case challengeRevealing, challengeSolving, challengeFailed:
		a.mu.Unlock()
		return action{}, false
	}
	// the chain shows the commitment: committed, whatever this machine remembers
	ch.phase = challengeRevealing
	ans := ch.answer
	a.mu.Unlock()
	back := func() {
		a.mu.Lock()
		ch.phase = challengeCommitted // try again next block
		a.mu.Unlock()
	}
	hash, err := a.beaconValue(ctx, c.CommitHeight+1)
	if err != nil {
		a.log.Warn("sample block hash", "challenge", c.Id, "err", err)
		back()
		return action{}, false
	}
	positions := gflpocp.SamplePositions(gflpocp.SampleSeed(hash, c.Id), c.N, int(c.Samples))
	msg := &gfltypes.MsgRevealChallenge{Operator: a.o.Chain.Address().String(), ChallengeId: c.Id, Proofs: ans.Proofs(positions)}
	return action{what: fmt.Sprintf("reveal challenge %d", c.Id), msgs: msgs(msg), after: func(err error) {
		if err != nil {
			back()
			return
		}
		a.log.Info("challenge revealed", "challenge", c.Id)
	}}, true
}

// beaconValue is the chain's beacon value for a committed block, which the sample
// positions of PoCP and GEMM reveals derive from: a drand round's randomness, its
// fallback block's hash, or (drand off) the block's own hash. It is unavailable for a
// few seconds after the block while the drand round is on its way.
func (a *Agent) beaconValue(ctx context.Context, height int64) ([]byte, error) {
	res, err := a.gfl.Beacon(ctx, &gfltypes.QueryBeaconRequest{Height: height})
	if err != nil {
		return nil, err
	}
	return res.Value, nil
}
