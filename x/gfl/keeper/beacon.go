package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	"github.com/oasisprotocol/curve25519-voi/primitives/ed25519/extra/ecvrf"

	sdked25519 "github.com/cosmos/cosmos-sdk/crypto/keys/ed25519"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/x/gfl/types"
)

var _ beacon.Beacon = Keeper{}

// The beacon's value for a committed block h (internal/beacon; every draw bound to h is
// sha256(value || domain || ids)):
//
//	drand off:  the block's value ("block"), a chain of the proposers' VRF outputs:
//	            value(h) = sha256("revealed" || value(h-1) || VRF_h), where VRF_h is the
//	            output of h's proposer's ECVRF (RFC 9381, its ed25519 consensus key) over
//	            the chain id, h and value(h-1), carried by MsgProposerRandomness first in
//	            the block; a block without it has value(h) = sha256("withheld" ||
//	            value(h-1) || h). A VRF's output is unique for a key and an input, so the
//	            proposer cannot re-roll it by trying block variants: its one choice is to
//	            reveal or to leave out, two values.
//	drand on:   the randomness of the drand round bound to h when h was made,
//	            round_at(time of h) + delay_rounds, published after h ("drand"); nobody
//	            below the drand network's threshold can choose it. If that round is not
//	            on chain by block h + wait_blocks, the value of block h + wait_blocks
//	            ("fallback"): to steer a fallback, a proposer must keep the round off
//	            chain for wait_blocks blocks (every proposer in between censoring every
//	            submitter) and propose block h + wait_blocks. Until one of the two is
//	            known the value is unavailable and the draws wait.
//
// A round stored after block h + wait_blocks does not change h's value: it fell back
// already, and every answer, once given, stays.

// DrandVerifyGas is charged for a MsgSubmitBeacon's pairing check (about 1.2 ms here, a
// bank send's gas is about 60,000).
const DrandVerifyGas = 200_000

// VRFVerifyGas is charged for checking a proposer's VRF proof (0.14 ms here; proving
// takes as long, once per proposed block).
const VRFVerifyGas = 50_000

// Domains of a block's value and of its proposer's VRF input.
const (
	vrfInputDomain = "flops/beacon/vrf-input/v1"
	revealedDomain = "flops/beacon/revealed/v1"
	withheldDomain = "flops/beacon/withheld/v1"
)

// bindBlock binds the block to its drand round when drand is on, and forgets what
// fell out of the window (BeginBlock: constant work, and the rounds older than the
// window's oldest block: about one per drand period). The block's own value is fixed
// during the block: by its proposer's MsgProposerRandomness, or at its end (sealBlockValue).
func (k Keeper) bindBlock(ctx sdk.Context) error {
	h := ctx.BlockHeight()
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if d := p.Drand; len(d.PublicKey) > 0 {
		round := beacon.DrandRoundAt(d.GenesisTime, d.PeriodSeconds, ctx.BlockTime()) + uint64(d.DelayRounds)
		if err := k.bindRound(ctx, types.BlockRound{Height: h, Round: round, FallbackHeight: h + int64(d.WaitBlocks)}); err != nil {
			return err
		}
	}
	old := h - types.BeaconHistoryBlocks
	if old <= 0 {
		return nil
	}
	if err := k.BlockHashes.Remove(ctx, old); err != nil {
		return err
	}
	if br, err := k.BlockRounds.Get(ctx, old); err == nil {
		if err := k.RoundBlocks.Remove(ctx, collections.Join(br.Round, old)); err != nil {
			return err
		}
		if err := k.BlockRounds.Remove(ctx, old); err != nil {
			return err
		}
	} else if !errorsmod.IsOf(err, collections.ErrNotFound) {
		return err
	}
	oldest, ok, err := k.oldestRound(ctx)
	if err != nil || !ok {
		return err
	}
	return k.DrandRounds.Clear(ctx, new(collections.Range[uint64]).EndExclusive(oldest))
}

// ProposerVRFInput is what block h's proposer runs its VRF over: the chain id, h and the
// value of block h-1 (none before the first block, or when h-1 is outside the window).
func (k Keeper) ProposerVRFInput(ctx context.Context, height int64) ([]byte, error) {
	prev, err := k.previousValue(ctx, height)
	if err != nil {
		return nil, err
	}
	return vrfInput(sdk.UnwrapSDKContext(ctx).ChainID(), height, prev), nil
}

func vrfInput(chainID string, height int64, prev []byte) []byte {
	out := make([]byte, 0, len(vrfInputDomain)+1+len(chainID)+8+len(prev))
	out = append(out, vrfInputDomain...)
	out = append(out, byte(len(chainID)))
	out = append(out, chainID...)
	out = binary.BigEndian.AppendUint64(out, uint64(height))
	return append(out, prev...)
}

func (k Keeper) previousValue(ctx context.Context, height int64) ([]byte, error) {
	prev, err := k.BlockHashes.Get(ctx, height-1)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, nil
	}
	return prev, err
}

// RecordProposerRandomness checks the current block's proposer's VRF proof and fixes the
// block's value from its output. Only the proposer's operator signs it, for this block,
// once; a proof that does not verify against the proposer's consensus key is refused.
func (k Keeper) RecordProposerRandomness(ctx sdk.Context, proposer sdk.AccAddress, height int64, proof []byte) ([]byte, error) {
	h := ctx.BlockHeight()
	if len(proof) != ecvrf.ProofSize {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "proof: %d bytes, want %d", len(proof), ecvrf.ProofSize)
	}
	if height != h {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "the proof is for height %d, this block is %d", height, h)
	}
	if has, err := k.BlockHashes.Has(ctx, h); err != nil {
		return nil, err
	} else if has {
		return nil, errorsmod.Wrapf(types.ErrRandomnessKnown, "block %d", h)
	}
	cons := sdk.ConsAddress(ctx.BlockHeader().ProposerAddress)
	v, err := k.validators.GetValidatorByConsAddr(ctx, cons)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "block proposer %X: %s", cons.Bytes(), err)
	}
	op, err := sdk.ValAddressFromBech32(v.GetOperator())
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "block proposer's operator %q: %s", v.GetOperator(), err)
	}
	if !bytes.Equal(op, proposer) {
		return nil, errorsmod.Wrapf(types.ErrNotProposer, "proposer: %s is not the operator of block %d's proposer", proposer, h)
	}
	pk, err := v.ConsPubKey()
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "block proposer's consensus key: %s", err)
	}
	if _, ok := pk.(*sdked25519.PubKey); !ok {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "block proposer's consensus key is %s: only ed25519 keys have a VRF", pk.Type())
	}
	prev, err := k.previousValue(ctx, h)
	if err != nil {
		return nil, err
	}
	ctx.GasMeter().ConsumeGas(VRFVerifyGas, "VRF proof verification")
	ok, beta := ecvrf.Verify(voied25519.PublicKey(pk.Bytes()), proof, vrfInput(ctx.ChainID(), h, prev))
	if !ok {
		return nil, errorsmod.Wrapf(types.ErrInvalidRandomness, "proof: does not verify against block %d's proposer %X and the value of block %d", h, cons.Bytes(), h-1)
	}
	return k.fixBlockValue(ctx, chainValue(revealedDomain, prev, beta), true)
}

// sealBlockValue fixes the block's value at its end when its proposer did not reveal
// (EndBlock: constant work).
func (k Keeper) sealBlockValue(ctx sdk.Context) error {
	h := ctx.BlockHeight()
	if has, err := k.BlockHashes.Has(ctx, h); err != nil || has {
		return err
	}
	prev, err := k.previousValue(ctx, h)
	if err != nil {
		return err
	}
	_, err = k.fixBlockValue(ctx, chainValue(withheldDomain, prev, binary.BigEndian.AppendUint64(nil, uint64(h))), false)
	return err
}

func (k Keeper) fixBlockValue(ctx sdk.Context, value []byte, revealed bool) ([]byte, error) {
	if err := k.BlockHashes.Set(ctx, ctx.BlockHeight(), value); err != nil {
		return nil, err
	}
	return value, ctx.EventManager().EmitTypedEvent(&types.EventBlockValue{
		Height: ctx.BlockHeight(), Revealed: revealed, Proposer: fmt.Sprintf("%X", ctx.BlockHeader().ProposerAddress),
	})
}

func chainValue(domain string, prev, input []byte) []byte {
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write(prev)
	h.Write(input)
	return h.Sum(nil)
}

// oldestRound is the lowest round a block in the window is bound to (RoundBlocks).
func (k Keeper) oldestRound(ctx context.Context) (uint64, bool, error) {
	it, err := k.RoundBlocks.Iterate(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = it.Close() }()
	if !it.Valid() {
		return 0, false, nil
	}
	key, err := it.Key()
	return key.K1(), err == nil, err
}

// bindRound records a block's drand round (BlockRounds, RoundBlocks).
func (k Keeper) bindRound(ctx context.Context, br types.BlockRound) error {
	if err := k.BlockRounds.Set(ctx, br.Height, br); err != nil {
		return err
	}
	return k.RoundBlocks.Set(ctx, collections.Join(br.Round, br.Height))
}

// BlockHash returns the value of a committed block (one below the current height) still
// in the window: the chain of its proposers' VRF outputs (RecordProposerRandomness).
func (k Keeper) BlockHash(ctx context.Context, height int64) ([]byte, error) {
	if height >= sdk.UnwrapSDKContext(ctx).BlockHeight() {
		return nil, errorsmod.Wrapf(beacon.ErrUnavailable, "height %d is not committed yet", height)
	}
	bz, err := k.BlockHashes.Get(ctx, height)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, errorsmod.Wrapf(beacon.ErrUnavailable, "height %d is outside the last %d blocks", height, types.BeaconHistoryBlocks)
	}
	return bz, err
}

// Beacon value sources (QueryBeaconResponse.source).
const (
	SourceBlock    = "block"
	SourceDrand    = "drand"
	SourceFallback = "fallback"
)

// BeaconValue returns the beacon's value for a committed block, where it came from, and
// the drand round bound to the block (0 when none); beacon.ErrUnavailable while the value
// is not known yet.
func (k Keeper) BeaconValue(ctx context.Context, height int64) ([]byte, string, uint64, error) {
	br, err := k.BlockRounds.Get(ctx, height)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		hash, err := k.BlockHash(ctx, height)
		if err != nil {
			return nil, "", 0, err
		}
		return hash, SourceBlock, 0, nil
	} else if err != nil {
		return nil, "", 0, err
	}
	dr, err := k.DrandRounds.Get(ctx, br.Round)
	switch {
	case err == nil && dr.Height <= br.FallbackHeight:
		return dr.Randomness, SourceDrand, br.Round, nil
	case err != nil && !errorsmod.IsOf(err, collections.ErrNotFound):
		return nil, "", 0, err
	}
	if br.FallbackHeight >= sdk.UnwrapSDKContext(ctx).BlockHeight() {
		return nil, "", br.Round, errorsmod.Wrapf(beacon.ErrUnavailable,
			"block %d's drand round %d is not on chain yet (MsgSubmitBeacon); its draws fall back to the hash of block %d if it is not there by then",
			height, br.Round, br.FallbackHeight)
	}
	fb, err := k.BlockHash(ctx, br.FallbackHeight)
	if err != nil {
		return nil, "", 0, err
	}
	return fb, SourceFallback, br.Round, nil
}

// RecentSeed is the seed of a draw made at once (a pool unit's designee, a GEMM job's
// inputs): block h-1's value when known; with drand on and h-1's round not on chain yet,
// the value of block h-1-wait_blocks, known by now (its round, or the hash of h-1 it fell
// back to). Either was fixed before the current block: its proposer can include or leave
// out the draw, not choose the value.
func (k Keeper) RecentSeed(ctx context.Context, domain string, ids ...uint64) ([32]byte, error) {
	h := sdk.UnwrapSDKContext(ctx).BlockHeight() - 1
	seed, err := k.Seed(ctx, h, domain, ids...)
	if !errorsmod.IsOf(err, beacon.ErrUnavailable) {
		return seed, err
	}
	br, err := k.BlockRounds.Get(ctx, h)
	if err != nil {
		return [32]byte{}, errorsmod.Wrapf(beacon.ErrUnavailable, "block %d has no value", h)
	}
	return k.Seed(ctx, h-(br.FallbackHeight-h), domain, ids...)
}

// DrawSeed is the seed of a draw that became due at block since (the scheduler's: a task
// that became pending then). With drand on at since, it is the value bound to since: a
// round published after the block, unknown to everyone when the draw became due, so
// beacon.ErrUnavailable until the round is on chain or falls back, and the draw waits.
// With drand off it is the last committed block's (the single-proposer bound of the
// header hash, at no delay; the first block's own). beacon.ErrRebind when since can no longer get a value (its
// binding left the window, or drand was turned on after it): the draw binds to the
// current block and waits for it.
func (k Keeper) DrawSeed(ctx context.Context, since int64, domain string, ids ...uint64) ([32]byte, error) {
	if has, err := k.BlockRounds.Has(ctx, since); err != nil {
		return [32]byte{}, err
	} else if has {
		return k.Seed(ctx, since, domain, ids...)
	}
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	if has, err := k.BlockRounds.Has(ctx, h); err != nil {
		return [32]byte{}, err
	} else if has {
		return [32]byte{}, errorsmod.Wrapf(beacon.ErrRebind, "block %d has no drand round bound, block %d has", since, h)
	}
	if h <= 1 {
		// the first block has no committed predecessor: its own header (its proposer's
		// choice, as the previous block's would have been)
		return beacon.Derive(sdk.UnwrapSDKContext(ctx).HeaderHash(), domain, ids...), nil
	}
	return k.Seed(ctx, h-1, domain, ids...)
}

func (k Keeper) Seed(ctx context.Context, height int64, domain string, ids ...uint64) ([32]byte, error) {
	v, _, _, err := k.BeaconValue(ctx, height)
	if err != nil {
		return [32]byte{}, err
	}
	return beacon.Derive(v, domain, ids...), nil
}

// SubmitBeacon verifies a drand round against the configured network and keeps it for
// the blocks bound to it.
func (k Keeper) SubmitBeacon(ctx context.Context, round uint64, sig []byte) ([32]byte, error) {
	p, err := k.Params.Get(ctx)
	if err != nil {
		return [32]byte{}, err
	}
	if len(p.Drand.PublicKey) == 0 {
		return [32]byte{}, errorsmod.Wrap(types.ErrDrandOff, "params.drand.public_key is empty: draws come from block hashes")
	}
	if has, err := k.DrandRounds.Has(ctx, round); err != nil {
		return [32]byte{}, err
	} else if has {
		return [32]byte{}, errorsmod.Wrapf(types.ErrBeaconKnown, "round %d", round)
	}
	if oldest, ok, err := k.oldestRound(ctx); err != nil {
		return [32]byte{}, err
	} else if ok && round < oldest {
		return [32]byte{}, errorsmod.Wrapf(types.ErrInvalidBeacon, "round %d is older than round %d, the oldest any block in the window is bound to", round, oldest)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	sdkCtx.GasMeter().ConsumeGas(DrandVerifyGas, "drand signature verification")
	pk, err := beacon.DrandPublicKey(p.Drand.PublicKey)
	if err != nil {
		return [32]byte{}, errorsmod.Wrap(types.ErrInvalidParams, err.Error())
	}
	r, err := beacon.VerifyDrand(pk, round, sig)
	if err != nil {
		return [32]byte{}, errorsmod.Wrapf(types.ErrInvalidBeacon, "round %d: %s", round, err)
	}
	if err := k.DrandRounds.Set(ctx, round, types.DrandRound{Round: round, Randomness: r[:], Height: sdkCtx.BlockHeight()}); err != nil {
		return [32]byte{}, err
	}
	return r, nil
}
