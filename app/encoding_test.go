package app_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/std"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/tx/signing"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/testutil/apptest"
)

// registered lists what a registry and an amino codec hold: every interface with its
// implementations, and every amino name, sorted.
func registered(t *testing.T, reg types.InterfaceRegistry, amino *codec.LegacyAmino) (map[string][]string, []string) {
	t.Helper()
	impls := map[string][]string{}
	for _, iface := range reg.ListAllInterfaces() {
		list := reg.ListImplementations(iface)
		slices.Sort(list)
		impls[iface] = list
	}
	var buf bytes.Buffer
	require.NoError(t, amino.Amino.PrintTypes(&buf))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	slices.Sort(lines)
	return impls, lines
}

// app/encoding registers exactly what the app's module manager registers: the same
// interfaces, the same implementations of each, the same amino names. A client built on
// it (flops-worker, the CLI) encodes and signs every Msg as the chain decodes it.
func TestEncodingMatchesTheModuleManager(t *testing.T) {
	a := apptest.New(t)
	want, err := types.NewInterfaceRegistryWithOptions(types.InterfaceRegistryOptions{
		ProtoFiles: proto.HybridResolver,
		SigningOptions: signing.Options{
			AddressCodec:          address.Bech32Codec{Bech32Prefix: sdk.GetConfig().GetBech32AccountAddrPrefix()},
			ValidatorAddressCodec: address.Bech32Codec{Bech32Prefix: sdk.GetConfig().GetBech32ValidatorAddrPrefix()},
		},
	})
	require.NoError(t, err)
	wantAmino := codec.NewLegacyAmino()
	std.RegisterInterfaces(want)
	std.RegisterLegacyAminoCodec(wantAmino)
	a.BasicModuleManager.RegisterInterfaces(want)
	a.BasicModuleManager.RegisterLegacyAminoCodec(wantAmino)
	wantImpls, wantNames := registered(t, want, wantAmino)

	enc, err := encoding.Make()
	require.NoError(t, err)
	gotImpls, gotNames := registered(t, enc.InterfaceRegistry, enc.Amino)
	require.Equal(t, wantImpls, gotImpls)
	require.Equal(t, wantNames, gotNames)
	require.Greater(t, len(gotImpls["cosmos.base.v1beta1.Msg"]), 60, "every module's Msgs")

	// and the app runs on the same registrations
	appImpls, appNames := registered(t, a.InterfaceRegistry(), a.LegacyAmino())
	require.Equal(t, wantImpls, appImpls)
	require.Equal(t, wantNames, appNames)
	_ = app.Name
}

// Every flops Msg has a generated API v2 type in the global protobuf registry (api/,
// linked by app/apitypes.go): the signing context decodes each message of every tx with
// it to find the signers, in CheckTx and FinalizeBlock. A Msg without one still works,
// decoded through dynamicpb by reflection at about three times the cost (50 µs against
// 17 for a MsgSubmitJob), so only this test sees a module whose api/ package is not
// linked. (Most of the SDK's Msgs have theirs from cosmossdk.io/api, 4 do not; none of
// ibc-go's 30 has one.)
func TestEveryFlopsMsgHasAnAPIType(t *testing.T) {
	a := apptest.New(t)
	flops := 0
	for _, url := range a.InterfaceRegistry().ListImplementations(sdk.MsgInterfaceProtoName) {
		name := protoreflect.FullName(strings.TrimPrefix(url, "/"))
		if !strings.HasPrefix(string(name), "flops.") {
			continue
		}
		flops++
		mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
		require.NoError(t, err, "%s has no API v2 type in the global registry", name)
		_, dynamic := mt.New().Interface().(*dynamicpb.Message)
		require.False(t, dynamic, "%s resolves to dynamicpb", name)
	}
	require.Positive(t, flops, "flops' Msgs are registered")
	t.Logf("%d flops Msgs checked", flops)
}
