package types

import (
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/legacy"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/msgservice"
)

// RegisterLegacyAminoCodec registers the module's Msgs for amino JSON signing (Ledger).
func RegisterLegacyAminoCodec(cdc *codec.LegacyAmino) {
	legacy.RegisterAminoMsg(cdc, &MsgUpdateParams{}, "flops/x/gfl/MsgUpdateParams")
	legacy.RegisterAminoMsg(cdc, &MsgRegisterNode{}, "flops/x/gfl/MsgRegisterNode")
	legacy.RegisterAminoMsg(cdc, &MsgUpdateNode{}, "flops/x/gfl/MsgUpdateNode")
	legacy.RegisterAminoMsg(cdc, &MsgDeactivateNode{}, "flops/x/gfl/MsgDeactivateNode")
	legacy.RegisterAminoMsg(cdc, &MsgReactivateNode{}, "flops/x/gfl/MsgReactivateNode")
	legacy.RegisterAminoMsg(cdc, &MsgApproveNode{}, "flops/x/gfl/MsgApproveNode")
	legacy.RegisterAminoMsg(cdc, &MsgCommitChallenge{}, "flops/x/gfl/MsgCommitChallenge")
	legacy.RegisterAminoMsg(cdc, &MsgRevealChallenge{}, "flops/x/gfl/MsgRevealChallenge")
	legacy.RegisterAminoMsg(cdc, &MsgSubmitBeacon{}, "flops/x/gfl/MsgSubmitBeacon")
	legacy.RegisterAminoMsg(cdc, &MsgProposerRandomness{}, "flops/x/gfl/MsgProposerRandomness")
	cdc.RegisterConcrete(&Params{}, "flops/x/gfl/Params", nil)
}

// RegisterInterfaces registers the module's Msgs with the interface registry.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil),
		&MsgUpdateParams{},
		&MsgRegisterNode{},
		&MsgUpdateNode{},
		&MsgDeactivateNode{},
		&MsgReactivateNode{},
		&MsgApproveNode{},
		&MsgCommitChallenge{},
		&MsgRevealChallenge{},
		&MsgSubmitBeacon{},
		&MsgProposerRandomness{},
	)
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}
