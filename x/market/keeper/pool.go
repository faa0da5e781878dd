package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/internal/collkeys"
	"github.com/flopsnet/flops/x/gfl/pocp"
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

func (k Keeper) getPool(ctx context.Context, id uint64) (types.Pool, error) {
	pl, err := k.Pools.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return pl, errorsmod.Wrapf(types.ErrPoolNotFound, "pool %d", id)
	}
	return pl, err
}

// validatePoolSpec checks a pool spec (the runtime rules are the jobs').
func validatePoolSpec(p types.Params, s types.PoolSpec) error {
	js := types.JobSpec{
		Workload: s.Workload, Runtime: s.Runtime, Image: s.Image, Command: s.Command, Env: s.Env,
		Requirements: s.Requirements, TaskCount: 1, Replicas: 1, Verification: s.Verification,
		MaxPricePerTask: s.UnitPrice, MaxDuration: 1, Mode: types.ALLOCATION_MODE_ASSIGN,
		PriorityTip: sdk.NewInt64Coin(p.Denom, 0), VerificationBudget: sdk.NewInt64Coin(p.Denom, 0), Builtin: s.Builtin,
	}
	if s.Verification != types.VERIFICATION_CLASS_BUILTIN_GEMM && s.Verification != types.VERIFICATION_CLASS_NONE {
		return errorsmod.Wrapf(types.ErrInvalidPool, "verification %s: a pool takes BUILTIN_GEMM or NONE", s.Verification)
	}
	// Validate against a far deadline: a pool has none of its own.
	if err := js.Validate(p, js.Deadline.Add(-js.MaxDuration)); err != nil {
		return errorsmod.Wrap(types.ErrInvalidPool, err.Error())
	}
	if s.MaxProviders == 0 || s.MaxProviders > p.MaxPoolProviders {
		return errorsmod.Wrapf(types.ErrInvalidPool, "max_providers %d: must be 1 to %d", s.MaxProviders, p.MaxPoolProviders)
	}
	if s.Budget.Denom != p.Denom || s.Budget.Amount.IsNil() || s.Budget.Amount.LT(s.UnitPrice.Amount) || s.Budget.Amount.GT(types.MaxAmount) {
		return errorsmod.Wrapf(types.ErrInvalidPool, "budget %s: must be in %s, pay at least one unit of %s and be at most %s", s.Budget, p.Denom, s.UnitPrice, types.MaxAmount)
	}
	return nil
}

// CreatePool opens a pool and moves its budget into escrow.
func (k Keeper) CreatePool(ctx context.Context, owner string, spec types.PoolSpec) (uint64, error) {
	ownerAddr, err := k.address("owner", owner)
	if err != nil {
		return 0, err
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	if err := validatePoolSpec(p, spec); err != nil {
		return 0, err
	}
	if err := k.bankKeeper.SendCoinsFromAccountToModule(ctx, ownerAddr, types.ModuleName, sdk.NewCoins(spec.Budget)); err != nil {
		return 0, errorsmod.Wrapf(types.ErrInsufficientFunds, "pool budget %s: %s", spec.Budget, err)
	}
	id, err := k.PoolSeq.Next(ctx)
	if err != nil {
		return 0, err
	}
	pool := types.Pool{Id: id, Owner: owner, Spec: spec, Status: types.POOL_STATUS_OPEN, Escrow: spec.Budget.Amount, Unpaid: sdkmath.ZeroInt(), NextUnit: 1}
	if err := k.Pools.Set(ctx, id, pool); err != nil {
		return 0, err
	}
	return id, k.poolEvent(ctx, id, "created", 0, 0, spec.Budget.Amount)
}

func (k Keeper) poolEvent(ctx context.Context, id uint64, action string, node, count uint64, amount sdkmath.Int) error {
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventPool{PoolId: id, Action: action, NodeId: node, Count: count, Amount: amount})
}

// JoinPool adds an eligible node of the signer to an open pool.
func (k Keeper) JoinPool(ctx context.Context, provider string, poolID, nodeID uint64) error {
	if _, err := k.address("provider", provider); err != nil {
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
		return errorsmod.Wrapf(types.ErrInvalidPool, "node %d is already a member of pool %d", nodeID, poolID)
	}
	if pool.Members >= pool.Spec.MaxProviders {
		return errorsmod.Wrapf(types.ErrInvalidPool, "pool %d is full (%d members)", poolID, pool.Members)
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	fake := types.Job{Owner: pool.Owner, Spec: types.JobSpec{Workload: pool.Spec.Workload, Requirements: pool.Spec.Requirements}}
	if err := k.bidEligible(ctx, p, fake, slot, pool.Spec.UnitPrice.Amount); err != nil {
		return err
	}
	if err := k.PoolMembers.Set(ctx, collections.Join(poolID, nodeID), types.PoolMember{PoolId: poolID, NodeId: nodeID, Provider: provider}); err != nil {
		return err
	}
	pool.Members++
	if err := k.Pools.Set(ctx, poolID, pool); err != nil {
		return err
	}
	return k.poolEvent(ctx, poolID, "joined", nodeID, 0, sdkmath.ZeroInt())
}

// LeavePool takes a node out of a pool (its claimed units stay its to reveal).
func (k Keeper) LeavePool(ctx context.Context, provider string, poolID, nodeID uint64) error {
	if _, err := k.address("provider", provider); err != nil {
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
	if err := k.Pools.Set(ctx, poolID, pool); err != nil {
		return err
	}
	return k.poolEvent(ctx, poolID, "left", nodeID, 0, sdkmath.ZeroInt())
}

// freeBudget is what a pool's escrow can still fund: escrow - unpaid - open units.
func freeBudget(pool types.Pool) sdkmath.Int {
	return pool.Escrow.Sub(pool.Unpaid).Sub(pool.Spec.UnitPrice.Amount.MulRaw(int64(pool.OpenUnits)))
}

// SubmitUnits posts a batch of unit inputs; each needs unit_price of free budget.
func (k Keeper) SubmitUnits(ctx context.Context, owner string, poolID uint64, inputs []types.Input) (uint64, error) {
	if _, err := k.address("owner", owner); err != nil {
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
	if n := len(inputs); n == 0 || uint32(n) > p.MaxUnitsPerMsg {
		return 0, errorsmod.Wrapf(types.ErrInvalidPool, "units: %d, must be 1 to %d per message", n, p.MaxUnitsPerMsg)
	}
	for i, in := range inputs {
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
	for _, in := range inputs {
		u := types.Unit{PoolId: poolID, Id: pool.NextUnit, Input: in, Status: types.UNIT_STATUS_OPEN, Exposure: sdkmath.ZeroInt()}
		if err := k.Units.Set(ctx, collections.Join(poolID, u.Id), u); err != nil {
			return 0, err
		}
		if err := k.OpenUnits.Set(ctx, collections.Join(poolID, u.Id)); err != nil {
			return 0, err
		}
		pool.NextUnit++
		pool.OpenUnits++
	}
	if err := k.Pools.Set(ctx, poolID, pool); err != nil {
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
func (k Keeper) CommitUnit(ctx context.Context, msg *types.MsgCommitUnit) (int64, error) {
	provider, err := k.address("provider", msg.Provider)
	if err != nil {
		return 0, err
	}
	pool, err := k.getPool(ctx, msg.PoolId)
	if err != nil {
		return 0, err
	}
	m, err := k.PoolMembers.Get(ctx, collections.Join(msg.PoolId, msg.NodeId))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return 0, errorsmod.Wrapf(types.ErrNotMember, "node %d in pool %d", msg.NodeId, msg.PoolId)
	} else if err != nil {
		return 0, err
	}
	if m.Provider != msg.Provider {
		return 0, errorsmod.Wrapf(types.ErrNotProvider, "node %d is operated by %s, not %s", msg.NodeId, m.Provider, msg.Provider)
	}
	u, err := k.getUnit(ctx, msg.PoolId, msg.UnitId)
	if err != nil {
		return 0, err
	}
	if u.Status != types.UNIT_STATUS_OPEN {
		return 0, errorsmod.Wrapf(types.ErrUnitClaimed, "unit %d of pool %d is %s", u.Id, u.PoolId, u.Status)
	}
	for _, n := range u.ExcludedNodes {
		if n == msg.NodeId {
			return 0, errorsmod.Wrapf(types.ErrNodeNotEligible, "node %d lapsed on unit %d before", n, u.Id)
		}
	}
	if len(msg.Commitment) != sha256.Size {
		return 0, errorsmod.Wrapf(types.ErrInvalidCommitment, "commitment is %d bytes, must be 32", len(msg.Commitment))
	}
	p, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	exposure := exposureOf(p, pool.Spec.UnitPrice.Amount)
	if ok, err := k.collateral.CanAddExposure(ctx, provider, exposure); err != nil {
		return 0, err
	} else if !ok {
		return 0, errorsmod.Wrapf(types.ErrNodeNotEligible, "%s is jailed or its collateral does not cover %s%s more exposure (unit price x result_penalty_multiple %d)", msg.Provider, exposure, p.Denom, p.ResultPenaltyMultiple)
	}
	if err := k.collateral.AddExposure(ctx, provider, exposure); err != nil {
		return 0, err
	}
	h := sdk.UnwrapSDKContext(ctx).BlockHeight()
	u.Status, u.NodeId, u.Provider, u.Commitment, u.Exposure = types.UNIT_STATUS_COMMITTED, msg.NodeId, msg.Provider, msg.Commitment, exposure
	u.CommitHeight, u.RevealDeadlineHeight = h, h+int64(p.PoolRevealTimeoutBlocks)
	if err := k.OpenUnits.Remove(ctx, collections.Join(u.PoolId, u.Id)); err != nil {
		return 0, err
	}
	if err := k.UnitDeadlines.Set(ctx, collections.Join3(u.RevealDeadlineHeight, u.PoolId, u.Id)); err != nil {
		return 0, err
	}
	if err := k.Units.Set(ctx, collections.Join(u.PoolId, u.Id), u); err != nil {
		return 0, err
	}
	return u.RevealDeadlineHeight, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventUnit{
		PoolId: u.PoolId, UnitId: u.Id, Status: u.Status, NodeId: u.NodeId,
	})
}

// poolGemm is the GEMM of a BUILTIN gemm pool unit (docs/pocp.md, section 8): seeded by
// the pool, the unit and its input, so that every unit is distinct work:
//
//	seed = sha256(DomainPoolGemm || pool id BE64 || unit id BE64 || input sha256 hex)
func poolGemm(pool types.Pool, u types.Unit) pocp.Challenge {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], pool.Id)
	binary.BigEndian.PutUint64(b[8:], u.Id)
	h := sha256.New()
	h.Write([]byte(types.DomainPoolGemm))
	h.Write(b[:])
	h.Write([]byte(u.Input.Sha256))
	var c pocp.Challenge
	copy(c.Seed[:], h.Sum(nil))
	c.N, c.R = pool.Spec.Builtin.GemmN, pool.Spec.Builtin.GemmR
	return c
}

// PoolGemm exports a pool unit's GEMM for the worker.
func PoolGemm(pool types.Pool, u types.Unit) pocp.Challenge { return poolGemm(pool, u) }

// RevealUnit opens a claimed unit in a later block; verified, it is credited to the
// claimer and its verified work recorded.
func (k Keeper) RevealUnit(ctx context.Context, msg *types.MsgRevealUnit) error {
	provider, err := k.address("provider", msg.Provider)
	if err != nil {
		return err
	}
	pool, err := k.getPool(ctx, msg.PoolId)
	if err != nil {
		return err
	}
	u, err := k.getUnit(ctx, msg.PoolId, msg.UnitId)
	if err != nil {
		return err
	}
	if u.Status != types.UNIT_STATUS_COMMITTED || u.Provider != msg.Provider {
		return errorsmod.Wrapf(types.ErrNotProvider, "unit %d of pool %d is %s, claimed by %q", u.Id, u.PoolId, u.Status, u.Provider)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	if sdkCtx.BlockHeight() <= u.CommitHeight {
		return errorsmod.Wrapf(types.ErrRevealNotOpen, "unit %d: reveal after the commit block %d", u.Id, u.CommitHeight)
	}
	if len(msg.ResultRoot) != sha256.Size || len(msg.Salt) < 16 || len(msg.Salt) > 64 {
		return errorsmod.Wrapf(types.ErrInvalidReveal, "result_root must be 32 bytes and salt 16 to 64 bytes")
	}
	if err := types.ValidateURI(msg.OutputUri); err != nil {
		return errorsmod.Wrapf(types.ErrInvalidReveal, "output_uri: %s", err)
	}
	if !bytes.Equal(Commitment(msg.ResultRoot, msg.Salt, provider), u.Commitment) {
		return errorsmod.Wrapf(types.ErrRevealMismatch, "unit %d: sha256(root || salt || provider) differs from the commitment", u.Id)
	}
	if pool.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		if err := k.verifyGemm(ctx, poolGemm(pool, u), msg.ResultRoot, u.CommitHeight, msg.GemmProofs, types.DomainPoolSample, u.PoolId, u.Id); err != nil {
			return err
		}
	}
	if err := k.collateral.ReleaseExposure(ctx, provider, u.Exposure); err != nil {
		return err
	}
	if err := k.UnitDeadlines.Remove(ctx, collections.Join3(u.RevealDeadlineHeight, u.PoolId, u.Id)); err != nil {
		return err
	}
	price := pool.Spec.UnitPrice.Amount
	key := collections.Join(pool.Id, provider)
	e, err := k.PoolEarnings.Get(ctx, key)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		e = types.PoolEarning{PoolId: pool.Id, Provider: msg.Provider, Amount: sdkmath.ZeroInt()}
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
	if err := k.Pools.Set(ctx, pool.Id, pool); err != nil {
		return err
	}
	if err := k.recordPoolWork(ctx, pool, provider, price); err != nil {
		return err
	}
	// The unit is done: its record goes (the events keep it).
	if err := k.Units.Remove(ctx, collections.Join(u.PoolId, u.Id)); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventUnit{PoolId: u.PoolId, UnitId: u.Id, Status: types.UNIT_STATUS_PAID, NodeId: u.NodeId})
}

// recordPoolWork counts a verified GEMM unit as verified work: its exact FLOPs, in
// GFLOP-seconds of one second of a GFLOP/s node (NONE pools do no verified work). Like a
// task's, it counts only when the pool's owner is neither the provider nor funded by it.
func (k Keeper) recordPoolWork(ctx context.Context, pool types.Pool, provider sdk.AccAddress, fee sdkmath.Int) error {
	if k.wiring.workEpoch == nil {
		return nil
	}
	if ok, err := k.earnsWork(ctx, pool.Owner, provider); err != nil || !ok {
		return err
	}
	epoch, err := k.wiring.workEpoch.CurrentWorkEpoch(ctx)
	if err != nil {
		return err
	}
	work := sdkmath.ZeroInt()
	if pool.Spec.Verification == types.VERIFICATION_CLASS_BUILTIN_GEMM {
		c := pocp.Challenge{N: pool.Spec.Builtin.GemmN, R: pool.Spec.Builtin.GemmR}
		work = sdkmath.NewIntFromUint64(c.FLOPs() / 1e9)
	}
	key := collections.Join3(epoch, provider, int32(pool.Spec.Workload))
	rec, err := k.Work.Get(ctx, key)
	if err != nil {
		rec = types.WorkRecord{GflopSeconds: sdkmath.ZeroInt(), Fees: sdkmath.ZeroInt()}
	}
	rec.GflopSeconds, rec.Fees, rec.Tasks = rec.GflopSeconds.Add(work), rec.Fees.Add(fee), rec.Tasks+1
	return k.Work.Set(ctx, key, rec)
}

// WithdrawPoolEarnings pays a provider's credited units in one payment (minus the take).
func (k Keeper) WithdrawPoolEarnings(ctx context.Context, providerStr string, poolID uint64) (sdkmath.Int, error) {
	provider, err := k.address("provider", providerStr)
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
	if err := k.Pools.Set(ctx, poolID, pool); err != nil {
		return sdkmath.Int{}, err
	}
	return split.Provider, k.poolEvent(ctx, poolID, "withdrawn", e.LastNode, e.Units, split.Provider)
}

// payPoolEarning pays one provider's credits out of a pool's escrow, through the take.
func (k Keeper) payPoolEarning(ctx context.Context, p types.Params, pool *types.Pool, e types.PoolEarning) (Payment, error) {
	split := SplitPayment(e.Amount, p.TakeRatePpm, p.TakePoolSharePpm)
	provider := k.mustAcc(e.Provider)
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
func (k Keeper) ClosePool(ctx context.Context, owner string, poolID uint64) (sdkmath.Int, error) {
	ownerAddr, err := k.address("owner", owner)
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
		if err := k.OpenUnits.Remove(ctx, key); err != nil {
			return sdkmath.Int{}, err
		}
		if err := k.Units.Remove(ctx, key); err != nil {
			return sdkmath.Int{}, err
		}
		pool.OpenUnits--
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
		if err := k.PoolEarnings.Remove(ctx, collections.Join(poolID, k.mustAcc(e.Provider))); err != nil {
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
	if err := k.Pools.Set(ctx, poolID, pool); err != nil {
		return sdkmath.Int{}, err
	}
	return refund, k.poolEvent(ctx, poolID, "closed", 0, uint64(len(open)), refund)
}

// expireUnits handles the claims whose reveal deadline passed: the claimer is slashed for
// a missed reveal (compensating the pool's owner) and the unit is raced again without it,
// or, in a closed pool, refunded.
func (k Keeper) expireUnits(ctx sdk.Context, p types.Params, limit int) (int, error) {
	rng := new(collections.Range[collections.Triple[int64, uint64, uint64]]).
		EndInclusive(collections.Join3(ctx.BlockHeight(), uint64(math.MaxUint64), uint64(math.MaxUint64)))
	keys, err := collkeys.CollectKeys(ctx, k.UnitDeadlines, rng, limit)
	if err != nil {
		return 0, err
	}
	for _, key := range keys {
		if err := k.UnitDeadlines.Remove(ctx, key); err != nil {
			return 0, err
		}
		_ = blockhook.Apply(ctx, "market: unit reveal deadline", func(ctx sdk.Context) error {
			return k.lapseUnit(ctx, p, key.K2(), key.K3())
		})
	}
	return len(keys), nil
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
	provider := k.mustAcc(u.Provider)
	if err := k.collateral.ReleaseExposure(ctx, provider, u.Exposure); err != nil {
		return err
	}
	ppm, err := k.penaltyPPM(ctx, provider, p.MissedRevealSlashPpm, u.Exposure)
	if err != nil {
		return err
	}
	if _, err := k.collateral.Slash(ctx, provider, ppm, sstypes.SLASH_REASON_MISSED_REVEAL,
		sstypes.Beneficiaries{Compensate: k.mustAcc(pool.Owner)}, sstypes.SlashEvidence{NodeId: u.NodeId}); err != nil {
		return err
	}
	k.hooks().AfterTaskLapsed(ctx, u.NodeId, "pool unit claim not revealed")
	reason := fmt.Sprintf("claim of node %d not revealed by height %d", u.NodeId, u.RevealDeadlineHeight)
	u.ExcludedNodes = append(u.ExcludedNodes, u.NodeId)
	node := u.NodeId
	u.Status, u.NodeId, u.Provider, u.Commitment, u.CommitHeight, u.RevealDeadlineHeight = types.UNIT_STATUS_OPEN, 0, "", nil, 0, 0
	u.Exposure = sdkmath.ZeroInt()
	if pool.Status == types.POOL_STATUS_OPEN {
		if err := k.OpenUnits.Set(ctx, collections.Join(poolID, unitID)); err != nil {
			return err
		}
		if err := k.Units.Set(ctx, collections.Join(poolID, unitID), u); err != nil {
			return err
		}
	} else {
		// a closed pool races nothing: the unit's price goes back to the owner
		price := pool.Spec.UnitPrice.Amount
		if err := k.bankKeeper.SendCoinsFromModuleToAccount(ctx, types.ModuleName, k.mustAcc(pool.Owner), sdk.NewCoins(sdk.NewCoin(p.Denom, price))); err != nil {
			return err
		}
		pool.Escrow = pool.Escrow.Sub(price)
		pool.OpenUnits--
		if err := k.Units.Remove(ctx, collections.Join(poolID, unitID)); err != nil {
			return err
		}
		if err := k.Pools.Set(ctx, poolID, pool); err != nil {
			return err
		}
		u.Status = types.UNIT_STATUS_CANCELLED
	}
	return ctx.EventManager().EmitTypedEvent(&types.EventUnit{PoolId: poolID, UnitId: unitID, Status: u.Status, NodeId: node, Reason: reason})
}
