package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/epochref"
	"github.com/flopsnet/flops/x/dps/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

type msgServer struct{ Keeper }

var _ types.MsgServer = msgServer{}

// NewMsgServerImpl returns the module's Msg service.
func NewMsgServerImpl(k Keeper) types.MsgServer { return msgServer{Keeper: k} }

// UpdateParams checks the authority, validates and stores the new params.
func (m msgServer) UpdateParams(ctx context.Context, msg *types.MsgUpdateParams) (*types.MsgUpdateParamsResponse, error) {
	if msg.Authority != m.authority {
		return nil, errorsmod.Wrapf(types.ErrInvalidAuthority, "expected %s, got %s", m.authority, msg.Authority)
	}
	if err := msg.Params.Validate(); err != nil {
		return nil, err
	}
	if err := epochref.Check(ctx, m.epochs, msg.Params.EpochIdentifier, types.ErrInvalidParams); err != nil {
		return nil, err
	}
	if m.market != nil {
		take, err := m.market.TakeRatePpm(ctx)
		if err != nil {
			return nil, err
		}
		if err := markettypes.WashLoopLoses(take, msg.Params.WorkRewardCapPpm); err != nil {
			return nil, errorsmod.Wrapf(types.ErrInvalidParams, "work_reward_cap_ppm: %s; raise the take first (in one proposal, x/market's update before x/dps's)", err)
		}
	}
	if err := m.Params.Set(ctx, msg.Params); err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventParamsUpdated{
		Authority: msg.Authority, Params: msg.Params,
	}); err != nil {
		return nil, err
	}
	return &types.MsgUpdateParamsResponse{}, nil
}
