package app

import (
	gogogrpc "github.com/cosmos/gogoproto/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/flopsnet/flops/app/encoding"
)

// RegisterGRPCServerWithSkipCheckHeader registers the app's query and tx services, then
// gRPC server reflection v1 (grpc.reflection.v1.ServerReflection, what grpcurl, Postman and
// current gRPC tools ask for; the SDK serves only v1alpha). Its descriptors come from the
// merged registry the app signs with, in which flops' gogoproto files are complete.
func (app *App) RegisterGRPCServerWithSkipCheckHeader(server gogogrpc.Server, skipCheckHeader bool) {
	app.BaseApp.RegisterGRPCServerWithSkipCheckHeader(server, skipCheckHeader)
	s, ok := server.(*grpc.Server)
	if !ok {
		return
	}
	files, err := encoding.ProtoFiles()
	if err != nil {
		app.Logger().Error("gRPC reflection v1 not served", "err", err)
		return
	}
	reflectionv1.RegisterServerReflectionServer(s, reflection.NewServerV1(reflection.ServerOptions{
		Services:           s,
		DescriptorResolver: files,
	}))
}
