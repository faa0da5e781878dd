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
	legacy.RegisterAminoMsg(cdc, &MsgUpdateParams{}, "flops/x/stakingslash/MsgUpdateParams")
	legacy.RegisterAminoMsg(cdc, &MsgBond{}, "flops/x/stakingslash/MsgBond")
	legacy.RegisterAminoMsg(cdc, &MsgUnbond{}, "flops/x/stakingslash/MsgUnbond")
	legacy.RegisterAminoMsg(cdc, &MsgUnjail{}, "flops/x/stakingslash/MsgUnjail")
	cdc.RegisterConcrete(&Params{}, "flops/x/stakingslash/Params", nil)
}

// RegisterInterfaces registers the module's Msgs with the interface registry.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil),
		&MsgUpdateParams{},
		&MsgBond{},
		&MsgUnbond{},
		&MsgUnjail{},
	)
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}
