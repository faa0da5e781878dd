package keeper

import (
	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

// Challenge rounds (docs/pocp.md, "Rounds"): one machine must not pass PoCP for several
// nodes by answering their challenges one after the other. So an operator's nodes are
// challenged together. A node due for a challenge joins its operator's open round (one
// whose members are still answering) or opens a new one, which then pulls in every other
// schedulable node of the operator without an open challenge: in the same block while
// the block budget lasts, else from its cursor in the next blocks. The round closes when
// no member is left to commit (each committed or missed), and every member's power
// sample is its work over the time from the round's first block to the round's last
// commitment: whatever the hardware did in between, it did all the members' work in that
// time, so the samples of an operator's nodes add up to at most the speed of the machines
// that answered. Reveals are taken once the round has closed; a member's reveal deadline
// runs from the close (expireReveal moves it while the round is open).

// openRound returns the operator's open round, or opens a new one that pulls in the
// operator's other nodes.
func (k Keeper) openRound(ctx sdk.Context, op sdk.AccAddress, operator string) (types.ChallengeRound, error) {
	id, err := k.OperatorRounds.Get(ctx, op)
	switch {
	case err == nil:
		r, err := k.Rounds.Get(ctx, id)
		if err == nil && r.Issued > 0 {
			return r, nil
		}
		if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
			return r, err
		}
	case !errorsmod.IsOf(err, collections.ErrNotFound):
		return types.ChallengeRound{}, err
	}
	if id, err = k.RoundSeq.Next(ctx); err != nil {
		return types.ChallengeRound{}, err
	}
	r := types.ChallengeRound{
		Id: id, Operator: operator, StartHeight: ctx.BlockHeight(), StartTime: ctx.BlockTime(), Pulling: true,
	}
	if err := k.OperatorRounds.Set(ctx, op, id); err != nil {
		return r, err
	}
	return r, k.RoundPulls.Set(ctx, collections.Join(r.StartHeight, id))
}

// saveRound stores a round, or removes it once nothing refers to it any more (no open
// member, no pull left).
func (k Keeper) saveRound(ctx sdk.Context, r types.ChallengeRound) error {
	if r.Members > 0 || r.Issued > 0 || r.Pulling {
		return k.Rounds.Set(ctx, r.Id, r)
	}
	if err := k.Rounds.Remove(ctx, r.Id); err != nil {
		return err
	}
	op, err := k.operatorAddr("operator", r.Operator)
	if err != nil {
		return err
	}
	if cur, err := k.OperatorRounds.Get(ctx, op); err == nil && cur == r.Id {
		return k.OperatorRounds.Remove(ctx, op)
	} else if err != nil && !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	return nil
}

// pullRound examines the operator's next node after the round's cursor and challenges it
// in the round if it is schedulable and not answering a challenge already. It is done
// when the operator has no further node, or when the round closed before the pull
// reached the rest (they are challenged on their own schedule, in a round of their own).
func (k Keeper) pullRound(ctx sdk.Context, p types.Params, id uint64) (bool, error) {
	r, err := k.Rounds.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	if !r.Pulling {
		return true, nil
	}
	op, err := k.operatorAddr("operator", r.Operator)
	if err != nil {
		return false, err
	}
	next, found, err := k.nextNodeOf(ctx, op, r.PullCursor)
	if err != nil {
		return false, err
	}
	if !found || r.Issued == 0 {
		r.Pulling = false
		return true, k.saveRound(ctx, r)
	}
	r.PullCursor = next
	node, err := k.Nodes.Get(ctx, next)
	if err != nil {
		return false, err
	}
	if node.Schedulable() && node.OpenChallenge == 0 {
		if err := k.scheduleChallenge(ctx, &node, ctx.BlockHeight()+int64(p.ChallengeIntervalBlocks)); err != nil {
			return false, err
		}
		if err := k.issueInto(ctx, p, &node, &r); err != nil {
			return false, err
		}
	}
	return false, k.saveRound(ctx, r)
}

// nextNodeOf returns the operator's first node id above after.
func (k Keeper) nextNodeOf(ctx sdk.Context, op sdk.AccAddress, after uint64) (uint64, bool, error) {
	rng := collections.NewPrefixedPairRange[sdk.AccAddress, uint64](op).StartExclusive(after)
	it, err := k.Nodes.Indexes.ByOperator.Iterate(ctx, rng)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = it.Close() }()
	if !it.Valid() {
		return 0, false, nil
	}
	id, err := it.PrimaryKey()
	return id, err == nil, err
}

// roundLeftIssued records that a member of a round left ISSUED: committed at the block's
// time, or not (missed, dropped). The round closes when no member is left ISSUED.
func (k Keeper) roundLeftIssued(ctx sdk.Context, c types.Challenge, committed bool) error {
	r, ok, err := k.roundOf(ctx, c)
	if !ok || err != nil {
		return err
	}
	if r.Issued > 0 {
		r.Issued--
	}
	if committed {
		r.Committed++
		if ctx.BlockTime().After(r.LastCommitTime) {
			r.LastCommitTime = ctx.BlockTime()
		}
	}
	if r.Issued == 0 {
		r.ClosedHeight = ctx.BlockHeight()
		ev := types.EventChallengeRoundClosed{RoundId: r.Id, Operator: r.Operator, Committed: r.Committed}
		if r.Committed > 0 {
			ev.ElapsedMs = uint64(r.LastCommitTime.Sub(r.StartTime).Milliseconds())
		}
		if err := ctx.EventManager().EmitTypedEvent(&ev); err != nil {
			return err
		}
	}
	return k.saveRound(ctx, r)
}

// roundConcluded records that a member of a round was concluded or dropped.
func (k Keeper) roundConcluded(ctx sdk.Context, c types.Challenge) error {
	r, ok, err := k.roundOf(ctx, c)
	if !ok || err != nil {
		return err
	}
	if r.Members > 0 {
		r.Members--
	}
	return k.saveRound(ctx, r)
}

// roundOf returns a challenge's round (none for a challenge issued before rounds).
func (k Keeper) roundOf(ctx sdk.Context, c types.Challenge) (types.ChallengeRound, bool, error) {
	if c.RoundId == 0 {
		return types.ChallengeRound{}, false, nil
	}
	r, err := k.Rounds.Get(ctx, c.RoundId)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return r, false, nil
	}
	return r, err == nil, err
}

// revealWindow says whether a committed challenge can be revealed now, and the elapsed
// time its sample is measured over: from its round's first block to the round's last
// commitment, once the round is closed (from its own issue to its commitment for a
// challenge without a round).
func (k Keeper) revealWindow(ctx sdk.Context, c types.Challenge) (elapsedMs int64, err error) {
	r, ok, err := k.roundOf(ctx, c)
	if err != nil {
		return 0, err
	}
	if !ok {
		return c.CommitTime.Sub(c.IssuedTime).Milliseconds(), nil
	}
	if r.Issued > 0 {
		return 0, errorsmod.Wrapf(types.ErrRevealTooEarly, "challenge %d: its round %d is open, %d of the operator's challenges are not committed yet", c.Id, r.Id, r.Issued)
	}
	return r.LastCommitTime.Sub(r.StartTime).Milliseconds(), nil
}

// revealDeadline is the last height a committed challenge may be revealed at: its own
// deadline, moved to challenge_reveal_blocks after its round's close (and while the round
// is open, on by challenge_reveal_blocks at a time).
func (k Keeper) revealDeadline(ctx sdk.Context, p types.Params, c types.Challenge) (int64, error) {
	r, ok, err := k.roundOf(ctx, c)
	if !ok || err != nil {
		return c.RevealDeadlineHeight, err
	}
	if r.Issued > 0 {
		return max(c.RevealDeadlineHeight, ctx.BlockHeight()+int64(p.ChallengeRevealBlocks)), nil
	}
	return max(c.RevealDeadlineHeight, r.ClosedHeight+1+int64(p.ChallengeRevealBlocks)), nil
}
