package agent

import (
	"bytes"
	"encoding/binary"

	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/types/query"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

const (
	// listPage is the items one query of a followed list asks for. Each comes with its
	// spec, which the Msg's bounds let reach about 670 KB for a job (command, env,
	// task_args, inputs) and 330 KB for a pool (command, env): a page of the SDK's default
	// 100, or the 200 the worker once asked for, is more than a node lets one query read
	// (flopsd's query-gas-limit) and more than gRPC's default 4 MiB answer, so a client
	// who opened a handful of big auctions or a dozen big pools had every worker's read
	// refused. Ten are at most about 7 MB and 21,000,000 gas.
	listPage = 10
	// listAnswerBytes is the answer a page (or one pool) may be: a page of ten of the
	// largest jobs is about 7 MB.
	listAnswerBytes = 16 << 20
	// listPagesPerTick bounds the items one tick reads of a list (200); a tick that stops
	// there goes on from the same place at the next.
	listPagesPerTick = 20
)

// listCursor is the worker's place in a list the chain keeps in id order and adds to only
// at its end (the open auctions: jobs enter the auction only at submission; the pools):
// each tick reads only what was added since, however long the list. The place is
// dropped, and the list read again from its start, when the node's slot changes (its
// class, runtimes, region, ask or activity decide what it serves and bids for; its
// measured power does not). It is the tick's own.
type listCursor struct {
	key  []byte // the next page's key, the id (big-endian) these lists page by
	slot []byte // the slot (marshalled) the list was read for
}

// readList reads c's list from its place on, page by page (read asks for one), and keeps
// the place: after the last item read once caught up, where the next page would start.
// Items read before a refused page are returned with the error.
func readList[T any](c *listCursor, slot markettypes.NodeSlot, read func(*query.PageRequest, grpc.CallOption) ([]T, *query.PageResponse, error), id func(T) uint64) ([]T, error) {
	// the node's measured power moves at every PoCP challenge it passes and decides
	// nothing these lists are read for (Serves, the bidder's quote): it would have every
	// worker read every open auction and pool again each challenge interval
	slot.PowerGflops = 0
	fp, err := slot.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(fp, c.slot) {
		c.key, c.slot = nil, fp
	}
	var items []T
	for range listPagesPerTick {
		page, res, err := read(&query.PageRequest{Key: c.key, Limit: listPage}, grpc.MaxCallRecvMsgSize(listAnswerBytes))
		if err != nil {
			return items, err
		}
		items = append(items, page...)
		if res != nil && len(res.NextKey) > 0 {
			c.key = res.NextKey
			continue
		}
		if n := len(page); n > 0 {
			c.key = binary.BigEndian.AppendUint64(nil, id(page[n-1])+1)
		}
		break
	}
	return items, nil
}

// rewind moves the place back to id, if it is past it: that item is read again at the
// next tick.
func (c *listCursor) rewind(id uint64) {
	if key := binary.BigEndian.AppendUint64(nil, id); c.key != nil && bytes.Compare(key, c.key) < 0 {
		c.key = key
	}
}
