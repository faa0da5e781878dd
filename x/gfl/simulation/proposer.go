package simulation

import (
	"bytes"
	"context"

	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	"github.com/oasisprotocol/curve25519-voi/primitives/ed25519/extra/ecvrf"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/keeper"
	"github.com/flopsnet/flops/x/gfl/types"
)

// MsgProposerRandomnessFactory plays the adversary of a block's value: the operator of the
// proposer's validator sends the proof the validator's consensus key makes, after the
// block's value was fixed, to overwrite it, or for the next height. Both must be refused.
// (The simulator runs its operations after the block's EndBlock, where a value nobody
// revealed is sealed as withheld, so the reveal itself, which a proposer places first in
// its block, is left to the app tests and the in-process network.)
func MsgProposerRandomnessFactory(k keeper.Keeper, vk types.ValidatorKeeper) simsx.SimMsgFactoryX {
	return simsx.NewSimMsgFactoryWithDeliveryResultHandler(func(ctx context.Context, data *simsx.ChainDataSource, reporter simsx.SimulationReporter) ([]simsx.SimAccount, *types.MsgProposerRandomness, simsx.SimDeliveryResultHandler) {
		sdkCtx := sdk.UnwrapSDKContext(ctx)
		h, proposer := sdkCtx.BlockHeight(), sdkCtx.BlockHeader().ProposerAddress
		if has, err := k.BlockHashes.Has(ctx, h); err != nil || !has {
			reporter.Skip("the block's value is not fixed yet: only its proposer reveals, first in the block")
			return nil, nil, nil
		}
		v, err := vk.GetValidatorByConsAddr(ctx, sdk.ConsAddress(proposer))
		if err != nil {
			reporter.Skipf("the block's proposer: %s", err)
			return nil, nil, nil
		}
		op, err := sdk.ValAddressFromBech32(v.GetOperator())
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		var operator *simsx.SimAccount
		var key cryptotypes.PrivKey
		for i, a := range data.AllAccounts() {
			if a.Address.Equals(sdk.AccAddress(op)) {
				acc := data.AccountAt(reporter, i)
				operator = &acc
			}
			if a.ConsKey != nil && bytes.Equal(a.ConsKey.PubKey().Address(), proposer) {
				key = a.ConsKey
			}
		}
		if operator == nil || key == nil {
			reporter.Skip("the proposer's operator or key is not a simulation account")
			return nil, nil, nil
		}
		height, want := h, types.ErrRandomnessKnown
		if data.Rand().Intn(2) == 0 {
			height, want = h+1, types.ErrInvalidRandomness
		}
		alpha, err := k.ProposerVRFInput(ctx, height)
		if err != nil {
			reporter.Skip(err.Error())
			return nil, nil, nil
		}
		msg := &types.MsgProposerRandomness{Proposer: operator.AddressBech32, Height: height, Proof: ecvrf.Prove(voied25519.PrivateKey(key.Bytes()), alpha)}
		return []simsx.SimAccount{*operator}, msg, refused(want)
	})
}
