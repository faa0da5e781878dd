package types

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// ledgerMoveKey marks a context in which x/gfl itself moves ugfl.
type ledgerMoveKey struct{}

// WithLedgerMove marks ctx as x/gfl's own move of ugfl: minting an operator's new power
// to it, or taking back power it lost to burn it. No other move of ugfl is allowed.
func WithLedgerMove(ctx context.Context) context.Context {
	return sdk.UnwrapSDKContext(ctx).WithValue(ledgerMoveKey{}, true)
}

// SendRestriction is x/bank's send restriction for ugfl: ugfl stays with the operator
// whose nodes' verified power it measures. Every path through x/bank that moves coins
// between accounts passes here (MsgSend, MsgMultiSend, fees and fee grants, the
// community pool, gov deposits, IBC escrow, authz-executed sends, any module's
// SendCoins), so every one of them is refused for ugfl unless x/gfl marked the context
// with WithLedgerMove. Without it, a holder could give ugfl away and the next rebalance
// could not burn it back: the node would keep its power forever and could never be
// deactivated.
func SendRestriction(ctx context.Context, from, to sdk.AccAddress, amt sdk.Coins) (sdk.AccAddress, error) {
	if amt.AmountOf(Denom).IsZero() {
		return to, nil
	}
	if marked, _ := ctx.Value(ledgerMoveKey{}).(bool); marked {
		return to, nil
	}
	return to, errorsmod.Wrapf(ErrNotTransferable, "%s%s from %s to %s", amt.AmountOf(Denom), Denom, from, to)
}
