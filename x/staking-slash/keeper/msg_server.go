package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/staking-slash/types"
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
	if err := m.SetParams(ctx, msg.Params); err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventParamsUpdated{
		Authority: msg.Authority, Params: msg.Params,
	}); err != nil {
		return nil, err
	}
	return &types.MsgUpdateParamsResponse{}, nil
}

// signer decodes the Msg's provider, the address that signed it.
func (m msgServer) signer(provider string) (sdk.AccAddress, error) {
	addr, err := m.addressCodec.StringToBytes(provider)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddress, "provider %q: %s", provider, err)
	}
	return addr, nil
}

// Bond adds collateral from the provider's account.
func (m msgServer) Bond(ctx context.Context, msg *types.MsgBond) (*types.MsgBondResponse, error) {
	provider, err := m.signer(msg.Provider)
	if err != nil {
		return nil, err
	}
	bonded, err := m.Keeper.Bond(ctx, provider, msg.Amount)
	if err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventBond{
		Provider: msg.Provider, Amount: msg.Amount.Amount, Bonded: bonded,
	}); err != nil {
		return nil, err
	}
	return &types.MsgBondResponse{Bonded: bonded}, nil
}

// Unbond starts an unbonding entry.
func (m msgServer) Unbond(ctx context.Context, msg *types.MsgUnbond) (*types.MsgUnbondResponse, error) {
	provider, err := m.signer(msg.Provider)
	if err != nil {
		return nil, err
	}
	entry, err := m.Keeper.Unbond(ctx, provider, msg.Amount)
	if err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventUnbond{
		Provider: msg.Provider, UnbondingId: entry.Id, Amount: entry.Amount, CompletionTime: entry.CompletionTime,
	}); err != nil {
		return nil, err
	}
	return &types.MsgUnbondResponse{UnbondingId: entry.Id, CompletionTime: entry.CompletionTime}, nil
}

// Unjail ends the provider's jailing.
func (m msgServer) Unjail(ctx context.Context, msg *types.MsgUnjail) (*types.MsgUnjailResponse, error) {
	provider, err := m.signer(msg.Provider)
	if err != nil {
		return nil, err
	}
	if err := m.Keeper.Unjail(ctx, provider); err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventUnjail{Provider: msg.Provider}); err != nil {
		return nil, err
	}
	return &types.MsgUnjailResponse{}, nil
}
