package app_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

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
