package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/flopsnet/flops/testutil/network"
)

// checkGRPCReflectionV1: the node serves gRPC reflection v1 (grpcurl's and current tools'
// protocol): it lists the flops services, and the descriptors it returns for them are
// complete (a job spec's fields, not a placeholder).
func checkGRPCReflectionV1(t *testing.T, val *network.Validator) {
	t.Helper()
	t.Run("GRPCReflectionV1", func(t *testing.T) {
		conn, err := grpc.NewClient(val.AppConfig.GRPC.Address, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer func() { _ = conn.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := reflectionv1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		require.NoError(t, err)
		ask := func(req *reflectionv1.ServerReflectionRequest) *reflectionv1.ServerReflectionResponse {
			require.NoError(t, stream.Send(req))
			res, err := stream.Recv()
			require.NoError(t, err)
			require.Nil(t, res.GetErrorResponse(), "%v", res.GetErrorResponse())
			return res
		}

		res := ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}})
		var services []string
		for _, s := range res.GetListServicesResponse().GetService() {
			services = append(services, s.GetName())
		}
		for _, want := range []string{"flops.market.v1.Query", "grpc.reflection.v1.ServerReflection", "flops.gfl.v1.Query", "flops.dps.v1.Query",
			"flops.reputation.v1.Query", "flops.stakingslash.v1.Query", "cosmos.bank.v1beta1.Query"} {
			require.Truef(t, slices.Contains(services, want), "%s not listed: %v", want, services)
		}

		res = ask(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_FileContainingSymbol{
			FileContainingSymbol: "flops.market.v1.JobSpec"}})
		files := res.GetFileDescriptorResponse().GetFileDescriptorProto()
		require.NotEmpty(t, files)
		var fd descriptorpb.FileDescriptorProto
		require.NoError(t, proto.Unmarshal(files[0], &fd))
		require.Equal(t, "flops/market/v1/types.proto", fd.GetName())
		var fields []string
		for _, m := range fd.GetMessageType() {
			if m.GetName() == "JobSpec" {
				for _, f := range m.GetField() {
					fields = append(fields, f.GetName())
				}
			}
		}
		require.Contains(t, fields, "max_price_per_task")
		require.Contains(t, fields, "verification_budget")
	})
}
