// Package querypage gives the list queries of flops's modules a page that a big chain's
// node answers when the request names no page limit.
//
// The SDK's pagination takes a request without a limit (no pagination at all, as a bare
// REST GET sends, or limit 0) as its default page of 100 and counts every entry of the
// list as well (count_total): on a chain that retains a million jobs that count reads the
// whole table, and the node stops it at its query gas limit (chain.DefaultQueryGasLimit),
// so `curl NODE:1317/flops/market/v1/jobs` was refused where its first page costs little.
// Registrar wraps the registrar a module registers its query service with: every method
// decodes its request, and a request whose pagination names no limit is given a page of
// DefaultLimit, counted only when the request asks for the count (count_total), as flopsd's
// list queries ask (--page-limit 100, --page-count-total). It applies wherever the node
// answers a query: gRPC, the REST gateway, ABCI queries and the hybrid handlers, which all
// call the service's method handlers with a decoder.
package querypage

import (
	"context"
	"reflect"

	gogogrpc "github.com/cosmos/gogoproto/grpc"
	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/types/query"
)

// DefaultLimit is the page a request without a limit gets: the SDK's default page.
const DefaultLimit = query.DefaultLimit

// Registrar returns a registrar that registers a service with s, its methods' requests
// given a page (Default) once decoded.
func Registrar(s gogogrpc.Server) gogogrpc.Server { return registrar{s} }

type registrar struct{ gogogrpc.Server }

func (r registrar) RegisterService(sd *grpc.ServiceDesc, ss any) {
	wrapped := *sd
	wrapped.Methods = make([]grpc.MethodDesc, len(sd.Methods))
	for i, m := range sd.Methods {
		handler := m.Handler
		wrapped.Methods[i] = grpc.MethodDesc{
			MethodName: m.MethodName,
			Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				return handler(srv, ctx, func(req any) error {
					if err := dec(req); err != nil {
						return err
					}
					Default(req)
					return nil
				}, interceptor)
			},
		}
	}
	r.Server.RegisterService(&wrapped, ss)
}

var pageRequestType = reflect.TypeFor[*query.PageRequest]()

// Default gives req, a decoded request, a page of DefaultLimit when it names no limit
// (no pagination, or limit 0), keeping what else it asked: the key or offset, reverse and
// count_total. A request with a limit, or without a pagination field, is left as it is.
func Default(req any) {
	v := reflect.ValueOf(req)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	f := v.Elem().FieldByName("Pagination")
	if !f.IsValid() || !f.CanSet() || f.Type() != pageRequestType {
		return
	}
	pg, _ := f.Interface().(*query.PageRequest)
	if pg != nil && pg.Limit != 0 {
		return
	}
	page := query.PageRequest{}
	if pg != nil {
		page = *pg
	}
	page.Limit = DefaultLimit
	f.Set(reflect.ValueOf(&page))
}
