package types

import (
	"context"
	"time"

	sdk "github.com/cosmos/cosmos-sdk/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// AccountKeeper is the part of x/auth this module uses.
type AccountKeeper interface {
	GetModuleAccount(ctx context.Context, name string) sdk.ModuleAccountI
	GetModuleAddress(name string) sdk.AccAddress
}

// BankKeeper mints and burns ugfl and moves it between the module and operators.
type BankKeeper interface {
	MintCoins(ctx context.Context, moduleName string, amt sdk.Coins) error
	BurnCoins(ctx context.Context, moduleName string, amt sdk.Coins) error
	SendCoinsFromModuleToAccount(ctx context.Context, senderModule string, recipientAddr sdk.AccAddress, amt sdk.Coins) error
	SendCoinsFromAccountToModule(ctx context.Context, senderAddr sdk.AccAddress, recipientModule string, amt sdk.Coins) error
	GetSupply(ctx context.Context, denom string) sdk.Coin
	GetBalance(ctx context.Context, addr sdk.AccAddress, denom string) sdk.Coin
}

// ValidatorKeeper is the part of x/staking the beacon uses: a block proposer's validator,
// whose consensus key checks the proposer's VRF proof and whose operator signs it.
type ValidatorKeeper interface {
	GetValidatorByConsAddr(ctx context.Context, consAddr sdk.ConsAddress) (stakingtypes.Validator, error)
}

// CollateralKeeper is the part of x/staking-slash this module uses: collateral locked per
// registered GPU, and the penalty for a wrong PoCP answer.
type CollateralKeeper interface {
	LockForNode(ctx context.Context, provider sdk.AccAddress, gpus uint64) error
	UnlockForNode(ctx context.Context, provider sdk.AccAddress, gpus uint64) error
	Slash(ctx context.Context, provider sdk.AccAddress, fractionPPM uint32, reason sstypes.SlashReason, b sstypes.Beneficiaries, evidence sstypes.SlashEvidence) (sstypes.SlashRecord, error)
	Jail(ctx context.Context, provider sdk.AccAddress, until time.Time, evidence sstypes.SlashEvidence) error
}

// GFLHooks let other modules follow nodes and challenges. x/market vetoes the
// deactivation of a node with work in flight and the inventory changes its tasks would not
// survive, and re-indexes changed nodes; x/reputation counts challenge outcomes.
type GFLHooks interface {
	// BeforeNodeChange is called before a node is deactivated (next nil) or its
	// inventory changes (next: the node as the change would leave it); an error vetoes
	// the change. A deactivation vetoed for work in flight wraps ErrNodeBusy, and the
	// hook's module calls Keeper.NodeIdle when that work ends: a node draining
	// (MsgDeactivateNode.drain) is deactivated then.
	BeforeNodeChange(ctx context.Context, node Node, next *Node) error
	// AfterNodeChanged is called after a node's status, spec or class changed; an error
	// (the hook wrote nothing) fails the change.
	AfterNodeChanged(ctx context.Context, node Node) error
	// AfterChallengeFinished is called when a challenge passed, failed or was missed; an
	// error (the hook wrote nothing) fails the challenge's conclusion.
	AfterChallengeFinished(ctx context.Context, node Node, challengeID uint64, status ChallengeStatus) error
	// BeforeNodeDelete is called before a node inactive for node_retention_blocks is
	// deleted; an error puts the deletion off (x/market: the node has unsettled tasks).
	BeforeNodeDelete(ctx context.Context, node Node) error
	// AfterNodeDeleted is called once a node is deleted: the modules drop what they keep
	// about it; an error (the hook wrote nothing) fails the deletion.
	AfterNodeDeleted(ctx context.Context, node Node) error
}

// MultiGFLHooks calls several hooks in order; the first veto wins.
type MultiGFLHooks []GFLHooks

var _ GFLHooks = MultiGFLHooks{}

// BeforeNodeChange implements GFLHooks.
func (m MultiGFLHooks) BeforeNodeChange(ctx context.Context, node Node, next *Node) error {
	for _, h := range m {
		if err := h.BeforeNodeChange(ctx, node, next); err != nil {
			return err
		}
	}
	return nil
}

// AfterNodeChanged implements GFLHooks.
func (m MultiGFLHooks) AfterNodeChanged(ctx context.Context, node Node) error {
	for _, h := range m {
		if err := h.AfterNodeChanged(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

// BeforeNodeDelete implements GFLHooks.
func (m MultiGFLHooks) BeforeNodeDelete(ctx context.Context, node Node) error {
	for _, h := range m {
		if err := h.BeforeNodeDelete(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

// AfterNodeDeleted implements GFLHooks.
func (m MultiGFLHooks) AfterNodeDeleted(ctx context.Context, node Node) error {
	for _, h := range m {
		if err := h.AfterNodeDeleted(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

// AfterChallengeFinished implements GFLHooks.
func (m MultiGFLHooks) AfterChallengeFinished(ctx context.Context, node Node, challengeID uint64, status ChallengeStatus) error {
	for _, h := range m {
		if err := h.AfterChallengeFinished(ctx, node, challengeID, status); err != nil {
			return err
		}
	}
	return nil
}
