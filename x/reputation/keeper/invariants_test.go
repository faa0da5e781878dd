package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/flopsnet/flops/x/reputation/types"
)

// Each invariant holds on a normal state and catches the corruption it guards against.
func TestInvariantsCatchCorruption(t *testing.T) {
	setup := func(t *testing.T) *fixture {
		f := newFixture(t)
		f.addNode(1, "alice")
		f.addNode(2, "alice")
		f.addNode(3, "bob")
		require.NoError(t, f.k.MarketHooks().AfterTaskVerified(f.ctx, 1, true))
		f.scoreAll()
		require.NoError(t, f.k.MarketHooks().AfterTaskAcked(f.ctx, 2, true))
		f.requireInvariants()
		return f
	}
	cases := []struct {
		name    string
		route   string
		corrupt func(f *fixture)
	}{
		{"aggregate sum off", "operators", func(f *fixture) {
			agg, err := f.k.Operators.Get(f.ctx, accAddr("alice"))
			require.NoError(f.t, err)
			agg.ScoreSum = agg.ScoreSum.Add(dec("0.000000000000000001"))
			require.NoError(f.t, f.k.Operators.Set(f.ctx, accAddr("alice"), agg))
		}},
		{"aggregate count off", "operators", func(f *fixture) {
			agg, err := f.k.Operators.Get(f.ctx, accAddr("bob"))
			require.NoError(f.t, err)
			agg.Nodes++
			require.NoError(f.t, f.k.Operators.Set(f.ctx, accAddr("bob"), agg))
		}},
		{"aggregate missing", "operators", func(f *fixture) {
			require.NoError(f.t, f.k.Operators.Remove(f.ctx, accAddr("bob")))
		}},
		{"aggregate without nodes", "operators", func(f *fixture) {
			require.NoError(f.t, f.k.Operators.Set(f.ctx, accAddr("carol"), types.OperatorReputation{
				Operator: operator("carol"), ScoreSum: dec("0.5"), Nodes: 1,
			}))
		}},
		{"stale ranking entry", "ranking", func(f *fixture) {
			// An index entry for a score node 3 does not have, beside its real one.
			noOld := func() (types.NodeScore, error) { return types.NodeScore{}, collections.ErrNotFound }
			require.NoError(f.t, f.k.Scores.Indexes.ByRank.Reference(f.ctx, 3, types.NodeScore{NodeId: 3, Score: dec("0.9")}, noOld))
		}},
		{"counters of a finished epoch", "counters", func(f *fixture) {
			require.NoError(f.t, f.k.Counters.Set(f.ctx, collections.Join(uint64(1), uint64(3)), types.EpochCounters{NodeId: 3, Epoch: 1, Lapses: 1}))
		}},
		{"counters of an unknown node", "counters", func(f *fixture) {
			require.NoError(f.t, f.k.Counters.Set(f.ctx, collections.Join(uint64(2), uint64(9)), types.EpochCounters{NodeId: 9, Epoch: 2}))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			tc.corrupt(f)
			err := f.inv.AssertAll(f.ctx)
			require.Error(t, err)
			require.Contains(t, err.Error(), types.ModuleName+"/"+tc.route)
		})
	}
}
