// Package encoding builds what a client of the flops chain needs to build, sign and
// decode its transactions (flops-worker, the CLI, load tools, the demo): the interface
// registry, the proto codec, the legacy amino codec and the TxConfig, with every module
// of the app registered, without constructing the app. It imports only the modules'
// types packages, never a keeper. The app takes its own codecs from here, so the two
// cannot drift apart (app/encoding_test.go checks it against the module manager).
package encoding

import (
	"github.com/cosmos/gogoproto/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	// The protoreflect cosmos/consensus/v1 files, which the app links through its
	// consensus module: without them the merge pairs x/consensus's gogoproto tx.proto
	// (which names tendermint.types.AuthorityParams) with cosmossdk.io/api's older
	// tendermint/types/params.proto (which lacks it) and fails in binaries that link
	// only this package, such as flops-worker.
	_ "cosmossdk.io/api/cosmos/consensus/v1"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/std"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	bankv1 "github.com/cosmos/cosmos-sdk/x/bank/migrations/v1"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	consensustypes "github.com/cosmos/cosmos-sdk/x/consensus/types"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	"github.com/cosmos/cosmos-sdk/x/feegrant"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	govv1beta1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1beta1"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
	"github.com/cosmos/cosmos-sdk/x/tx/signing"
	upgradetypes "github.com/cosmos/cosmos-sdk/x/upgrade/types"

	ibctransfertypes "github.com/cosmos/ibc-go/v11/modules/apps/transfer/types"
	ibcclienttypes "github.com/cosmos/ibc-go/v11/modules/core/02-client/types"
	ibccoretypes "github.com/cosmos/ibc-go/v11/modules/core/types"
	ibctm "github.com/cosmos/ibc-go/v11/modules/light-clients/07-tendermint"

	"github.com/flopsnet/flops/internal/chain"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Config is the chain's encoding.
type Config struct {
	InterfaceRegistry types.InterfaceRegistry
	Codec             codec.Codec
	TxConfig          client.TxConfig
	Amino             *codec.LegacyAmino
}

// Make registers every module's interfaces and amino names and returns the encoding.
func Make() (Config, error) {
	files, err := ProtoFiles()
	if err != nil {
		return Config{}, err
	}
	reg, err := types.NewInterfaceRegistryWithOptions(types.InterfaceRegistryOptions{
		ProtoFiles: files,
		SigningOptions: signing.Options{
			AddressCodec:          address.Bech32Codec{Bech32Prefix: chain.Bech32Prefix},
			ValidatorAddressCodec: address.Bech32Codec{Bech32Prefix: chain.Bech32Prefix + sdk.PrefixValidator + sdk.PrefixOperator},
		},
	})
	if err != nil {
		return Config{}, err
	}
	amino := codec.NewLegacyAmino()
	Register(reg, amino)
	cdc := codec.NewProtoCodec(reg)
	return Config{InterfaceRegistry: reg, Codec: cdc, TxConfig: authtx.NewTxConfig(cdc, authtx.DefaultSignModes), Amino: amino}, nil
}

// ProtoFiles is every proto file the binary links, gogoproto's and protoreflect's,
// rebuilt into one registry in which every reference is resolved. The signing context
// must be given these: gogoproto registers each file's descriptor at init, file by file
// in name order, so in its own registry a field of tx.proto whose message lives in
// types.proto holds a placeholder with no fields, and the amino-JSON sign bytes of every
// Msg with a nested message held `{}` in its place (a relay could rewrite a signed job;
// app/amino_sign_test.go). Where a file is registered both ways the protoreflect one
// wins, as in the SDK's merge.
func ProtoFiles() (*protoregistry.Files, error) {
	return proto.MergedRegistry()
}

// MustMake is Make for wiring code (the app, commands), which cannot go on without it.
func MustMake() Config {
	c, err := Make()
	if err != nil {
		panic(err)
	}
	return c
}

// Register adds the interfaces and amino names of every module of the app: the SDK's std
// types, the SDK modules the app runs, IBC core, ICS-20 and 07-tendermint, and flops'.
func Register(reg types.InterfaceRegistry, amino *codec.LegacyAmino) {
	std.RegisterInterfaces(reg)
	std.RegisterLegacyAminoCodec(amino)
	for _, m := range []struct {
		interfaces func(types.InterfaceRegistry)
		amino      func(*codec.LegacyAmino)
	}{
		{authtypes.RegisterInterfaces, authtypes.RegisterLegacyAminoCodec},
		{banktypes.RegisterInterfaces, banktypes.RegisterLegacyAminoCodec},
		{bankv1.RegisterInterfaces, nil}, // legacy SupplyI, as x/bank's module registers it
		{stakingtypes.RegisterInterfaces, stakingtypes.RegisterLegacyAminoCodec},
		{distrtypes.RegisterInterfaces, distrtypes.RegisterLegacyAminoCodec},
		{slashingtypes.RegisterInterfaces, slashingtypes.RegisterLegacyAminoCodec},
		{govv1beta1.RegisterInterfaces, govv1beta1.RegisterLegacyAminoCodec},
		{govv1.RegisterInterfaces, govv1.RegisterLegacyAminoCodec},
		{consensustypes.RegisterInterfaces, consensustypes.RegisterLegacyAminoCodec},
		{upgradetypes.RegisterInterfaces, upgradetypes.RegisterLegacyAminoCodec},
		{authz.RegisterInterfaces, authz.RegisterLegacyAminoCodec},
		{feegrant.RegisterInterfaces, feegrant.RegisterLegacyAminoCodec},
		{ibccoretypes.RegisterInterfaces, ibcclienttypes.RegisterLegacyAminoCodec},
		{ibctransfertypes.RegisterInterfaces, ibctransfertypes.RegisterLegacyAminoCodec},
		{ibctm.RegisterInterfaces, nil},
		{stakingslashtypes.RegisterInterfaces, stakingslashtypes.RegisterLegacyAminoCodec},
		{gfltypes.RegisterInterfaces, gfltypes.RegisterLegacyAminoCodec},
		{reputationtypes.RegisterInterfaces, reputationtypes.RegisterLegacyAminoCodec},
		{markettypes.RegisterInterfaces, markettypes.RegisterLegacyAminoCodec},
		{dpstypes.RegisterInterfaces, dpstypes.RegisterLegacyAminoCodec},
	} {
		m.interfaces(reg)
		if m.amino != nil {
			m.amino(amino)
		}
	}
}
