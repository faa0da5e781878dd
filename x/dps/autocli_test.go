package dps_test

import (
	"testing"

	gogoproto "github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"

	"github.com/flopsnet/flops/x/dps"
)

// Every Msg and Query RPC has a CLI entry (UpdateParams skipped: gov only), and every
// positional argument names a field of the RPC's request.
func TestAutoCLICoversEveryRPC(t *testing.T) {
	opts := dps.AppModule{}.AutoCLIOptions()
	for _, svc := range []*autocliv1.ServiceCommandDescriptor{opts.Query, opts.Tx} {
		d, err := gogoproto.HybridResolver.FindDescriptorByName(protoreflect.FullName(svc.Service))
		require.NoError(t, err, svc.Service)
		sd := d.(protoreflect.ServiceDescriptor)
		cmds := svc.RpcCommandOptions
		for i := 0; i < sd.Methods().Len(); i++ {
			m := sd.Methods().Get(i)
			var found bool
			for _, c := range cmds {
				if c.RpcMethod != string(m.Name()) {
					continue
				}
				found = true
				if c.Skip {
					require.Equal(t, "UpdateParams", c.RpcMethod, "only UpdateParams is skipped")
					continue
				}
				require.NotEmpty(t, c.Use, m.Name())
				require.NotEmpty(t, c.Short, m.Name())
				for _, arg := range c.PositionalArgs {
					require.NotNil(t, m.Input().Fields().ByName(protoreflect.Name(arg.ProtoField)),
						"%s: positional %s is not a field of %s", m.Name(), arg.ProtoField, m.Input().FullName())
				}
				if c.RpcMethod != "Params" {
					require.NotEmpty(t, c.Example, m.Name())
				}
			}
			require.True(t, found, "%s.%s has no CLI entry", svc.Service, m.Name())
		}
	}
}
