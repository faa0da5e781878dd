package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/epochref"
	"github.com/flopsnet/flops/x/gfl/types"
)

type msgServer struct{ Keeper }

var _ types.MsgServer = msgServer{}

// NewMsgServerImpl returns the module's Msg service. Each handler decodes the signer once
// (a malformed address is ErrInvalidAddress) and calls one keeper method, which checks that
// the signer may act and emits the events.
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
	op, err := m.operatorAddr("operator", msg.Operator)
	if err != nil {
		return nil, err
	}
	n, err := m.Keeper.RegisterNode(ctx, op, msg.Spec)
	if err != nil {
		return nil, err
	}
	return &types.MsgRegisterNodeResponse{NodeId: n.Id, GpuClass: n.GpuClass, Status: n.Status}, nil
}

// UpdateNode replaces a node's spec.
func (m msgServer) UpdateNode(ctx context.Context, msg *types.MsgUpdateNode) (*types.MsgUpdateNodeResponse, error) {
	op, err := m.operatorAddr("operator", msg.Operator)
	if err != nil {
		return nil, err
	}
	n, err := m.Keeper.UpdateNode(ctx, op, msg.NodeId, msg.Spec)
	if err != nil {
		return nil, err
	}
	return &types.MsgUpdateNodeResponse{GpuClass: n.GpuClass}, nil
}

// DeactivateNode takes a node off the market.
func (m msgServer) DeactivateNode(ctx context.Context, msg *types.MsgDeactivateNode) (*types.MsgDeactivateNodeResponse, error) {
	op, err := m.operatorAddr("operator", msg.Operator)
	if err != nil {
		return nil, err
	}
	status, err := m.Keeper.DeactivateNode(ctx, op, msg.NodeId, msg.Drain)
	if err != nil {
		return nil, err
	}
	return &types.MsgDeactivateNodeResponse{Status: status}, nil
}

// ReactivateNode puts an inactive node back.
func (m msgServer) ReactivateNode(ctx context.Context, msg *types.MsgReactivateNode) (*types.MsgReactivateNodeResponse, error) {
	op, err := m.operatorAddr("operator", msg.Operator)
	if err != nil {
		return nil, err
	}
	status, err := m.Keeper.ReactivateNode(ctx, op, msg.NodeId)
	if err != nil {
		return nil, err
	}
	return &types.MsgReactivateNodeResponse{Status: status}, nil
}

// ApproveNode admits a pending node.
func (m msgServer) ApproveNode(ctx context.Context, msg *types.MsgApproveNode) (*types.MsgApproveNodeResponse, error) {
	if msg.Authority != m.authority {
		return nil, errorsmod.Wrapf(types.ErrInvalidAuthority, "expected %s, got %s", m.authority, msg.Authority)
	}
	if err := m.Keeper.ApproveNode(ctx, msg.NodeId); err != nil {
		return nil, err
	}
	return &types.MsgApproveNodeResponse{}, nil
}

// CommitChallenge commits a PoCP answer.
func (m msgServer) CommitChallenge(ctx context.Context, msg *types.MsgCommitChallenge) (*types.MsgCommitChallengeResponse, error) {
	op, err := m.operatorAddr("operator", msg.Operator)
	if err != nil {
		return nil, err
	}
	sample, deadline, err := m.Keeper.CommitChallenge(ctx, op, msg.ChallengeId, msg.Root)
	if err != nil {
		return nil, err
	}
	return &types.MsgCommitChallengeResponse{SampleHeight: sample, RevealDeadlineHeight: deadline}, nil
}

// RevealChallenge opens a committed PoCP answer.
func (m msgServer) RevealChallenge(ctx context.Context, msg *types.MsgRevealChallenge) (*types.MsgRevealChallengeResponse, error) {
	op, err := m.operatorAddr("operator", msg.Operator)
	if err != nil {
		return nil, err
	}
	power, err := m.Keeper.RevealChallenge(ctx, op, msg.ChallengeId, msg.Proofs)
	if err != nil {
		return nil, err
	}
	return &types.MsgRevealChallengeResponse{PowerGflops: power}, nil
}

// SubmitBeacon puts a verified drand round on chain.
func (m msgServer) SubmitBeacon(ctx context.Context, msg *types.MsgSubmitBeacon) (*types.MsgSubmitBeaconResponse, error) {
	submitter, err := m.operatorAddr("submitter", msg.Submitter)
	if err != nil {
		return nil, err
	}
	r, err := m.Keeper.SubmitBeacon(ctx, msg.Round, msg.Signature)
	if err != nil {
		return nil, err
	}
	who, err := m.addressString("submitter", submitter)
	if err != nil {
		return nil, err
	}
	return &types.MsgSubmitBeaconResponse{Randomness: r[:]}, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventBeaconRound{Round: msg.Round, Submitter: who})
}

// ProposerRandomness fixes the block's beacon value from its proposer's VRF proof.
func (m msgServer) ProposerRandomness(ctx context.Context, msg *types.MsgProposerRandomness) (*types.MsgProposerRandomnessResponse, error) {
	proposer, err := m.operatorAddr("proposer", msg.Proposer)
	if err != nil {
		return nil, err
	}
	v, err := m.RecordProposerRandomness(sdk.UnwrapSDKContext(ctx), proposer, msg.Height, msg.Proof)
	if err != nil {
		return nil, err
	}
	return &types.MsgProposerRandomnessResponse{Value: v}, nil
}
