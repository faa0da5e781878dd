package keeper

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"cosmossdk.io/collections"

	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/flopsnet/flops/x/market/types"
)

// activeScanPerPage bounds the reads of one page of a provider's active tasks: index
// entries, each with its task, and a node's slot and the seek to its entries. At 5,000 a
// page spends at most about 23,000,000 gas (tasks with the longest output URIs), under
// the node's query gas limit (chain.DefaultQueryGasLimit).
const activeScanPerPage = 5_000

// openUnknown: the number of a node's tasks in flight is not known (its slot is gone, or
// names another operator), so all of the node's entries are read.
const openUnknown = math.MaxUint64

// activeCursor is where a page of active tasks starts: at node (the first node at or
// after it, before it in reverse), or within it at task (the node's entries at or below
// task, newest first) with open of its tasks in flight still to find.
type activeCursor struct {
	node, task, open uint64
	within           bool
}

// The cursor's next_key: the node's id (8 bytes, big-endian, as the index encodes it),
// and within a node its task id and the count still to find (8 bytes each).
func (c activeCursor) key() []byte {
	b := binary.BigEndian.AppendUint64(nil, c.node)
	if c.within {
		b = binary.BigEndian.AppendUint64(b, c.task)
		b = binary.BigEndian.AppendUint64(b, c.open)
	}
	return b
}

func activeCursorOf(key []byte) (activeCursor, error) {
	switch len(key) {
	case 0:
		return activeCursor{}, nil
	case 8:
		return activeCursor{node: binary.BigEndian.Uint64(key)}, nil
	case 24:
		return activeCursor{node: binary.BigEndian.Uint64(key), task: binary.BigEndian.Uint64(key[8:]), open: binary.BigEndian.Uint64(key[16:]), within: true}, nil
	}
	return activeCursor{}, status.Errorf(codes.InvalidArgument, "active: a next_key of %d bytes is not one this query gives (8 or 24)", len(key))
}

// activeTasks is one page of a provider's tasks in flight: by node (in id order, reversed
// when asked), and within a node newest first. The index holds every task of the
// provider with a node until it is pruned (job_retention_blocks after its job ends), so a
// busy provider's entries are mostly a day's settled tasks; reading each to see whether
// it is in flight would cost every poll of its workers (each block) the whole day.
// Instead a node's slot
// counts its tasks in flight (open_tasks, an invariant of the module), and its entries
// are read newest first until that many are found: a node with none costs its slot and
// a seek, a busy one the tasks it holds since its oldest task in flight. A page ends
// when it holds the page's limit or has made activeScanPerPage reads; its next_key (in
// this query's own form) resumes there, so a page may hold fewer tasks than its limit,
// or none, and still have a next_key: a client pages until next_key is empty
// (flops-worker does). Offsets and count_total would read every entry, and are refused.
//
// With one node named (TasksByNode), the page holds that node's tasks only.
func (q queryServer) activeTasks(ctx context.Context, provider sdk.AccAddress, one *uint64, pg *query.PageRequest) ([]types.Task, *query.PageResponse, error) {
	if pg == nil {
		pg = &query.PageRequest{}
	}
	if pg.Offset > 0 || pg.CountTotal {
		return nil, nil, status.Error(codes.InvalidArgument, "active: pages by next_key only (an offset or count_total would read every task of the provider)")
	}
	at, err := activeCursorOf(pg.Key)
	if err != nil {
		return nil, nil, err
	}
	limit := pg.Limit
	if limit == 0 {
		limit = query.DefaultLimit
	}
	index := q.k.Tasks.Indexes.ByProviderNode
	type key = collections.Pair[collections.Pair[sdk.AccAddress, uint64], uint64]
	codec := index.KeyCodec()
	prefix := collections.PairPrefix[collections.Pair[sdk.AccAddress, uint64], uint64](collections.PairPrefix[sdk.AccAddress, uint64](provider))
	pp := make([]byte, codec.Size(prefix)) // the provider's entries; a node's add its id, big-endian
	if _, err := codec.Encode(pp, prefix); err != nil {
		return nil, nil, err
	}
	under := func(b ...[]byte) []byte { return slices.Concat(append([][]byte{pp}, b...)...) }
	be := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

	// node finds the provider's first node with an entry at or after from (at or before,
	// in reverse).
	node := func(from uint64) (uint64, bool, error) {
		if one != nil { // no seek: a node with no entries has none to read
			return *one, (pg.Reverse && from >= *one) || (!pg.Reverse && from <= *one), nil
		}
		start, end, order := under(be(from)), storetypes.PrefixEndBytes(pp), collections.OrderAscending
		if pg.Reverse {
			start, end, order = pp, storetypes.PrefixEndBytes(under(be(from))), collections.OrderDescending
		}
		it, err := index.IterateRaw(ctx, start, end, order)
		if err != nil {
			return 0, false, err
		}
		defer func() { _ = it.Close() }()
		if !it.Valid() {
			return 0, false, nil
		}
		k, err := it.Key()
		if err != nil {
			return 0, false, err
		}
		return k.K1().K2(), true, nil
	}
	after := func(n uint64) (uint64, bool) { // the next node id to look from
		if pg.Reverse {
			return n - 1, n > 0
		}
		return n + 1, n < math.MaxUint64
	}

	var (
		tasks []types.Task
		page  = &query.PageResponse{}
		reads = 1 // the seek to the first node
	)
	from := at.node
	if at == (activeCursor{}) && pg.Reverse {
		from = math.MaxUint64
	}
	n, ok, err := node(from)
	for ; ok && err == nil; n, ok, err = node(from) {
		c := activeCursor{node: n, task: math.MaxUint64, open: openUnknown, within: true}
		if at.within && at.node == n {
			c = at
		} else {
			if uint64(len(tasks)) == limit || reads >= activeScanPerPage {
				page.NextKey = activeCursor{node: n}.key()
				return tasks, page, nil
			}
			reads++
			s, err := q.k.Slots.Get(ctx, n)
			switch {
			case err == nil && s.Operator == provider.String():
				c.open = uint64(s.OpenTasks)
			case err != nil && !errors.Is(err, collections.ErrNotFound):
				return nil, nil, err
			}
		}
		if c.open > 0 {
			it, err := index.IterateRaw(ctx, under(be(n)), storetypes.PrefixEndBytes(under(be(n), be(c.task))), collections.OrderDescending)
			if err != nil {
				return nil, nil, err
			}
			for ; it.Valid(); it.Next() { // the loop ends where the last is found: no read past it
				var k key
				if k, err = it.Key(); err != nil {
					break
				}
				if uint64(len(tasks)) == limit || reads >= activeScanPerPage {
					c.task = k.K2()
					page.NextKey = c.key()
					_ = it.Close()
					return tasks, page, nil
				}
				reads++
				var t types.Task
				if t, err = q.k.Tasks.Get(ctx, k.K2()); err != nil {
					break
				}
				if holdsExposure(t.Status) {
					tasks = append(tasks, t)
					if c.open != openUnknown {
						if c.open--; c.open == 0 {
							break
						}
					}
				}
			}
			_ = it.Close()
			if err != nil {
				return nil, nil, err
			}
		}
		var more bool
		if from, more = after(n); !more {
			break
		}
		reads++ // the seek to the next node
	}
	if err != nil {
		return nil, nil, err
	}
	return tasks, page, nil
}
