package keeper

import (
	"context"
	"errors"
	"fmt"

	"cosmossdk.io/collections"
	collcodec "cosmossdk.io/collections/codec"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// The scheduler queue's counts (the Queue query; the dashboard's pending tasks). Walking
// the groups reads one record per group with a task waiting: a flood of some 600,000
// jobs no node can take passes the query gas limit, just when someone wants to see it.
// The counts are kept in one record instead (QueueCounts, store version 15), and every
// change to the queue moves them:
//
//   - a change adds its move to the pending moves (QueueMoves), one record that the
//     block's changes rewrite in the block's cache: the committed state sees its last
//     value once a block at most, and the market's EndBlocker, at its end, adds it to the
//     counts and deletes it, so a block of submissions leaves no key of it. A move is
//     charged as the SDK charges a transient store's read and write (399 gas), not as two
//     committed writes (about 4,000, which had put a submission at 1.66x a bank send);
//   - a change made after the EndBlocker (the SDK's simulations deliver their txs after
//     FinalizeBlock's EndBlock) stays pending into the next block: the counts are the
//     record plus the pending moves wherever they are read (the query, the queue
//     invariant, which checks them against the groups and the parking).
//
// The four counts, in order: groups with a task waiting, tasks waiting in them, those
// groups parked, tasks parked alone.
type queueCounts = collections.Quad[uint64, uint64, uint64, uint64]

// queueMoves are the pending moves of the four counts.
type queueMoves = collections.Quad[int64, int64, int64, int64]

// queueCountsCodec and queueMovesCodec encode the counts and the pending moves.
var queueCountsCodec = collcodec.KeyToValueCodec(collections.QuadKeyCodec(collections.Uint64Key, collections.Uint64Key, collections.Uint64Key, collections.Uint64Key))

var queueMovesCodec = collcodec.KeyToValueCodec(collections.QuadKeyCodec(collections.Int64Key, collections.Int64Key, collections.Int64Key, collections.Int64Key))

// queueMovesBytes is the pending moves' key and value.
const queueMovesBytes = 1 + 4*8

// moveQueueCounts adds a change of the queue to the pending moves, charging what the SDK
// charges a transient store's read and write (storetypes.TransientGasConfig: 399 gas). It
// reads and writes the record through one opening of the store without a gas meter (a
// Get and a Set of the collection would open it twice and charge a committed store's
// price): 2.5-3% of the EndBlocker's CPU in BenchmarkEndBlockAssign's profiles.
func (k Keeper) moveQueueCounts(ctx context.Context, groups, waiting, groupsParked, parked int64) error {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	gc := storetypes.TransientGasConfig()
	sdkCtx.GasMeter().ConsumeGas(gc.ReadCostFlat+gc.WriteCostFlat+gc.WriteCostPerByte*queueMovesBytes, "market: queue counts")
	store := k.storeService.OpenKVStore(sdkCtx.WithGasMeter(storetypes.NewInfiniteGasMeter()))
	key := types.QueueMovesKey.Bytes()
	bz, err := store.Get(key)
	if err != nil {
		return err
	}
	m := collections.Join4[int64, int64, int64, int64](0, 0, 0, 0)
	if bz != nil {
		if m, err = queueMovesCodec.Decode(bz); err != nil {
			return fmt.Errorf("market: queue moves: %w", err)
		}
	}
	if bz, err = queueMovesCodec.Encode(collections.Join4(m.K1()+groups, m.K2()+waiting, m.K3()+groupsParked, m.K4()+parked)); err != nil {
		return err
	}
	return store.Set(key, bz)
}

// queueCounts is the record plus the pending moves. A count the moves would take
// below zero stays at zero, is logged, and the queue invariant reports it: a miscount
// does not stop the block.
func (k Keeper) queueCounts(ctx context.Context) (types.QueryQueueResponse, error) {
	c, err := k.QueueCounts.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		c = collections.Join4[uint64, uint64, uint64, uint64](0, 0, 0, 0)
	} else if err != nil {
		return types.QueryQueueResponse{}, err
	}
	m, err := k.QueueMoves.Get(ctx)
	if errors.Is(err, collections.ErrNotFound) {
		m = collections.Join4[int64, int64, int64, int64](0, 0, 0, 0)
	} else if err != nil {
		return types.QueryQueueResponse{}, err
	}
	add := func(name string, n uint64, d int64) uint64 {
		if d < 0 && uint64(-d) > n {
			sdk.UnwrapSDKContext(ctx).Logger().Error("market: queue counts: a count would go below zero", "count", name, "was", n, "move", d)
			return 0
		}
		return uint64(int64(n) + d)
	}
	return types.QueryQueueResponse{
		Groups: add("groups", c.K1(), m.K1()), Waiting: add("waiting", c.K2(), m.K2()),
		GroupsParked: add("groups parked", c.K3(), m.K3()), Parked: add("parked", c.K4(), m.K4()),
	}, nil
}

// foldQueueCounts adds the pending moves to the record (the market's EndBlocker, at its
// end).
func (k Keeper) foldQueueCounts(ctx context.Context) error {
	has, err := k.QueueMoves.Has(ctx)
	if err != nil || !has {
		return err
	}
	c, err := k.queueCounts(ctx)
	if err != nil {
		return err
	}
	return k.setQueueCounts(ctx, c)
}

// setQueueCounts makes c the counts, with no moves pending.
func (k Keeper) setQueueCounts(ctx context.Context, c types.QueryQueueResponse) error {
	if err := k.QueueCounts.Set(ctx, collections.Join4(c.Groups, c.Waiting, c.GroupsParked, c.Parked)); err != nil {
		return err
	}
	return k.QueueMoves.Remove(ctx)
}

// countQueue counts the queue by walking it: a record per group with a task waiting and
// a key per task parked alone (the queue invariant; Migrate14to15).
func (k Keeper) countQueue(ctx context.Context) (types.QueryQueueResponse, error) {
	var c types.QueryQueueResponse
	if err := k.Groups.Walk(ctx, nil, func(_ group, v groupValue) (bool, error) {
		c.Groups++
		c.Waiting += v.K1()
		if v.K3() != 0 {
			c.GroupsParked++
		}
		return false, nil
	}); err != nil {
		return c, err
	}
	parked, err := countKeys(sdk.UnwrapSDKContext(ctx), k.AssignRetryAt)
	c.Parked = uint64(parked)
	return c, err
}

// recountQueue sets the counts to a walk of the queue, with no moves pending (InitGenesis,
// Migrate14to15).
func (k Keeper) recountQueue(ctx context.Context) error {
	c, err := k.countQueue(ctx)
	if err != nil {
		return err
	}
	return k.setQueueCounts(ctx, c)
}

// queueCountProblems compares the record plus the pending moves with a walk of the queue.
func (k Keeper) queueCountProblems(ctx context.Context) []string {
	kept, err := k.queueCounts(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	walked, err := k.countQueue(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	if kept != walked {
		return []string{fmt.Sprintf("queue counts: kept groups %d, waiting %d, groups parked %d, parked %d; walked %d, %d, %d, %d",
			kept.Groups, kept.Waiting, kept.GroupsParked, kept.Parked, walked.Groups, walked.Waiting, walked.GroupsParked, walked.Parked)}
	}
	return nil
}
