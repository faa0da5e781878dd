package keeper

import (
	"context"
	"errors"
	"math"
	"math/bits"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/pocp"
	"github.com/flopsnet/flops/x/gfl/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// The challenge life (docs/pocp.md): ISSUED by EndBlock on the node's schedule ->
// COMMITTED by MsgCommitChallenge before commit_deadline -> opened by MsgRevealChallenge
// after the sampling block and by reveal_deadline_height: PASSED with a power sample.
// No commitment in time: MISSED (a zero sample). A commitment not opened correctly in time:
// FAILED (a zero sample, a slash and a jail). A reveal that does not verify is refused
// with its error and changes nothing, so a node with a transient fault may retry within
// the window; one that cannot open its commitment correctly fails at the deadline: the
// chain cannot tell "won't" from "can't", and must not let a cheater walk away from a
// sample that landed on a wrong entry.

// GetChallenge returns an open challenge, or ErrChallengeNotFound.
func (k Keeper) GetChallenge(ctx context.Context, id uint64) (types.Challenge, error) {
	c, err := k.Challenges.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return c, errorsmod.Wrapf(types.ErrChallengeNotFound, "challenge %d is not open (unknown or finished)", id)
	}
	return c, err
}

func (k Keeper) issueChallenge(ctx sdk.Context, p types.Params, nodeID uint64, due int64) error {
	node, err := k.Nodes.Get(ctx, nodeID)
	if err != nil {
		return err
	}
	// A stale queue entry: the node was deactivated or rescheduled since.
	if !node.Schedulable() || node.NextChallengeHeight != due {
		return nil
	}
	if err := k.scheduleChallenge(ctx, &node, ctx.BlockHeight()+int64(p.ChallengeIntervalBlocks)); err != nil {
		return err
	}
	if node.OpenChallenge != 0 {
		// Still answering the previous one; it concludes on its own deadline.
		return k.Nodes.Set(ctx, nodeID, node)
	}
	op, err := k.operatorAddr("operator", node.Operator)
	if err != nil {
		return err
	}
	round, err := k.openRound(ctx, op, node.Operator)
	if err != nil {
		return err
	}
	if err := k.issueInto(ctx, p, &node, &round); err != nil {
		return err
	}
	return k.saveRound(ctx, round)
}

// issueInto issues a challenge to a node as a member of a round; it saves the node, the
// caller the round.
func (k Keeper) issueInto(ctx sdk.Context, p types.Params, node *types.Node, round *types.ChallengeRound) error {
	// The claim is a floor: a sample is quantised by block times and biased low when the
	// work is short, so sizing from it alone would shrink every next challenge. Claiming
	// less than the truth only lowers the node's own samples; claiming more only gives it
	// challenges it may fail to finish in time.
	estimate := max(node.ClaimedGflops, node.LastSampleGflops)
	n, r := pocp.ChooseSize(estimate, p.ChallengeTargetSeconds, p.ChallengeMinN, p.ChallengeMaxN, p.ChallengeMaxRn)
	id, err := k.ChallengeSeq.Next(ctx)
	if err != nil {
		return err
	}
	seed := pocp.ChallengeSeed(ctx.HeaderHash(), node.Id, id)
	st, err := k.Rebalance.Get(ctx)
	if err != nil {
		return err
	}
	c := types.Challenge{
		Id: id, NodeId: node.Id, Operator: node.Operator, Seed: seed[:], N: n, R: r, Samples: p.ChallengeSamples,
		IssuedHeight: ctx.BlockHeight(), IssuedTime: ctx.BlockTime(), CommitDeadline: ctx.BlockTime().Add(p.ChallengeCommitTimeout),
		Status: types.CHALLENGE_STATUS_ISSUED, Epoch: st.StatsEpoch, RoundId: round.Id,
	}
	if err := k.Challenges.Set(ctx, id, c); err != nil {
		return err
	}
	if err := k.CommitDeadlines.Set(ctx, collections.Join(c.CommitDeadline, id)); err != nil {
		return err
	}
	round.Issued++
	round.Members++
	node.OpenChallenge = id
	if err := k.Nodes.Set(ctx, node.Id, *node); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventChallengeIssued{
		ChallengeId: id, NodeId: node.Id, Operator: node.Operator, N: n, R: r, RoundId: round.Id,
	})
}

// CommitChallenge records the Merkle root of the node's answer. Elapsed time for the power
// sample runs from the issue block to this block.
func (k Keeper) CommitChallenge(ctx context.Context, operator sdk.AccAddress, id uint64, root []byte) (sampleHeight, revealDeadline int64, err error) {
	c, err := k.openChallengeOf(ctx, operator, id)
	if err != nil {
		return 0, 0, err
	}
	if c.Status != types.CHALLENGE_STATUS_ISSUED {
		return 0, 0, errorsmod.Wrapf(types.ErrChallengeClosed, "challenge %d is %s", id, c.Status)
	}
	if len(root) != 32 {
		return 0, 0, errorsmod.Wrapf(types.ErrInvalidRoot, "root is %d bytes, must be 32", len(root))
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	now := sdkCtx.BlockTime()
	if now.After(c.CommitDeadline) {
		return 0, 0, errorsmod.Wrapf(types.ErrCommitTooLate, "challenge %d: deadline %s, block time %s", id, c.CommitDeadline, now)
	}
	if !now.After(c.IssuedTime) {
		return 0, 0, errorsmod.Wrapf(types.ErrCommitTooLate, "challenge %d: a commitment needs elapsed time > 0", id)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, 0, err
	}
	if err := k.CommitDeadlines.Remove(ctx, collections.Join(c.CommitDeadline, id)); err != nil {
		return 0, 0, err
	}
	c.Status = types.CHALLENGE_STATUS_COMMITTED
	c.Root = root
	c.CommitHeight = sdkCtx.BlockHeight()
	c.CommitTime = now
	c.RevealDeadlineHeight = c.CommitHeight + 1 + int64(p.ChallengeRevealBlocks)
	if err := k.RevealDeadlines.Set(ctx, collections.Join(c.RevealDeadlineHeight, id)); err != nil {
		return 0, 0, err
	}
	if err := k.Challenges.Set(ctx, id, c); err != nil {
		return 0, 0, err
	}
	if err := k.roundLeftIssued(sdkCtx, c, true); err != nil {
		return 0, 0, err
	}
	err = sdkCtx.EventManager().EmitTypedEvent(&types.EventChallengeCommitted{
		ChallengeId: id, NodeId: c.NodeId, ElapsedMs: uint64(now.Sub(c.IssuedTime).Milliseconds()), SampleHeight: c.CommitHeight + 1,
	})
	return c.CommitHeight + 1, c.RevealDeadlineHeight, err
}

// RevealChallenge opens the sampled chunks: the chain draws the k positions from the
// beacon's value for the block after the commitment, charges gas for the recomputation, and checks every
// Merkle path and every sampled entry. It returns the power sample, in GFLOP/s.
func (k Keeper) RevealChallenge(ctx context.Context, operator sdk.AccAddress, id uint64, proofs []types.ChunkProof) (uint64, error) {
	if err := types.ValidateProofSizes("proofs", proofs); err != nil {
		return 0, err
	}
	c, err := k.openChallengeOf(ctx, operator, id)
	if err != nil {
		return 0, err
	}
	if c.Status != types.CHALLENGE_STATUS_COMMITTED {
		return 0, errorsmod.Wrapf(types.ErrChallengeClosed, "challenge %d is %s", id, c.Status)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	sampleHeight := c.CommitHeight + 1
	if h := sdkCtx.BlockHeight(); h <= sampleHeight {
		return 0, errorsmod.Wrapf(types.ErrRevealTooEarly, "challenge %d: reveal after height %d, this is %d", id, sampleHeight, h)
	} else if h > c.RevealDeadlineHeight {
		return 0, errorsmod.Wrapf(types.ErrRevealTooLate, "challenge %d: deadline height %d, this is %d", id, c.RevealDeadlineHeight, h)
	}
	elapsed, err := k.revealWindow(sdkCtx, c)
	if err != nil {
		return 0, err
	}
	hash, _, _, err := k.BeaconValue(ctx, sampleHeight)
	if err != nil {
		return 0, errorsmod.Wrap(types.ErrBeaconUnavailable, err.Error())
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	pc := pocp.Challenge{N: c.N, R: c.R}
	copy(pc.Seed[:], c.Seed)
	sdkCtx.GasMeter().ConsumeGas(verifyGas(pocp.VerifyTerms(pc, int(c.Samples)), p.VerifyGasPerKterm), "pocp reveal verification")

	pp := make([]pocp.ChunkProof, len(proofs))
	for i, pr := range proofs {
		pp[i] = pocp.ChunkProof{Index: pr.Index, Chunk: pr.Chunk, Path: make([][32]byte, len(pr.Path))}
		for j, h := range pr.Path {
			if len(h) != 32 {
				return 0, errorsmod.Wrapf(types.ErrMalformedReveal, "proofs[%d].path[%d] is %d bytes, must be 32", i, j, len(h))
			}
			copy(pp[i].Path[j][:], h)
		}
	}
	var root [32]byte
	copy(root[:], c.Root)
	positions := pocp.SamplePositions(pocp.SampleSeed(hash, c.Id), c.N, int(c.Samples))
	if err := pocp.VerifyReveal(pc, root, positions, pp); err != nil {
		switch {
		case errors.Is(err, pocp.ErrWrongEntry):
			return 0, errorsmod.Wrap(types.ErrWrongEntry, err.Error())
		case errors.Is(err, pocp.ErrBadProof):
			return 0, errorsmod.Wrap(types.ErrBadProof, err.Error())
		default:
			return 0, errorsmod.Wrap(types.ErrMalformedReveal, err.Error())
		}
	}
	power := pocp.PowerGFLOPS(c.N, c.R, uint64(elapsed))
	return power, k.concludeChallenge(ctx, c, types.CHALLENGE_STATUS_PASSED, power, "")
}

// verifyGas is terms * gasPerKterm / 1000, saturating instead of overflowing.
func verifyGas(terms, gasPerKterm uint64) uint64 {
	hi, lo := bits.Mul64(terms, gasPerKterm)
	if hi >= 1000 {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, 1000)
	return q
}

func (k Keeper) openChallengeOf(ctx context.Context, op sdk.AccAddress, id uint64) (types.Challenge, error) {
	operator, err := k.addressString("operator", op)
	if err != nil {
		return types.Challenge{}, err
	}
	c, err := k.GetChallenge(ctx, id)
	if err != nil {
		return c, err
	}
	if c.Operator != operator {
		return c, errorsmod.Wrapf(types.ErrNotOperator, "challenge %d is for %s, not %s", id, c.Operator, operator)
	}
	return c, nil
}

// concludeChallenge records a challenge's outcome in its node's statistics for the
// current epoch, removes the challenge and its deadlines, and applies the penalty of a
// failure.
func (k Keeper) concludeChallenge(ctx context.Context, c types.Challenge, status types.ChallengeStatus, power uint64, reason string) error {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	node, err := k.Nodes.Get(ctx, c.NodeId)
	if err != nil {
		return err
	}
	st, err := k.Rebalance.Get(ctx)
	if err != nil {
		return err
	}
	key := collections.Join(c.NodeId, st.StatsEpoch)
	stats, err := k.Stats.Get(ctx, key)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		stats = types.NodeEpochStats{NodeId: c.NodeId, Epoch: st.StatsEpoch}
	} else if err != nil {
		return err
	}
	stats.Issued++
	measured := false // the sample shows the node within its class's range for the first time
	switch status {
	case types.CHALLENGE_STATUS_PASSED:
		stats.Passed++
		if uint32(len(stats.Samples)) < p.MaxSamplesPerEpoch {
			stats.Samples = append(stats.Samples, power)
		}
		node.LastSampleGflops = power
		if node.AwaitingMeasurement {
			cls, ok := p.Class(node.GpuClass)
			measured = !ok || cls.InRange(node.PerGPU(power))
			node.AwaitingMeasurement = !measured
		}
	case types.CHALLENGE_STATUS_FAILED:
		stats.Failed++
	default:
		stats.Missed++
	}
	if err := k.Stats.Set(ctx, key, stats); err != nil {
		return err
	}
	if node.OpenChallenge == c.Id {
		node.OpenChallenge = 0
	}
	if err := k.Nodes.Set(ctx, node.Id, node); err != nil {
		return err
	}
	if measured {
		// the market schedules the node from now on
		if err := k.gflHooks().AfterNodeChanged(ctx, node); err != nil {
			return err
		}
	}
	if err := k.Challenges.Remove(ctx, c.Id); err != nil {
		return err
	}
	if err := k.CommitDeadlines.Remove(ctx, collections.Join(c.CommitDeadline, c.Id)); err != nil {
		return err
	}
	if c.RevealDeadlineHeight != 0 {
		if err := k.RevealDeadlines.Remove(ctx, collections.Join(c.RevealDeadlineHeight, c.Id)); err != nil {
			return err
		}
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if c.Status == types.CHALLENGE_STATUS_ISSUED {
		if err := k.roundLeftIssued(sdkCtx, c, false); err != nil {
			return err
		}
	}
	if err := k.roundConcluded(sdkCtx, c); err != nil {
		return err
	}
	if err := sdkCtx.EventManager().EmitTypedEvent(&types.EventChallengeFinished{
		ChallengeId: c.Id, NodeId: c.NodeId, Status: status, PowerGflops: power, Reason: reason,
	}); err != nil {
		return err
	}
	if status == types.CHALLENGE_STATUS_FAILED {
		op, err := k.operatorAddr("operator", c.Operator)
		if err != nil {
			return err
		}
		ev := sstypes.SlashEvidence{NodeId: c.NodeId, ChallengeId: c.Id}
		if _, err := k.collateral.Slash(ctx, op, p.WrongAnswerSlashPpm, sstypes.SLASH_REASON_WRONG_POCP, sstypes.Beneficiaries{}, ev); err != nil {
			return err
		}
		if err := k.collateral.Jail(ctx, op, sdkCtx.BlockTime().Add(p.WrongAnswerJail), ev); err != nil {
			return err
		}
	}
	return k.gflHooks().AfterChallengeFinished(ctx, node, c.Id, status)
}
