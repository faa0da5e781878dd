package app

import (
	sdk "github.com/cosmos/cosmos-sdk/types"

	dpskeeper "github.com/flopsnet/flops/x/dps/keeper"
)

// NewPostHandler runs after a tx's msgs, in their state branch: it is committed with them
// and reverted with them.
func NewPostHandler(dps dpskeeper.Keeper) sdk.PostHandler {
	return sdk.ChainPostDecorators(FundingDecorator{dps: dps})
}

// FundingDecorator records, for a tx whose msgs all succeeded, who sent udps to whom by a
// bank transfer (x/dps's funding link: work paid by an account its provider funded
// earns no work reward). It runs after the msgs rather than before them, so a send that
// fails, or an authz MsgExec without a grant, links nobody: only the sender or a grantee
// it authorised can make a recipient count as funded by it.
//
// Bounds: it visits at most one msg (nested ones and MultiSend outputs included) per two
// bytes of the tx, which the sender paid gas for by size; each encoded msg takes more
// than that, so no real tx is cut short. Each pair written is charged the store's write
// gas on the tx's meter. In CheckTx and simulation the writes land in a branch that is
// never committed.
type FundingDecorator struct {
	dps dpskeeper.Keeper
}

// PostHandle implements sdk.PostDecorator.
func (d FundingDecorator) PostHandle(ctx sdk.Context, tx sdk.Tx, simulate, success bool, next sdk.PostHandler) (sdk.Context, error) {
	if success {
		if err := d.dps.RecordTxFunding(ctx, tx.GetMsgs(), fundingMsgBound(ctx)); err != nil {
			return ctx, err
		}
	}
	return next(ctx, tx, simulate, success)
}

// fundingMsgBound is one msg per two bytes of the tx. CheckTx, FinalizeBlock and Simulate
// all put the tx's bytes in the context; without them (a tx run from Go) the bound is
// fundingMsgsWithoutBytes.
func fundingMsgBound(ctx sdk.Context) int {
	if n := len(ctx.TxBytes()); n > 0 {
		return n / 2
	}
	return fundingMsgsWithoutBytes
}

const fundingMsgsWithoutBytes = 1_000
