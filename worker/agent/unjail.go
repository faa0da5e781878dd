package agent

import (
	"context"
	"time"

	sdk "github.com/cosmos/cosmos-sdk/types"

	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// unjailEvery is how often (in blocks) the worker checks whether it is jailed.
const unjailEvery = 10

// unjailAction asks the chain to lift the provider's jail once its term is over: the
// scheduler skips a jailed provider's nodes until then. A slash may have left the bond
// below what the node's GPUs require, which the chain checks at unjail: the bond is
// topped back up to the configured amount first.
func (a *Agent) unjailAction(ctx context.Context, height int64, blockTime time.Time) (action, bool) {
	if height%unjailEvery != 0 {
		return action{}, false
	}
	op := a.o.Chain.Address().String()
	c, err := a.coll.Collateral(ctx, &sstypes.QueryCollateralRequest{Provider: op})
	if err != nil || !c.Collateral.Jailed || blockTime.Before(c.Collateral.JailedUntil) {
		return action{}, false
	}
	var batch []sdk.Msg
	target := a.cfg.Bond.BondAmount()
	if c.Required.GT(target) {
		target = c.Required
	}
	if short := target.Sub(c.Collateral.Bonded); short.IsPositive() {
		params, err := a.coll.Params(ctx, &sstypes.QueryParamsRequest{})
		if err != nil {
			return action{}, false
		}
		batch = append(batch, &sstypes.MsgBond{Provider: op, Amount: sdk.NewCoin(params.Params.CollateralDenom, short)})
	}
	batch = append(batch, &sstypes.MsgUnjail{Provider: op})
	return action{what: "unjail", msgs: batch, after: func(err error) {
		if err == nil {
			a.log.Info("unjailed: the node is schedulable again", "jailed_until", c.Collateral.JailedUntil, "slashed_total", c.Collateral.SlashedTotal)
		}
	}}, true
}
