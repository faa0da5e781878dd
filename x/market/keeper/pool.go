package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// POOL mode (DESIGN.md section 4; OpenGPU's competing pools for continuous inference). An
// owner opens a pool with a budget and a unit price; eligible nodes join; the owner posts
// units of work in batches. Members race: the first commitment to a unit claims it (as in
// mining), its reveal must follow within pool_reveal_timeout_blocks and is verified with
// the pool's class (BUILTIN_GEMM: sampled entries recomputed on chain; NONE: accepted). A
// verified unit is credited to its claimer; credits are paid in one transfer per
// withdrawal (MsgWithdrawPoolEarnings, or the pool's close), not one per unit. A claim
// that lapses is slashed for a missed reveal and the unit is raced again without the
// lapsed node.
//
// Escrow: the pool holds unpaid credits + unit_price per open (posted, unpaid) unit + the
// free rest; posting units needs free budget; closing refunds the free rest.
//
// Pools take BUILTIN_GEMM and NONE: an EXACT unit raced by one claimer has no second run to
// compare with; deterministic work that needs replicas or audits belongs in a job.

// A unit's lifecycle (moveUnit keeps what each status holds):
//
//	status     entry                                          exposure   record
//	OPEN       OpenUnits (raced by the members)               -          kept
//	COMMITTED  UnitDeadlines (its reveal deadline height)     yes        kept
//	PAID       -                                              -          removed (events keep it)
//	CANCELLED  -                                              -          removed
//
// Moves: OPEN -> COMMITTED (claimed), COMMITTED -> PAID (revealed and verified),
// COMMITTED -> OPEN (the claim lapsed: raced again), OPEN or COMMITTED -> CANCELLED (the
// pool closed).

func canMoveUnit(from, to types.UnitStatus) bool {
	switch from {
	case types.UNIT_STATUS_OPEN:
		return to == types.UNIT_STATUS_COMMITTED || to == types.UNIT_STATUS_CANCELLED
	case types.UNIT_STATUS_COMMITTED:
		return to == types.UNIT_STATUS_PAID || to == types.UNIT_STATUS_OPEN || to == types.UNIT_STATUS_CANCELLED
	}
	return false
}

// moveUnit moves a unit to status to: it releases what the old status holds, applies set,
// takes what the new status holds, saves (or, once final, removes) the unit and saves the
// pool, whose counters the caller has updated.
func (k Keeper) moveUnit(ctx context.Context, pool types.Pool, u *types.Unit, to types.UnitStatus, set func(*types.Unit)) error {
	from := *u
	if !canMoveUnit(from.Status, to) {
		return fmt.Errorf("market: unit %d of pool %d: %s -> %s is not a unit transition", u.Id, u.PoolId, from.Status, to)
	}
	key := collections.Join(u.PoolId, u.Id)
	switch from.Status {
	case types.UNIT_STATUS_OPEN:
		if err := k.OpenUnits.Remove(ctx, key); err != nil {
			return err
		}
	case types.UNIT_STATUS_COMMITTED:
		if err := k.UnitDeadlines.Remove(ctx, collections.Join3(from.RevealDeadlineHeight, u.PoolId, u.Id)); err != nil {
			return err
		}
		if err := k.releaseExposure(ctx, from.Provider, from.Exposure); err != nil {
			return err
		}
	}
	if set != nil {
		set(u)
	}
	u.Status = to
	var err error
	switch to {
	case types.UNIT_STATUS_OPEN:
		if err = k.OpenUnits.Set(ctx, key); err == nil {
			err = k.Units.Set(ctx, key, *u)
		}
	case types.UNIT_STATUS_COMMITTED:
		if err = k.addExposure(ctx, u.Provider, u.Exposure); err == nil {
			if err = k.UnitDeadlines.Set(ctx, collections.Join3(u.RevealDeadlineHeight, u.PoolId, u.Id)); err == nil {
				err = k.Units.Set(ctx, key, *u)
			}
		}
	default:
		err = k.Units.Remove(ctx, key)
	}
	if err != nil {
		return err
	}
	return k.savePool(ctx, pool)
}

// getPool is a pool's record (ErrPoolNotFound when there is none): its spec without the
// command and the environment, which nothing of the state machine reads (viewPool has
// them).
func (k Keeper) getPool(ctx context.Context, id uint64) (types.Pool, error) {
	pl, err := k.Pools.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return pl, errorsmod.Wrapf(types.ErrPoolNotFound, "pool %d", id)
	}
	return pl, err
}

// poolRecord is a pool as its record stores it: the spec without its command and its
// environment, which the pool's spec in PoolSpecs keeps. The record is rewritten by every
// unit step (a member's commit and reveal, a lapse), and written whole it cost the member
// 30 gas a byte of the spec: about 10,000,000 gas a step with the largest legal spec
// (TestAttackHugePoolSpecTaxesItsMembers).
func poolRecord(pl types.Pool) types.Pool {
	pl.Spec.Command, pl.Spec.Env = nil, nil
	return pl
}

// SetPool stores a pool whole, as CreatePool leaves it: its spec in PoolSpecs, its record
// (poolRecord) in Pools (genesis, the store migration, tests).
func (k Keeper) SetPool(ctx context.Context, pl types.Pool) error {
	if err := k.PoolSpecs.Set(ctx, pl.Id, pl.Spec); err != nil {
		return err
	}
	return k.savePool(ctx, pl)
}

// savePool writes a pool's record (poolRecord).
func (k Keeper) savePool(ctx context.Context, pl types.Pool) error {
	return k.Pools.Set(ctx, pl.Id, poolRecord(pl))
}

// viewPool is a pool as the queries and the genesis show it: its record with its whole
// spec.
func (k Keeper) viewPool(ctx context.Context, pl types.Pool) (types.Pool, error) {
	spec, err := k.PoolSpecs.Get(ctx, pl.Id)
	if err != nil {
		return pl, fmt.Errorf("market: spec of pool %d: %w", pl.Id, err)
	}
	pl.Spec = spec
	return pl, nil
}

// CreatePool opens a pool and moves its budget into escrow.
func (k Keeper) CreatePool(ctx context.Context, ownerAddr sdk.AccAddress, spec types.PoolSpec) (uint64, error) {
	owner, err := k.addressString("owner", ownerAddr)
	if err != nil {
		return 0, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	if err := spec.Validate(p); err != nil {
		return 0, err
	}
	if gas, cost, err := k.revealPrice(ctx, p, spec.Verification, spec.Builtin); err != nil {
		return 0, err
	} else if spec.UnitPrice.Amount.LTE(sdkmath.NewIntFromUint64(cost)) {
		return 0, errorsmod.Wrapf(types.ErrInvalidPool, "unit_price %s: must exceed the reveal cost %dudps (reveal_gas %d x reveal_gas_price %s) a member pays per unit",
			spec.UnitPrice, cost, gas, p.RevealGasPrice)
	}
	if err := k.escrowIn(ctx, ownerAddr, sdk.NewCoins(spec.Budget)); err != nil {
		return 0, errorsmod.Wrapf(types.ErrInsufficientFunds, "pool budget %s: %s", spec.Budget, err)
	}
	id, err := k.PoolSeq.Next(ctx)
	if err != nil {
		return 0, err
	}
	pool := types.Pool{Id: id, Owner: owner, Spec: spec, Status: types.POOL_STATUS_OPEN, Escrow: spec.Budget.Amount, Unpaid: sdkmath.ZeroInt(), NextUnit: 1}
	if err := k.SetPool(ctx, pool); err != nil {
		return 0, err
	}
	return id, k.poolEvent(ctx, id, "created", 0, 0, spec.Budget.Amount)
}

func (k Keeper) poolEvent(ctx context.Context, id uint64, action string, node, count uint64, amount sdkmath.Int) error {
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventPool{PoolId: id, Action: action, NodeId: node, Count: count, Amount: amount})
}

// JoinPool adds an eligible node of the signer to an open pool.
func (k Keeper) JoinPool(ctx context.Context, providerAddr sdk.AccAddress, poolID, nodeID uint64) error {
	provider, err := k.addressString("provider", providerAddr)
	if err != nil {
		return err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return err
	}
	if pool.Status != types.POOL_STATUS_OPEN {
		return errorsmod.Wrapf(types.ErrInvalidPool, "pool %d is %s", poolID, pool.Status)
	}
	slot, err := k.Slots.Get(ctx, nodeID)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return errorsmod.Wrapf(types.ErrNodeUnknown, "node %d", nodeID)
	} else if err != nil {
		return err
	}
	if slot.Operator != provider {
		return errorsmod.Wrapf(types.ErrNotProvider, "node %d is operated by %s, not %s", nodeID, slot.Operator, provider)
	}
	if has, err := k.PoolMembers.Has(ctx, collections.Join(poolID, nodeID)); err != nil {
		return err
	} else if has {
		return errorsmod.Wrapf(types.ErrAlreadyMember, "node %d, pool %d", nodeID, poolID)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.bidEligible(ctx, p, poolJob(pool), slot, pool.Spec.UnitPrice.Amount); err != nil {
		return err
	}
	if pool.Members >= pool.Spec.MaxProviders {
		if err := k.evictIneligibleMember(ctx, &pool); err != nil {
			return err
		}
	}
	if err := k.PoolMembers.Set(ctx, collections.Join(poolID, nodeID), types.PoolMember{PoolId: poolID, NodeId: nodeID, Provider: provider}); err != nil {
		return err
	}
	pool.Members++
	if err := k.savePool(ctx, pool); err != nil {
		return err
	}
	return k.poolEvent(ctx, poolID, "joined", nodeID, 0, sdkmath.ZeroInt())
}

// poolJob is the job a pool's units are for the market's eligibility filters (nodeEligible):
// its owner, workload, runtime and requirements.
func poolJob(pool types.Pool) types.Job {
	return types.Job{Owner: pool.Owner, Spec: types.JobSpec{Workload: pool.Spec.Workload, Runtime: pool.Spec.Runtime, Requirements: pool.Spec.Requirements}}
}

// memberEligible says whether a pool member's node may claim the pool's units now
// (nodeEligible): a member is checked when it joins and again at each claim, so a node
// deactivated, re-equipped below the pool's requirements or scored below the minimum
// since it joined takes no more of them.
func (k Keeper) memberEligible(ctx context.Context, pool types.Pool, nodeID uint64) error {
	slot, err := k.Slots.Get(ctx, nodeID)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d is no longer registered", nodeID)
	} else if err != nil {
		return err
	}
	return k.nodeEligible(ctx, poolJob(pool), slot)
}

// evictIneligibleMember makes room in a full pool for an eligible node that joins: the
// first member, in node id order, that may no longer claim the pool's units
// (memberEligible) leaves it (its claimed units stay its to reveal, as on a leave).
// Without one the pool is full. Members that stopped being eligible would otherwise hold
// a pool's places for ever at no cost (a node deactivated keeps no collateral locked),
// and a pool whose places they all held took no claim from anyone. The walk reads at most
// the pool's members (max_providers), at the joiner's gas.
func (k Keeper) evictIneligibleMember(ctx context.Context, pool *types.Pool) error {
	it, err := k.PoolMembers.Iterate(ctx, collections.NewPrefixedPairRange[uint64, uint64](pool.Id))
	if err != nil {
		return err
	}
	keys, err := it.Keys()
	if err != nil {
		return err
	}
	for _, key := range keys {
		switch err := k.memberEligible(ctx, *pool, key.K2()); {
		case err == nil:
			continue
		case !errorsmod.IsOf(err, types.ErrNodeNotEligible):
			return err
		}
		if err := k.PoolMembers.Remove(ctx, key); err != nil {
			return err
		}
		pool.Members--
		return k.poolEvent(ctx, pool.Id, "evicted", key.K2(), 0, sdkmath.ZeroInt())
	}
	return errorsmod.Wrapf(types.ErrInvalidPool, "pool %d is full (%d members, each eligible)", pool.Id, pool.Members)
}

// LeavePool takes a node out of a pool (its claimed units stay its to reveal).
func (k Keeper) LeavePool(ctx context.Context, providerAddr sdk.AccAddress, poolID, nodeID uint64) error {
	provider, err := k.addressString("provider", providerAddr)
	if err != nil {
		return err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return err
	}
	m, err := k.PoolMembers.Get(ctx, collections.Join(poolID, nodeID))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return errorsmod.Wrapf(types.ErrNotMember, "node %d in pool %d", nodeID, poolID)
	} else if err != nil {
		return err
	}
	if m.Provider != provider {
		return errorsmod.Wrapf(types.ErrNotProvider, "node %d is operated by %s, not %s", nodeID, m.Provider, provider)
	}
	if err := k.PoolMembers.Remove(ctx, collections.Join(poolID, nodeID)); err != nil {
		return err
	}
	pool.Members--
	if err := k.savePool(ctx, pool); err != nil {
		return err
	}
	return k.poolEvent(ctx, poolID, "left", nodeID, 0, sdkmath.ZeroInt())
}

// freeBudget is what a pool's escrow can still fund: escrow - unpaid - open units.
func freeBudget(pool types.Pool) sdkmath.Int {
	return pool.Escrow.Sub(pool.Unpaid).Sub(pool.Spec.UnitPrice.Amount.MulRaw(int64(pool.OpenUnits)))
}

// SubmitUnits posts a batch of unit inputs; each needs unit_price of free budget.
func (k Keeper) SubmitUnits(ctx context.Context, ownerAddr sdk.AccAddress, poolID uint64, inputs []types.Input) (uint64, error) {
	owner, err := k.addressString("owner", ownerAddr)
	if err != nil {
		return 0, err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return 0, err
	}
	if pool.Owner != owner {
		return 0, errorsmod.Wrapf(types.ErrNotOwner, "pool %d belongs to %s", poolID, pool.Owner)
	}
	if pool.Status != types.POOL_STATUS_OPEN {
		return 0, errorsmod.Wrapf(types.ErrInvalidPool, "pool %d is %s", poolID, pool.Status)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	if err := validate.Count("units", len(inputs), int(p.MaxUnitsPerMsg)); err != nil {
		return 0, err
	}
	if len(inputs) == 0 {
		return 0, errorsmod.Wrapf(types.ErrInvalidPool, "units: none given")
	}
	for i, in := range inputs {
		if err := types.ValidateInputSizes(fmt.Sprintf("units[%d]", i), in); err != nil {
			return 0, err
		}
		if err := types.ValidateURI(in.Uri); err != nil {
			return 0, errorsmod.Wrapf(types.ErrInvalidPool, "units[%d].uri: %s", i, err)
		}
		if err := types.ValidateSHA256Hex(in.Sha256); err != nil {
			return 0, errorsmod.Wrapf(types.ErrInvalidPool, "units[%d].sha256: %s", i, err)
		}
	}
	need := pool.Spec.UnitPrice.Amount.MulRaw(int64(len(inputs)))
	if free := freeBudget(pool); free.LT(need) {
		return 0, errorsmod.Wrapf(types.ErrInsufficientFunds, "pool %d has %s%s free, %d units need %s%s", poolID, free, p.Denom, len(inputs), need, p.Denom)
	}
	first := pool.NextUnit
	// a NONE pool's units are drawn among its members rather than raced (see
	// Unit.designated_node): among those that may claim them now (memberEligible), or all
	// of them when none may (none claims until one may again)
	var members []uint64
	if pool.Spec.Verification == types.VERIFICATION_CLASS_NONE {
		it, err := k.PoolMembers.Iterate(ctx, collections.NewPrefixedPairRange[uint64, uint64](poolID))
		if err != nil {
			return 0, err
		}
		keys, err := it.Keys() // at most max_pool_providers, in node id order
		if err != nil {
			return 0, err
		}
		var all []uint64
		for _, key := range keys {
			all = append(all, key.K2())
			switch err := k.memberEligible(ctx, pool, key.K2()); {
			case err == nil:
				members = append(members, key.K2())
			case !errorsmod.IsOf(err, types.ErrNodeNotEligible):
				return 0, err
			}
		}
		if len(members) == 0 {
			members = all
		}
	}
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	for _, in := range inputs {
		// a new unit is OPEN: its record and its race entry
		u := types.Unit{PoolId: poolID, Id: pool.NextUnit, Input: in, Status: types.UNIT_STATUS_OPEN, Exposure: sdkmath.ZeroInt()}
		if len(members) > 0 {
			seed := k.seedOf(ctx, types.DomainPoolUnit, poolID, u.Id)
			u.DesignatedNode = members[beacon.Below(seed, uint64(len(members)))]
			u.ReservedUntilHeight = h + int64(p.PoolRevealTimeoutBlocks)
		}
		if err := k.Units.Set(ctx, collections.Join(poolID, u.Id), u); err != nil {
			return 0, err
		}
		if err := k.OpenUnits.Set(ctx, collections.Join(poolID, u.Id)); err != nil {
			return 0, err
		}
		pool.NextUnit++
		pool.OpenUnits++
	}
	if err := k.savePool(ctx, pool); err != nil {
		return 0, err
	}
	return first, k.poolEvent(ctx, poolID, "units", 0, uint64(len(inputs)), need)
}

func (k Keeper) getUnit(ctx context.Context, poolID, unitID uint64) (types.Unit, error) {
	u, err := k.Units.Get(ctx, collections.Join(poolID, unitID))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return u, errorsmod.Wrapf(types.ErrUnitNotFound, "unit %d of pool %d (unknown, or paid and pruned)", unitID, poolID)
	}
	return u, err
}

// CommitUnit claims an open unit for a member node: the first commitment wins the race.
func (k Keeper) CommitUnit(ctx context.Context, provider sdk.AccAddress, poolID, unitID, nodeID uint64, commitment []byte) (int64, error) {
	signer, err := k.addressString("provider", provider)
	if err != nil {
		return 0, err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return 0, err
	}
	m, err := k.PoolMembers.Get(ctx, collections.Join(poolID, nodeID))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return 0, errorsmod.Wrapf(types.ErrNotMember, "node %d in pool %d", nodeID, poolID)
	} else if err != nil {
		return 0, err
	}
	if m.Provider != signer {
		return 0, errorsmod.Wrapf(types.ErrNotProvider, "node %d is operated by %s, not %s", nodeID, m.Provider, signer)
	}
	if err := k.memberEligible(ctx, pool, nodeID); err != nil {
		return 0, err
	}
	u, err := k.getUnit(ctx, poolID, unitID)
	if err != nil {
		return 0, err
	}
	if u.Status != types.UNIT_STATUS_OPEN {
		return 0, errorsmod.Wrapf(types.ErrUnitClaimed, "unit %d of pool %d is %s", u.Id, u.PoolId, u.Status)
	}
	reserved := u.DesignatedNode != 0 && sdk.UnwrapSDKContext(ctx).BlockHeight() <= u.ReservedUntilHeight
	for _, n := range u.ExcludedNodes {
		if n == nodeID {
			return 0, errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d lapsed on unit %d before", n, u.Id)
		}
		reserved = reserved && n != u.DesignatedNode // a designee that lapsed lost its reservation
	}
	if reserved && nodeID != u.DesignatedNode {
		return 0, errorsmod.Wrapf(types.ErrUnitReserved, "unit %d of pool %d is drawn for node %d until height %d", u.Id, u.PoolId, u.DesignatedNode, u.ReservedUntilHeight)
	}
	if len(commitment) != sha256.Size {
		return 0, errorsmod.Wrapf(types.ErrInvalidCommitment, "commitment is %d bytes, must be 32", len(commitment))
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	exposure := exposureOf(p, pool.Spec.UnitPrice.Amount)
	if ok, err := k.collateral.CanAddExposure(ctx, provider, exposure); err != nil {
		return 0, err
	} else if !ok {
		return 0, errorsmod.Wrapf(types.ErrNodeNotEligible, "%s is jailed or its collateral does not cover %s%s more exposure (unit price x result_penalty_multiple %d)", signer, exposure, p.Denom, p.ResultPenaltyMultiple)
	}
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	if err := k.moveUnit(ctx, pool, &u, types.UNIT_STATUS_COMMITTED, func(u *types.Unit) {
		u.NodeId, u.Provider, u.Commitment, u.Exposure = nodeID, signer, commitment, exposure
		u.CommitHeight, u.RevealDeadlineHeight = h, h+int64(p.PoolRevealTimeoutBlocks)
	}); err != nil {
		return 0, err
	}
	return u.RevealDeadlineHeight, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventUnit{
		PoolId: u.PoolId, UnitId: u.Id, Status: u.Status, NodeId: u.NodeId,
	})
}

// RevealUnit opens a claimed unit in a later block; verified, it is credited to the
// claimer and its verified work recorded.
func (k Keeper) RevealUnit(ctx context.Context, provider sdk.AccAddress, poolID, unitID uint64, msg Reveal) error {
	if err := msg.validateSizes(); err != nil {
		return err
	}
	signer, err := k.addressString("provider", provider)
	if err != nil {
		return err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return err
	}
	u, err := k.getUnit(ctx, poolID, unitID)
	if err != nil {
		return err
	}
	if u.Status != types.UNIT_STATUS_COMMITTED || u.Provider != signer {
		return errorsmod.Wrapf(types.ErrNotProvider, "unit %d of pool %d is %s, claimed by %q", u.Id, u.PoolId, u.Status, u.Provider)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if sdkCtx.BlockHeight() <= u.CommitHeight {
		return errorsmod.Wrapf(types.ErrRevealNotOpen, "unit %d: reveal after the commit block %d", u.Id, u.CommitHeight)
	}
	if len(msg.ResultRoot) != sha256.Size || len(msg.Salt) < 16 || len(msg.Salt) > 64 {
		return errorsmod.Wrapf(types.ErrInvalidReveal, "result_root must be 32 bytes and salt 16 to 64 bytes")
	}
	if err := types.ValidateURI(msg.OutputURI); err != nil {
		return errorsmod.Wrapf(types.ErrInvalidReveal, "output_uri: %s", err)
	}
	if !bytes.Equal(types.Commitment(msg.ResultRoot, msg.Salt, provider), u.Commitment) {
		return errorsmod.Wrapf(types.ErrRevealMismatch, "unit %d: sha256(root || salt || provider) differs from the commitment", u.Id)
	}
	if pool.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		if err := k.verifyGemm(ctx, pool.UnitGemm(u), msg.ResultRoot, u.CommitHeight, msg.GemmProofs, types.DomainPoolSample, u.PoolId, u.Id); err != nil {
			return err
		}
	}
	price := pool.Spec.UnitPrice.Amount
	key := collections.Join(pool.Id, provider)
	e, err := k.PoolEarnings.Get(ctx, key)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		e = types.PoolEarning{PoolId: pool.Id, Provider: signer, Amount: sdkmath.ZeroInt()}
	} else if err != nil {
		return err
	}
	e.Amount, e.Units, e.LastNode = e.Amount.Add(price), e.Units+1, u.NodeId
	if err := k.PoolEarnings.Set(ctx, key, e); err != nil {
		return err
	}
	pool.Unpaid = pool.Unpaid.Add(price)
	pool.OpenUnits--
	pool.PaidUnits++
	if err := k.moveUnit(ctx, pool, &u, types.UNIT_STATUS_PAID, nil); err != nil {
		return err
	}
	if err := k.recordPoolWork(ctx, pool, provider, price); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventUnit{PoolId: u.PoolId, UnitId: u.Id, Status: types.UNIT_STATUS_PAID, NodeId: u.NodeId})
}

// WithdrawPoolEarnings pays a provider's credited units in one payment (minus the take).
func (k Keeper) WithdrawPoolEarnings(ctx context.Context, provider sdk.AccAddress, poolID uint64) (sdkmath.Int, error) {
	providerStr, err := k.addressString("provider", provider)
	if err != nil {
		return sdkmath.Int{}, err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return sdkmath.Int{}, err
	}
	e, err := k.PoolEarnings.Get(ctx, collections.Join(poolID, provider))
	if errorsmod.IsOf(err, collections.ErrNotFound) || (err == nil && !e.Amount.IsPositive()) {
		return sdkmath.Int{}, errorsmod.Wrapf(types.ErrInvalidPool, "%s has no earnings in pool %d", providerStr, poolID)
	} else if err != nil {
		return sdkmath.Int{}, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.Int{}, err
	}
	split, err := k.payPoolEarning(ctx, p, &pool, e)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if err := k.PoolEarnings.Remove(ctx, collections.Join(poolID, provider)); err != nil {
		return sdkmath.Int{}, err
	}
	if err := k.savePool(ctx, pool); err != nil {
		return sdkmath.Int{}, err
	}
	return split.Provider, k.poolEvent(ctx, poolID, "withdrawn", e.LastNode, e.Units, split.Provider)
}

// payPoolEarning pays one provider's credits out of a pool's escrow, through the take.
func (k Keeper) payPoolEarning(ctx context.Context, p types.Params, pool *types.Pool, e types.PoolEarning) (types.Payment, error) {
	split := types.SplitPayment(e.Amount, p.TakeRatePpm, p.TakePoolSharePpm)
	provider, err := k.acc(e.Provider)
	if err != nil {
		return split, err
	}
	coins := func(a sdkmath.Int) sdk.Coins { return sdk.NewCoins(sdk.NewCoin(p.Denom, a)) }
	if split.Provider.IsPositive() {
		if err := k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, provider, coins(split.Provider)); err != nil {
			return split, err
		}
	}
	if split.Pool.IsPositive() {
		if err := k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.rewardPool, coins(split.Pool)); err != nil {
			return split, err
		}
	}
	if split.FeeCollector.IsPositive() {
		if err := k.bankKeeper.SendCoinsFromModuleToModule(ctx, types.ModuleName, k.feeCollector, coins(split.FeeCollector)); err != nil {
			return split, err
		}
	}
	pool.Escrow = pool.Escrow.Sub(e.Amount)
	pool.Unpaid = pool.Unpaid.Sub(e.Amount)
	return split, nil
}

// ClosePool closes a pool for its owner: open units are cancelled, every credit is paid
// out, and the budget not needed by units already claimed is refunded; a claimed unit's
// price is paid if it is revealed in time, refunded if not.
func (k Keeper) ClosePool(ctx context.Context, ownerAddr sdk.AccAddress, poolID uint64) (sdkmath.Int, error) {
	owner, err := k.addressString("owner", ownerAddr)
	if err != nil {
		return sdkmath.Int{}, err
	}
	pool, err := k.getPool(ctx, poolID)
	if err != nil {
		return sdkmath.Int{}, err
	}
	if pool.Owner != owner {
		return sdkmath.Int{}, errorsmod.Wrapf(types.ErrNotOwner, "pool %d belongs to %s", poolID, pool.Owner)
	}
	if pool.Status != types.POOL_STATUS_OPEN {
		return sdkmath.Int{}, errorsmod.Wrapf(types.ErrInvalidPool, "pool %d is %s", poolID, pool.Status)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return sdkmath.Int{}, err
	}
	open, err := collkeys.CollectKeys(ctx, k.OpenUnits, collections.NewPrefixedPairRange[uint64, uint64](poolID), math.MaxInt)
	if err != nil {
		return sdkmath.Int{}, err
	}
	for _, key := range open {
		u, err := k.Units.Get(ctx, key)
		if err != nil {
			return sdkmath.Int{}, err
		}
		pool.OpenUnits--
		if err := k.moveUnit(ctx, pool, &u, types.UNIT_STATUS_CANCELLED, nil); err != nil {
			return sdkmath.Int{}, err
		}
	}
	var earnings []types.PoolEarning
	if err := k.PoolEarnings.Walk(ctx, collections.NewPrefixedPairRange[uint64, sdk.AccAddress](poolID), func(_ collections.Pair[uint64, sdk.AccAddress], e types.PoolEarning) (bool, error) {
		earnings = append(earnings, e)
		return false, nil
	}); err != nil {
		return sdkmath.Int{}, err
	}
	for _, e := range earnings {
		if _, err := k.payPoolEarning(ctx, p, &pool, e); err != nil {
			return sdkmath.Int{}, err
		}
		provider, err := k.acc(e.Provider)
		if err != nil {
			return sdkmath.Int{}, err
		}
		if err := k.PoolEarnings.Remove(ctx, collections.Join(poolID, provider)); err != nil {
			return sdkmath.Int{}, err
		}
	}
	refund := freeBudget(pool)
	if refund.IsPositive() {
		if err := k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, ownerAddr, sdk.NewCoins(sdk.NewCoin(p.Denom, refund))); err != nil {
			return sdkmath.Int{}, err
		}
		pool.Escrow = pool.Escrow.Sub(refund)
	}
	pool.Status = types.POOL_STATUS_CLOSED
	if err := k.schedulePoolPrune(ctx, p, &pool); err != nil {
		return sdkmath.Int{}, err
	}
	if err := k.savePool(ctx, pool); err != nil {
		return sdkmath.Int{}, err
	}
	return refund, k.poolEvent(ctx, poolID, "closed", 0, uint64(len(open)), refund)
}

// schedulePoolPrune queues a closed pool's deletion job_retention_blocks from now and
// records the height in the pool (an export carries it; the caller saves the pool).
func (k Keeper) schedulePoolPrune(ctx context.Context, p types.Params, pool *types.Pool) error {
	pool.PruneHeight = sdk.UnwrapSDKContext(ctx).BlockHeight() + int64(p.JobRetentionBlocks)
	return k.PoolPruneQueue.Set(ctx, collections.Join(pool.PruneHeight, pool.Id))
}

// prunePool deletes a closed pool that holds nothing (no escrow, no unit, no unpaid
// credit) with its members, at most max_pool_providers records plus one. A pool that
// still holds something (a unit claimed before the close, waiting for its reveal or its
// lapse, both far shorter than the retention) is looked at again a retention later.
func (k Keeper) prunePool(ctx sdk.Context, p types.Params, poolID uint64) error {
	pool, err := k.Pools.Get(ctx, poolID)
	if errors.Is(err, collections.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if pool.Status != types.POOL_STATUS_CLOSED {
		return fmt.Errorf("market: pool %d queued for pruning is %s", poolID, pool.Status)
	}
	ui, err := k.Units.Iterate(ctx, collections.NewPrefixedPairRange[uint64, uint64](poolID))
	if err != nil {
		return err
	}
	hasUnits := ui.Valid()
	if err := ui.Close(); err != nil {
		return err
	}
	if !pool.Escrow.IsZero() || hasUnits {
		if err := k.schedulePoolPrune(ctx, p, &pool); err != nil {
			return err
		}
		return k.savePool(ctx, pool)
	}
	mi, err := k.PoolMembers.Iterate(ctx, collections.NewPrefixedPairRange[uint64, uint64](poolID))
	if err != nil {
		return err
	}
	members, err := mi.Keys() // at most max_pool_providers
	if err != nil {
		return err
	}
	for _, key := range members {
		if err := k.PoolMembers.Remove(ctx, key); err != nil {
			return err
		}
	}
	ei, err := k.PoolEarnings.Iterate(ctx, collections.NewPrefixedPairRange[uint64, sdk.AccAddress](poolID))
	if err != nil {
		return err
	}
	earnings, err := ei.Keys() // none once the escrow is empty; at most one per member
	if err != nil {
		return err
	}
	for _, key := range earnings {
		if err := k.PoolEarnings.Remove(ctx, key); err != nil {
			return err
		}
	}
	if err := k.PoolSpecs.Remove(ctx, poolID); err != nil {
		return err
	}
	if err := k.Pools.Remove(ctx, poolID); err != nil {
		return err
	}
	return k.poolEvent(ctx, poolID, "pruned", 0, 0, sdkmath.ZeroInt())
}

func (k Keeper) lapseUnit(ctx sdk.Context, p types.Params, poolID, unitID uint64) error {
	u, err := k.Units.Get(ctx, collections.Join(poolID, unitID))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil // revealed since
	} else if err != nil {
		return err
	}
	if u.Status != types.UNIT_STATUS_COMMITTED {
		return nil
	}
	pool, err := k.Pools.Get(ctx, poolID)
	if err != nil {
		return err
	}
	// burned, not paid to the owner, as a task's missed reveal is (abci.go, lapse)
	if err := k.slash(ctx, u.Provider, p.MissedRevealSlashPpm, u.Exposure, sstypes.SLASH_REASON_MISSED_REVEAL,
		"", nil, nil, sstypes.SlashEvidence{NodeId: u.NodeId}); err != nil {
		return err
	}
	if err := k.hooks().AfterTaskLapsed(ctx, u.NodeId, "pool unit claim not revealed"); err != nil {
		return err
	}
	reason := fmt.Sprintf("claim of node %d not revealed by height %d", u.NodeId, u.RevealDeadlineHeight)
	node := u.NodeId
	unclaim := func(u *types.Unit) {
		u.ExcludedNodes = append(u.ExcludedNodes, u.NodeId)
		u.NodeId, u.Provider, u.Commitment, u.CommitHeight, u.RevealDeadlineHeight = 0, "", nil, 0, 0
		u.Exposure = sdkmath.ZeroInt()
	}
	to := types.UNIT_STATUS_OPEN
	if pool.Status != types.POOL_STATUS_OPEN {
		// a closed pool races nothing: the unit's price goes back to the owner
		price := pool.Spec.UnitPrice.Amount
		if err := k.payOut(ctx, pool.Owner, p.Denom, price); err != nil {
			return err
		}
		pool.Escrow = pool.Escrow.Sub(price)
		pool.OpenUnits--
		to = types.UNIT_STATUS_CANCELLED
	}
	if err := k.moveUnit(ctx, pool, &u, to, unclaim); err != nil {
		return err
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventUnit{PoolId: poolID, UnitId: unitID, Status: u.Status, NodeId: node, Reason: reason})
}
