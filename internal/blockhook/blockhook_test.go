package blockhook_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/blockhook"
	"github.com/flopsnet/flops/testutil/keepertest"
)

// store is a queue of ids, a record of what each item did, and the module's retries.
type store struct {
	queue   collections.KeySet[collections.Pair[int64, uint64]]
	done    collections.Map[uint64, uint64]
	retries blockhook.Retries
}

func newStore(t *testing.T) (sdk.Context, store) {
	env := keepertest.NewEnv(t, "bh")
	sb := collections.NewSchemaBuilder(env.StoreService)
	s := store{
		queue:   collections.NewKeySet(sb, collections.NewPrefix(1), "queue", collections.PairKeyCodec(collections.Int64Key, collections.Uint64Key)),
		done:    collections.NewMap(sb, collections.NewPrefix(2), "done", collections.Uint64Key, collections.Uint64Value),
		retries: blockhook.NewRetries(sb, "bh", collections.NewPrefix(3), collections.NewPrefix(4)),
	}
	_, err := sb.Build()
	require.NoError(t, err)
	return env.Ctx.WithEventManager(sdk.NewEventManager()), s
}

// A unit that runs out of the budget is not written and reports ErrBudgetSpent; the gas it
// used is spent; a unit that fits is written.
func TestBudgetRunsUnitsAtomically(t *testing.T) {
	ctx, s := newStore(t)
	b := blockhook.NewBudget(100_000)
	require.NoError(t, b.Run(ctx, "small", func(c sdk.Context) error { return s.done.Set(c, 1, 1) }))
	used := b.Used()
	require.Positive(t, used)
	err := b.Run(ctx, "big", func(c sdk.Context) error {
		for i := uint64(10); ; i++ {
			if err := s.done.Set(c, i, i); err != nil {
				return err
			}
		}
	})
	require.ErrorIs(t, err, blockhook.ErrItemTooBig, "it had more than half the budget: it can never fit")
	has, err := s.done.Has(ctx, 10)
	require.NoError(t, err)
	require.False(t, has, "nothing of the cut unit is written")
	require.True(t, b.Spent())
	require.ErrorIs(t, b.Run(ctx, "after", func(sdk.Context) error { return nil }), blockhook.ErrBudgetSpent)
	has, err = s.done.Has(ctx, 1)
	require.NoError(t, err)
	require.True(t, has)

	// with less than half the budget left, running out is a postponement, not a failure
	b = blockhook.NewBudget(100_000)
	require.NoError(t, b.Run(ctx, "eat", func(c sdk.Context) error {
		for i := uint64(100); b.Used()+c.GasMeter().GasConsumed() < 60_000; i++ {
			if err := s.done.Set(c, i, i); err != nil {
				return err
			}
		}
		return nil
	}))
	err = b.Run(ctx, "big", func(c sdk.Context) error {
		for i := uint64(1000); ; i++ {
			if err := s.done.Set(c, i, i); err != nil {
				return err
			}
		}
	})
	require.ErrorIs(t, err, blockhook.ErrBudgetSpent)
	require.NotErrorIs(t, err, blockhook.ErrItemTooBig)
}

// A panic is a failure like an error: nothing written.
func TestBudgetRecoversPanics(t *testing.T) {
	ctx, s := newStore(t)
	b := blockhook.NewBudget(1_000_000)
	err := b.Run(ctx, "boom", func(c sdk.Context) error {
		_ = s.done.Set(c, 7, 7)
		panic("boom")
	})
	require.ErrorContains(t, err, "panic: boom")
	has, err := s.done.Has(ctx, 7)
	require.NoError(t, err)
	require.False(t, has)
}

// The runner's life of a failing item: off its queue into the retries, due again after
// 1, 2, 4 and 8 blocks with an EventItemFailed each time, resolved by its kind's rule after
// the fifth failure (EventItemResolved), never lost and never retried forever. A
// succeeding item leaves the queue; an item cut short by the budget stays in it.
func TestRunnerRetriesThenResolves(t *testing.T) {
	ctx, s := newStore(t)
	fails := map[uint64]bool{2: true}
	resolved := map[uint64]string{}
	kind := blockhook.Kind{
		Name: "work",
		Do: func(c sdk.Context, it blockhook.Item) (bool, error) {
			if fails[it.ID] {
				return false, errors.New("broken item")
			}
			return true, s.done.Set(c, it.ID, uint64(c.BlockHeight()))
		},
		Resolve: func(c sdk.Context, it blockhook.Item) (string, error) {
			resolved[it.ID] = "refunded"
			return "refunded", s.done.Set(c, it.ID, 0)
		},
	}
	for _, id := range []uint64{1, 2, 3} {
		require.NoError(t, s.queue.Set(ctx, collections.Join(int64(1), id)))
	}
	item := func(k collections.Pair[int64, uint64]) blockhook.Item {
		return blockhook.Item{Kind: "work", ID: k.K2()}
	}
	block := func(h int64) {
		ctx = ctx.WithBlockHeight(h)
		r := blockhook.NewRunner("bh", blockhook.NewBudget(10_000_000), s.retries, kind)
		require.NoError(t, r.Retry(ctx, 100))
		rng := new(collections.Range[collections.Pair[int64, uint64]]).EndInclusive(collections.Join(h, ^uint64(0)))
		_, err := blockhook.Queue(ctx, r, "work", s.queue, rng, item, 100)
		require.NoError(t, err)
	}
	failedAt := []int64{}
	for h := int64(1); h <= 20; h++ {
		before := len(ctx.EventManager().Events())
		block(h)
		for _, e := range ctx.EventManager().Events()[before:] {
			if e.Type == "flops.blockhook.v1.EventItemFailed" {
				failedAt = append(failedAt, h)
			}
		}
	}
	require.Equal(t, []int64{1, 2, 4, 8, 16}, failedAt, "attempts after 1, 2, 4, 8 blocks")
	require.Equal(t, map[uint64]string{2: "refunded"}, resolved, "resolved after the fifth failure")
	for _, id := range []uint64{1, 3} {
		h, err := s.done.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, uint64(1), h, "item %d done in block 1", id)
	}
	n, err := s.retries.Attempt(ctx, blockhook.Item{Kind: "work", ID: 2})
	require.NoError(t, err)
	require.Zero(t, n, "forgotten once resolved")
	empty := true
	require.NoError(t, s.queue.Walk(ctx, nil, func(collections.Pair[int64, uint64]) (bool, error) { empty = false; return true, nil }))
	require.True(t, empty)
	require.NoError(t, s.retries.Due.Walk(ctx, nil, func(collections.Triple[int64, string, []byte]) (bool, error) {
		empty = false
		return true, nil
	}))
	require.True(t, empty, "nothing left due")
}

// A resolution that fails too marks the item stuck: due again every MaxBackoff blocks,
// with an EventItemStuck each time; it is never dropped.
func TestRunnerMarksUnresolvableItemsStuck(t *testing.T) {
	ctx, s := newStore(t)
	kind := blockhook.Kind{
		Name:    "work",
		Do:      func(sdk.Context, blockhook.Item) (bool, error) { return false, errors.New("broken") },
		Resolve: func(sdk.Context, blockhook.Item) (string, error) { return "", errors.New("broken too") },
	}
	require.NoError(t, s.queue.Set(ctx, collections.Join(int64(1), uint64(9))))
	item := func(k collections.Pair[int64, uint64]) blockhook.Item {
		return blockhook.Item{Kind: "work", ID: k.K2()}
	}
	stuck := 0
	for h := int64(1); h <= 100; h++ {
		ctx = ctx.WithBlockHeight(h).WithEventManager(sdk.NewEventManager())
		r := blockhook.NewRunner("bh", blockhook.NewBudget(10_000_000), s.retries, kind)
		require.NoError(t, r.Retry(ctx, 100))
		rng := new(collections.Range[collections.Pair[int64, uint64]]).EndInclusive(collections.Join(h, ^uint64(0)))
		_, err := blockhook.Queue(ctx, r, "work", s.queue, rng, item, 100)
		require.NoError(t, err)
		for _, e := range ctx.EventManager().Events() {
			if e.Type == "flops.blockhook.v1.EventItemStuck" {
				stuck++
			}
		}
	}
	require.Equal(t, 2, stuck, "at block 16 and every 64 blocks after")
	n, err := s.retries.Attempt(ctx, blockhook.Item{Kind: "work", ID: 9})
	require.NoError(t, err)
	require.Equal(t, uint32(blockhook.MaxAttempts), n, "still recorded")
}

// An item that the budget cuts short stays in its queue and runs next block, no attempt
// counted; an item in parts goes on from where it stopped.
func TestRunnerLeavesCutItemsQueued(t *testing.T) {
	ctx, s := newStore(t)
	parts := map[uint64]int{}
	kind := blockhook.Kind{
		Name: "work",
		Do: func(c sdk.Context, it blockhook.Item) (bool, error) {
			for i := 0; i < 50; i++ { // a part costs about 50 writes
				if err := s.done.Set(c, 1000*it.ID+uint64(i), 1); err != nil {
					return false, err
				}
			}
			parts[it.ID]++
			return parts[it.ID] == 3, nil
		},
		Resolve: func(sdk.Context, blockhook.Item) (string, error) { return "", nil },
	}
	for _, id := range []uint64{1, 2, 3} {
		require.NoError(t, s.queue.Set(ctx, collections.Join(int64(1), id)))
	}
	item := func(k collections.Pair[int64, uint64]) blockhook.Item {
		return blockhook.Item{Kind: "work", ID: k.K2()}
	}
	blocks := 0
	for h := int64(1); h <= 50; h++ {
		ctx = ctx.WithBlockHeight(h)
		r := blockhook.NewRunner("bh", blockhook.NewBudget(500_000), s.retries, kind)
		rng := new(collections.Range[collections.Pair[int64, uint64]]).EndInclusive(collections.Join(h, ^uint64(0)))
		_, err := blockhook.Queue(ctx, r, "work", s.queue, rng, item, 100)
		if err != nil {
			require.ErrorIs(t, err, blockhook.ErrBudgetSpent)
		}
		blocks++
		left := 0
		require.NoError(t, s.queue.Walk(ctx, nil, func(collections.Pair[int64, uint64]) (bool, error) { left++; return false, nil }))
		if left == 0 {
			break
		}
	}
	require.Equal(t, map[uint64]int{1: 3, 2: 3, 3: 3}, parts, "every part done exactly once")
	require.Greater(t, blocks, 1, "the budget spread the work over blocks")
	n, err := s.retries.Attempt(ctx, blockhook.Item{Kind: "work", ID: 1})
	require.NoError(t, err)
	require.Zero(t, n, "a cut is not a failure")
}
