package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/gfl/types"
)

type msgServer struct{ Keeper }

var _ types.MsgServer = msgServer{}

// NewMsgServerImpl returns the module's Msg service. Each handler calls one keeper method;
// the keeper checks the signer and emits the events.
func NewMsgServerImpl(k Keeper) types.MsgServer { return msgServer{Keeper: k} }

// UpdateParams checks the authority, validates and stores the new params.
func (m msgServer) UpdateParams(ctx context.Context, msg *types.MsgUpdateParams) (*types.MsgUpdateParamsResponse, error) {
	if msg.Authority != m.authority {
		return nil, errorsmod.Wrapf(types.ErrInvalidAuthority, "expected %s, got %s", m.authority, msg.Authority)
	}
	if err := msg.Params.Validate(); err != nil {
		return nil, err
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

// RegisterNode registers a node.
func (m msgServer) RegisterNode(ctx context.Context, msg *types.MsgRegisterNode) (*types.MsgRegisterNodeResponse, error) {
	n, err := m.Keeper.RegisterNode(ctx, msg.Operator, msg.Spec)
	if err != nil {
		return nil, err
	}
	return &types.MsgRegisterNodeResponse{NodeId: n.Id, GpuClass: n.GpuClass, Status: n.Status}, nil
}

// UpdateNode replaces a node's spec.
func (m msgServer) UpdateNode(ctx context.Context, msg *types.MsgUpdateNode) (*types.MsgUpdateNodeResponse, error) {
	n, err := m.Keeper.UpdateNode(ctx, msg.Operator, msg.NodeId, msg.Spec)
	if err != nil {
		return nil, err
	}
	return &types.MsgUpdateNodeResponse{GpuClass: n.GpuClass}, nil
}

// DeactivateNode takes a node off the market.
func (m msgServer) DeactivateNode(ctx context.Context, msg *types.MsgDeactivateNode) (*types.MsgDeactivateNodeResponse, error) {
	if err := m.Keeper.DeactivateNode(ctx, msg.Operator, msg.NodeId); err != nil {
		return nil, err
	}
	return &types.MsgDeactivateNodeResponse{}, nil
}

// ReactivateNode puts an inactive node back.
func (m msgServer) ReactivateNode(ctx context.Context, msg *types.MsgReactivateNode) (*types.MsgReactivateNodeResponse, error) {
	status, err := m.Keeper.ReactivateNode(ctx, msg.Operator, msg.NodeId)
	if err != nil {
		return nil, err
	}
	return &types.MsgReactivateNodeResponse{Status: status}, nil
}

// ApproveNode admits a pending node.
func (m msgServer) ApproveNode(ctx context.Context, msg *types.MsgApproveNode) (*types.MsgApproveNodeResponse, error) {
	if err := m.Keeper.ApproveNode(ctx, msg.Authority, msg.NodeId); err != nil {
		return nil, err
	}
	return &types.MsgApproveNodeResponse{}, nil
}

// CommitChallenge commits a PoCP answer.
func (m msgServer) CommitChallenge(ctx context.Context, msg *types.MsgCommitChallenge) (*types.MsgCommitChallengeResponse, error) {
	sample, deadline, err := m.Keeper.CommitChallenge(ctx, msg.Operator, msg.ChallengeId, msg.Root)
	if err != nil {
		return nil, err
	}
	return &types.MsgCommitChallengeResponse{SampleHeight: sample, RevealDeadlineHeight: deadline}, nil
}

// RevealChallenge opens a committed PoCP answer.
func (m msgServer) RevealChallenge(ctx context.Context, msg *types.MsgRevealChallenge) (*types.MsgRevealChallengeResponse, error) {
	power, err := m.Keeper.RevealChallenge(ctx, msg.Operator, msg.ChallengeId, msg.Proofs)
	if err != nil {
		return nil, err
	}
	return &types.MsgRevealChallengeResponse{PowerGflops: power}, nil
}
