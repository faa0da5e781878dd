package keeper

import (
	"context"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/x/dps/types"
)

// The funding link. A provider that pays itself through a second account it funded earns
// no work reward from it: x/dps remembers, for every successful bank transfer of udps
// that a tx carries, that the sender funded the recipient (FundedBy: (recipient,
// sender)), and counts no verified work (work.go) when the payer of a task or pool unit is
// its provider or an account the provider funded. x/market's payments and take are
// unchanged.
//
// What counts as a transfer: bank MsgSend and MsgMultiSend, at the top of a tx or inside
// authz MsgExec (nested too), with a positive udps amount. The app's post handler calls
// RecordTxFunding after the tx's msgs succeeded, in the same state branch, so a failed
// send (or an MsgExec without a grant) records nothing and nobody but the sender (or its
// authz grantee) can link a recipient to it. A pair never expires.
//
// Not seen (documented limits): a path of more than one hop (P -> X -> S), IBC transfers
// out and back, payments by a module or contract, and anything off-chain. The work
// reward cap below the take rate (x/dps README) still makes such loops lose money.

// RecordFunding remembers that sender funded recipient; a transfer to oneself is not a
// link. Each write is charged the store's gas.
func (k Keeper) RecordFunding(ctx context.Context, recipient, sender sdk.AccAddress) error {
	if recipient.Equals(sender) {
		return nil
	}
	return k.FundedBy.Set(ctx, collections.Join(recipient, sender))
}

// IsFundedBy reports whether funder ever sent udps to recipient by a transfer that
// RecordTxFunding saw.
func (k Keeper) IsFundedBy(ctx context.Context, recipient, funder sdk.AccAddress) (bool, error) {
	return k.FundedBy.Has(ctx, collections.Join(recipient, funder))
}

// RecordTxFunding records the funding pairs of a tx's msgs (see above). It visits at most
// maxMsgs msgs and transfer outputs, nested ones included, and stops there; the app
// passes a bound derived from the tx's size, which its sender paid gas for, so no real
// tx is cut short.
func (k Keeper) RecordTxFunding(ctx context.Context, msgs []sdk.Msg, maxMsgs int) error {
	w := fundingWalk{k: k, budget: maxMsgs}
	return w.walk(ctx, msgs)
}

type fundingWalk struct {
	k      Keeper
	budget int
}

func (w *fundingWalk) spend() bool {
	if w.budget <= 0 {
		return false
	}
	w.budget--
	return true
}

func (w *fundingWalk) walk(ctx context.Context, msgs []sdk.Msg) error {
	for _, m := range msgs {
		if !w.spend() {
			return nil
		}
		var err error
		switch m := m.(type) {
		case *banktypes.MsgSend:
			err = w.send(ctx, m)
		case *banktypes.MsgMultiSend:
			err = w.multiSend(ctx, m)
		case *authz.MsgExec:
			var inner []sdk.Msg
			if inner, err = m.GetMessages(); err == nil {
				err = w.walk(ctx, inner)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *fundingWalk) send(ctx context.Context, m *banktypes.MsgSend) error {
	if !m.Amount.AmountOf(types.Denom).IsPositive() {
		return nil
	}
	from, err := w.k.addressCodec.StringToBytes(m.FromAddress)
	if err != nil {
		return err
	}
	to, err := w.k.addressCodec.StringToBytes(m.ToAddress)
	if err != nil {
		return err
	}
	return w.k.RecordFunding(ctx, to, from)
}

// multiSend links every output that receives udps to every input that sends udps (the
// bank module allows one input).
func (w *fundingWalk) multiSend(ctx context.Context, m *banktypes.MsgMultiSend) error {
	var senders []sdk.AccAddress
	for _, in := range m.Inputs {
		if !in.Coins.AmountOf(types.Denom).IsPositive() {
			continue
		}
		from, err := w.k.addressCodec.StringToBytes(in.Address)
		if err != nil {
			return err
		}
		senders = append(senders, from)
	}
	if len(senders) == 0 {
		return nil
	}
	for _, out := range m.Outputs {
		if !w.spend() {
			return nil
		}
		if !out.Coins.AmountOf(types.Denom).IsPositive() {
			continue
		}
		to, err := w.k.addressCodec.StringToBytes(out.Address)
		if err != nil {
			return err
		}
		for _, from := range senders {
			if err := w.k.RecordFunding(ctx, to, from); err != nil {
				return err
			}
		}
	}
	return nil
}

// EarnsWork reports whether work its provider did for payer counts: not when the payer
// is the provider, nor when the provider funded the payer. x/market asks it too, so that
// wash work earns no reputation and no step through the audit warm-up.
func (k Keeper) EarnsWork(ctx context.Context, payer, provider sdk.AccAddress) (bool, error) {
	return k.earnsWork(ctx, payer, provider)
}

// WorkRewardCapPpm implements x/market's WorkRules: the most work earns, per fee, which
// x/market's take must stay above.
func (k Keeper) WorkRewardCapPpm(ctx context.Context) (uint64, error) {
	p, err := k.Params.Get(ctx)
	return p.WorkRewardCapPpm, err
}

// earnsWork is EarnsWork.
func (k Keeper) earnsWork(ctx context.Context, payer, provider sdk.AccAddress) (bool, error) {
	if provider.Equals(payer) {
		return false, nil
	}
	funded, err := k.IsFundedBy(ctx, payer, provider)
	return !funded, err
}
