package types

import (
	"context"
	"time"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// AccountKeeper is the part of x/auth this module uses.
type AccountKeeper interface {
	GetModuleAccount(ctx context.Context, name string) sdk.ModuleAccountI
	GetModuleAddress(name string) sdk.AccAddress
}

// BankKeeper moves escrow, deposits, payments and the take.
type BankKeeper interface {
	// SendCoins is how escrow comes in (Keeper.escrowIn): to the module's address, whose
	// account InitGenesis created.
	SendCoins(ctx context.Context, fromAddr, toAddr sdk.AccAddress, amt sdk.Coins) error
	SendCoinsFromModuleToAccount(ctx context.Context, senderModule string, recipientAddr sdk.AccAddress, amt sdk.Coins) error
	SendCoinsFromModuleToModule(ctx context.Context, senderModule, recipientModule string, amt sdk.Coins) error
	GetBalance(ctx context.Context, addr sdk.AccAddress, denom string) sdk.Coin
	SpendableCoins(ctx context.Context, addr sdk.AccAddress) sdk.Coins
}

// GFLKeeper is the part of x/gfl this module uses: nodes, params (GPU classes and workload
// weights), the beacon, and the end of a drain.
type GFLKeeper interface {
	GetNode(ctx context.Context, id uint64) (gfltypes.Node, error)
	// NodeIdle: the last task in flight of a node off the market ended (a draining node is
	// deactivated).
	NodeIdle(ctx context.Context, id uint64) error
	GetParams(ctx context.Context) (gfltypes.Params, error)
	Seed(ctx context.Context, height int64, domain string, ids ...uint64) ([32]byte, error)
	DrawSeed(ctx context.Context, since int64, domain string, ids ...uint64) ([32]byte, error)
	RecentSeed(ctx context.Context, domain string, ids ...uint64) ([32]byte, error)
}

// CollateralKeeper is the part of x/staking-slash this module uses.
type CollateralKeeper interface {
	CanAddExposure(ctx context.Context, provider sdk.AccAddress, value sdkmath.Int) (bool, error)
	AddExposure(ctx context.Context, provider sdk.AccAddress, value sdkmath.Int) error
	ReleaseExposure(ctx context.Context, provider sdk.AccAddress, value sdkmath.Int) error
	GetCollateral(ctx context.Context, provider sdk.AccAddress) (sstypes.Collateral, error)
	Slash(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, reason sstypes.SlashReason, b sstypes.Beneficiaries, evidence sstypes.SlashEvidence) (sstypes.SlashRecord, error)
	// SlashAtMost is Slash with the fraction lowered so that the total is at most limit.
	SlashAtMost(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, limit sdkmath.Int, reason sstypes.SlashReason, b sstypes.Beneficiaries, evidence sstypes.SlashEvidence) (sstypes.SlashRecord, error)
	// CoveringFraction is fractionPPM lowered, when it can be, to the least fraction of
	// the provider's collateral whose cut reaches amount.
	CoveringFraction(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, amount sdkmath.Int) (uint32, error)
	Jail(ctx context.Context, provider sdk.AccAddress, until time.Time, evidence sstypes.SlashEvidence) error
}

// ReputationKeeper scores nodes for scheduling, auctions and audits. Until x/reputation
// exists the app gives x/market NeutralReputation.
type ReputationKeeper interface {
	// Reputation returns the node's score in [0, 1] and whether it may get work.
	Reputation(ctx context.Context, nodeID uint64) (score sdkmath.LegacyDec, eligible bool, err error)
}

// NeutralReputation scores every node 1 and finds every node eligible.
type NeutralReputation struct{}

// Reputation implements ReputationKeeper.
func (NeutralReputation) Reputation(context.Context, uint64) (sdkmath.LegacyDec, bool, error) {
	return sdkmath.LegacyOneDec(), true, nil
}

// WorkRules says whose work counts (x/dps decides, for its work rewards too).
type WorkRules interface {
	// EarnsWork: work provider did for payer counts, i.e. they are not the same account
	// and the provider never funded the payer (wash work does not count).
	EarnsWork(ctx context.Context, payer, provider sdk.AccAddress) (bool, error)
	// WorkRewardCapPpm is the most work can earn, per fee (x/dps's work_reward_cap_ppm):
	// the market's take must stay above it (WashLoopLoses).
	WorkRewardCapPpm(ctx context.Context) (uint64, error)
}

// AllWorkCounts is the WorkRules of a market without x/dps (keeper unit tests).
type AllWorkCounts struct{}

// EarnsWork implements WorkRules: only self-dealing does not count.
func (AllWorkCounts) EarnsWork(_ context.Context, payer, provider sdk.AccAddress) (bool, error) {
	return !payer.Equals(provider), nil
}

// WorkRewardCapPpm implements WorkRules: without x/dps, work earns no reward.
func (AllWorkCounts) WorkRewardCapPpm(context.Context) (uint64, error) { return 0, nil }

// MarketHooks tell other modules (x/reputation) about providers' behaviour. A hook that
// fails returns its error having written nothing; x/market then fails the step that
// called it (the tx, or the block item), so that no provider's record is ever skipped.
type MarketHooks interface {
	// AfterTaskAcked: a node acked a task (onTime: within the ack timeout).
	AfterTaskAcked(ctx context.Context, nodeID uint64, onTime bool) error
	// AfterTaskLapsed: a node lost a task (no ack, lapsed heartbeat, missed deadline or reveal).
	AfterTaskLapsed(ctx context.Context, nodeID uint64, reason string) error
	// AfterTaskVerified: a node's result was accepted (ok) or lost verification.
	AfterTaskVerified(ctx context.Context, nodeID uint64, ok bool) error
	// AfterTaskSettled: a node was paid for a task finished before its deadline or not.
	AfterTaskSettled(ctx context.Context, nodeID uint64, beforeDeadline bool) error
	// AfterWorkVerified: a settled task or a paid pool unit, reported as verified work
	// (x/dps keeps the work ledger and decides what counts).
	AfterWorkVerified(ctx context.Context, w VerifiedWork) error
}

// VerifiedWork is what a settled task or a paid pool unit reports: who paid whom for
// which class of work, how much of it (GFLOP-seconds: the node's power corrected for the
// class, times the run time, times the task's share of the node's GPUs; a GEMM unit's exact
// FLOPs) and the fees (the gross payment, before the take, udps).
type VerifiedWork struct {
	Payer, Provider sdk.AccAddress
	Workload        int32
	GflopSeconds    sdkmath.Int
	Fees            sdkmath.Int
}

// MultiMarketHooks calls several hooks in order; the first error stops it.
type MultiMarketHooks []MarketHooks

var _ MarketHooks = MultiMarketHooks{}

// AfterTaskAcked implements MarketHooks.
func (m MultiMarketHooks) AfterTaskAcked(ctx context.Context, nodeID uint64, onTime bool) error {
	for _, h := range m {
		if err := h.AfterTaskAcked(ctx, nodeID, onTime); err != nil {
			return err
		}
	}
	return nil
}

// AfterTaskLapsed implements MarketHooks.
func (m MultiMarketHooks) AfterTaskLapsed(ctx context.Context, nodeID uint64, reason string) error {
	for _, h := range m {
		if err := h.AfterTaskLapsed(ctx, nodeID, reason); err != nil {
			return err
		}
	}
	return nil
}

// AfterTaskVerified implements MarketHooks.
func (m MultiMarketHooks) AfterTaskVerified(ctx context.Context, nodeID uint64, ok bool) error {
	for _, h := range m {
		if err := h.AfterTaskVerified(ctx, nodeID, ok); err != nil {
			return err
		}
	}
	return nil
}

// AfterWorkVerified implements MarketHooks.
func (m MultiMarketHooks) AfterWorkVerified(ctx context.Context, w VerifiedWork) error {
	for _, h := range m {
		if err := h.AfterWorkVerified(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// AfterTaskSettled implements MarketHooks.
func (m MultiMarketHooks) AfterTaskSettled(ctx context.Context, nodeID uint64, beforeDeadline bool) error {
	for _, h := range m {
		if err := h.AfterTaskSettled(ctx, nodeID, beforeDeadline); err != nil {
			return err
		}
	}
	return nil
}
