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
	legacy.RegisterAminoMsg(cdc, &MsgUpdateParams{}, "flops/x/market/MsgUpdateParams")
	legacy.RegisterAminoMsg(cdc, &MsgSubmitJob{}, "flops/x/market/MsgSubmitJob")
	legacy.RegisterAminoMsg(cdc, &MsgCancelJob{}, "flops/x/market/MsgCancelJob")
	legacy.RegisterAminoMsg(cdc, &MsgPlaceBid{}, "flops/x/market/MsgPlaceBid")
	legacy.RegisterAminoMsg(cdc, &MsgWithdrawBid{}, "flops/x/market/MsgWithdrawBid")
	legacy.RegisterAminoMsg(cdc, &MsgAckTask{}, "flops/x/market/MsgAckTask")
	legacy.RegisterAminoMsg(cdc, &MsgHeartbeat{}, "flops/x/market/MsgHeartbeat")
	legacy.RegisterAminoMsg(cdc, &MsgCheckpoint{}, "flops/x/market/MsgCheckpoint")
	legacy.RegisterAminoMsg(cdc, &MsgCommitResult{}, "flops/x/market/MsgCommitResult")
	legacy.RegisterAminoMsg(cdc, &MsgRevealResult{}, "flops/x/market/MsgRevealResult")
	cdc.RegisterConcrete(&Params{}, "flops/x/market/Params", nil)
}

// RegisterInterfaces registers the module's Msgs with the interface registry.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil),
		&MsgUpdateParams{}, &MsgSubmitJob{}, &MsgCancelJob{}, &MsgPlaceBid{}, &MsgWithdrawBid{},
		&MsgAckTask{}, &MsgHeartbeat{}, &MsgCheckpoint{}, &MsgCommitResult{}, &MsgRevealResult{},
	)
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}
