package querypage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/types/query"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/internal/querypage"
)

func TestDefaultGivesAPageWithoutACount(t *testing.T) {
	for name, c := range map[string]struct {
		in, want *query.PageRequest
	}{
		// a bare REST GET: the SDK would have taken 100 and counted the whole list
		"no pagination": {nil, &query.PageRequest{Limit: 100}},
		"limit 0":       {&query.PageRequest{}, &query.PageRequest{Limit: 100}},
		// what else the client asked is kept: the count only when asked for
		"limit 0, counted, from a key, reverse": {
			&query.PageRequest{Key: []byte{1, 2}, CountTotal: true, Reverse: true},
			&query.PageRequest{Key: []byte{1, 2}, Limit: 100, CountTotal: true, Reverse: true},
		},
		"limit 0 at an offset": {&query.PageRequest{Offset: 300}, &query.PageRequest{Offset: 300, Limit: 100}},
		"a limit":              {&query.PageRequest{Limit: 7, CountTotal: true}, &query.PageRequest{Limit: 7, CountTotal: true}},
		"a limit above 100":    {&query.PageRequest{Limit: 1000}, &query.PageRequest{Limit: 1000}},
	} {
		t.Run(name, func(t *testing.T) {
			var before *query.PageRequest
			if c.in != nil {
				copied := *c.in
				before = &copied
			}
			req := &banktypes.QueryAllBalancesRequest{Address: "a", Pagination: c.in}
			querypage.Default(req)
			require.Equal(t, c.want, req.Pagination)
			require.Equal(t, "a", req.Address)
			require.Equal(t, before, c.in, "the decoded page is replaced, not changed in place")
		})
	}
	// requests without a pagination field, and nothing at all, are left alone
	params := &banktypes.QueryParamsRequest{}
	querypage.Default(params)
	require.Equal(t, &banktypes.QueryParamsRequest{}, params)
	querypage.Default(nil)
	querypage.Default((*banktypes.QueryAllBalancesRequest)(nil))
}

// fakeServer records the service registered with it.
type fakeServer struct{ desc *grpc.ServiceDesc }

func (f *fakeServer) RegisterService(sd *grpc.ServiceDesc, _ any) { f.desc = sd }

func TestRegistrarDefaultsEveryMethodsRequest(t *testing.T) {
	var seen []*query.PageRequest
	handler := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := &banktypes.QueryAllBalancesRequest{}
		if err := dec(req); err != nil {
			return nil, err
		}
		seen = append(seen, req.Pagination)
		return req, nil
	}
	sd := &grpc.ServiceDesc{
		ServiceName: "test.Query",
		Methods:     []grpc.MethodDesc{{MethodName: "A", Handler: handler}, {MethodName: "B", Handler: handler}},
		Metadata:    "test.proto",
	}
	var inner fakeServer
	querypage.Registrar(&inner).RegisterService(sd, nil)
	require.NotNil(t, inner.desc)
	require.Equal(t, "test.Query", inner.desc.ServiceName)
	require.Equal(t, "test.proto", inner.desc.Metadata)
	require.Len(t, inner.desc.Methods, 2)
	require.Equal(t, "A", inner.desc.Methods[0].MethodName)
	require.Equal(t, "B", inner.desc.Methods[1].MethodName)
	require.Equal(t, "A", sd.Methods[0].MethodName, "the module's own description is not changed")

	bare := func(any) error { return nil } // decodes no pagination
	limited := func(req any) error {
		req.(*banktypes.QueryAllBalancesRequest).Pagination = &query.PageRequest{Limit: 5}
		return nil
	}
	for _, m := range inner.desc.Methods {
		_, err := m.Handler(nil, context.Background(), bare, nil)
		require.NoError(t, err)
		_, err = m.Handler(nil, context.Background(), limited, nil)
		require.NoError(t, err)
	}
	require.Equal(t, []*query.PageRequest{{Limit: 100}, {Limit: 5}, {Limit: 100}, {Limit: 5}}, seen)

	// a request that does not decode is refused as before
	bad := errors.New("bad bytes")
	_, err := inner.desc.Methods[0].Handler(nil, context.Background(), func(any) error { return bad }, nil)
	require.ErrorIs(t, err, bad)
	require.Len(t, seen, 4)
}
