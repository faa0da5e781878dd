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
	legacy.RegisterAminoMsg(cdc, &MsgReportFailure{}, "flops/x/market/MsgReportFailure")
	legacy.RegisterAminoMsg(cdc, &MsgReleaseTask{}, "flops/x/market/MsgReleaseTask")
	legacy.RegisterAminoMsg(cdc, &MsgChallenge{}, "flops/x/market/MsgChallenge")
	legacy.RegisterAminoMsg(cdc, &MsgCreatePool{}, "flops/x/market/MsgCreatePool")
	legacy.RegisterAminoMsg(cdc, &MsgJoinPool{}, "flops/x/market/MsgJoinPool")
	legacy.RegisterAminoMsg(cdc, &MsgLeavePool{}, "flops/x/market/MsgLeavePool")
	legacy.RegisterAminoMsg(cdc, &MsgSubmitUnits{}, "flops/x/market/MsgSubmitUnits")
	legacy.RegisterAminoMsg(cdc, &MsgCommitUnit{}, "flops/x/market/MsgCommitUnit")
	legacy.RegisterAminoMsg(cdc, &MsgRevealUnit{}, "flops/x/market/MsgRevealUnit")
	legacy.RegisterAminoMsg(cdc, &MsgWithdrawPoolEarnings{}, "flops/x/market/MsgWithdrawPoolEarnings")
	legacy.RegisterAminoMsg(cdc, &MsgClosePool{}, "flops/x/market/MsgClosePool")
	cdc.RegisterConcrete(&Params{}, "flops/x/market/Params", nil)
}

// RegisterInterfaces registers the module's Msgs with the interface registry.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil),
		&MsgUpdateParams{}, &MsgSubmitJob{}, &MsgCancelJob{}, &MsgPlaceBid{}, &MsgWithdrawBid{},
		&MsgAckTask{}, &MsgHeartbeat{}, &MsgCheckpoint{}, &MsgCommitResult{}, &MsgRevealResult{},
		&MsgChallenge{}, &MsgCreatePool{}, &MsgJoinPool{}, &MsgLeavePool{}, &MsgSubmitUnits{},
		&MsgCommitUnit{}, &MsgRevealUnit{}, &MsgWithdrawPoolEarnings{}, &MsgClosePool{},
		&MsgReportFailure{}, &MsgReleaseTask{},
	)
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}
