package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/staking-slash/types"
)

// The Collateral query returns the record with its unbonding sum, requirement and cap; a
// provider that never bonded gets zeros.
func TestQueryCollateral(t *testing.T) {
	f := newFixture(t)
	prov := addr("provider")
	f.bond(prov, 10_000)
	f.unbond(prov, 1_000)
	f.unbond(prov, 500)
	require.NoError(t, f.k.LockForNode(f.ctx, prov, 4))
	require.NoError(t, f.k.AddExposure(f.ctx, prov, ints(300)))

	res, err := f.qs.Collateral(f.ctx, &types.QueryCollateralRequest{Provider: prov.String()})
	require.NoError(t, err)
	require.Equal(t, prov.String(), res.Collateral.Provider)
	require.Equal(t, int64(8_500), res.Collateral.Bonded.Int64())
	require.Equal(t, int64(300), res.Collateral.Exposure.Int64())
	require.Equal(t, int64(1_500), res.Unbonding.Int64())
	require.Equal(t, int64(4_000), res.Required.Int64())
	require.Equal(t, int64(17_000), res.ExposureCap.Int64())

	stranger := addr("stranger")
	res, err = f.qs.Collateral(f.ctx, &types.QueryCollateralRequest{Provider: stranger.String()})
	require.NoError(t, err)
	require.Equal(t, stranger.String(), res.Collateral.Provider)
	require.True(t, res.Collateral.Bonded.IsZero())
	require.True(t, res.Unbonding.IsZero())
	require.True(t, res.Required.IsZero())
	require.True(t, res.ExposureCap.IsZero())
}

// Bad requests get InvalidArgument.
func TestQueryBadRequests(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		call func() error
	}{
		// a nil request
		{"nil collateral request", func() error { _, err := f.qs.Collateral(f.ctx, nil); return err }},
		{"nil unbondings request", func() error { _, err := f.qs.Unbondings(f.ctx, nil); return err }},
		{"nil slash history request", func() error { _, err := f.qs.SlashHistory(f.ctx, nil); return err }},
		// a malformed address
		{"bad collateral address", func() error {
			_, err := f.qs.Collateral(f.ctx, &types.QueryCollateralRequest{Provider: "flops1bad"})
			return err
		}},
		// an empty address would list nothing useful
		{"empty unbondings address", func() error {
			_, err := f.qs.Unbondings(f.ctx, &types.QueryUnbondingsRequest{})
			return err
		}},
		{"bad slash history address", func() error {
			_, err := f.qs.SlashHistory(f.ctx, &types.QuerySlashHistoryRequest{Provider: "x"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, codes.InvalidArgument, status.Code(tc.call()))
		})
	}
}

// Unbondings and SlashHistory page through one provider's records only, by key and by
// offset, with totals.
func TestQueryPagination(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.MaxUnbondingEntries = 10 })
	prov, other := addr("provider"), addr("other")
	f.bond(prov, 100_000)
	f.bond(other, 100_000)
	var wantUnbondings, wantSlashes []uint64
	for i := range 5 {
		f.unbond(other, 1) // interleaved records of another provider must not show up
		wantUnbondings = append(wantUnbondings, f.unbond(prov, int64(10+i)).UnbondingId)
		_, err := f.k.Slash(f.ctx, other, 1_000, types.SLASH_REASON_WRONG_RESULT, types.Beneficiaries{}, types.SlashEvidence{})
		require.NoError(t, err)
		rec, err := f.k.Slash(f.ctx, prov, 1_000, types.SLASH_REASON_WRONG_RESULT, types.Beneficiaries{}, types.SlashEvidence{TaskId: uint64(i)})
		require.NoError(t, err)
		wantSlashes = append(wantSlashes, rec.Id)
	}

	unbondings := func(page *query.PageRequest) ([]uint64, *query.PageResponse) {
		res, err := f.qs.Unbondings(f.ctx, &types.QueryUnbondingsRequest{Provider: prov.String(), Pagination: page})
		require.NoError(t, err)
		var ids []uint64
		for _, e := range res.Unbondings {
			require.Equal(t, prov.String(), e.Provider)
			ids = append(ids, e.Id)
		}
		return ids, res.Pagination
	}
	slashes := func(page *query.PageRequest) ([]uint64, *query.PageResponse) {
		res, err := f.qs.SlashHistory(f.ctx, &types.QuerySlashHistoryRequest{Provider: prov.String(), Pagination: page})
		require.NoError(t, err)
		var ids []uint64
		for _, s := range res.Slashes {
			require.Equal(t, prov.String(), s.Provider)
			ids = append(ids, s.Id)
		}
		return ids, res.Pagination
	}

	for _, list := range []struct {
		name string
		get  func(*query.PageRequest) ([]uint64, *query.PageResponse)
		want []uint64
	}{
		{"unbondings", unbondings, wantUnbondings},
		{"slash history", slashes, wantSlashes},
	} {
		t.Run(list.name, func(t *testing.T) {
			// no pagination: every record of the provider, oldest first
			all, _ := list.get(nil)
			require.Equal(t, list.want, all)

			// by key, two at a time: 2 + 2 + 1, then no next key
			var got []uint64
			page := &query.PageRequest{Limit: 2, CountTotal: true}
			for i := 0; ; i++ {
				ids, res := list.get(page)
				got = append(got, ids...)
				if i == 0 {
					require.Equal(t, uint64(5), res.Total)
				}
				if res.NextKey == nil {
					break
				}
				require.Len(t, ids, 2)
				page = &query.PageRequest{Key: res.NextKey, Limit: 2}
			}
			require.Equal(t, list.want, got)

			// by offset
			ids, _ := list.get(&query.PageRequest{Offset: 3, Limit: 10})
			require.Equal(t, list.want[3:], ids)

			// reversed
			ids, _ = list.get(&query.PageRequest{Limit: 2, Reverse: true})
			require.Equal(t, []uint64{list.want[4], list.want[3]}, ids)
		})
	}
}
