package agent

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/types/query"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A followed list is read from where the last tick left off, and from its start again
// when the node's slot changes in what decides what the node serves or bids for (here
// its region, or its ask); not when only its measured power moves, which every passed
// PoCP challenge does: before, each one had the worker read every open auction and every
// pool again (up to 7 MB a page of ten).
func TestListReadAgainOnlyWhenWhatTheNodeServesChanges(t *testing.T) {
	ids := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	var asked []uint64 // the first id of each page read
	read := func(pg *query.PageRequest, _ grpc.CallOption) ([]uint64, *query.PageResponse, error) {
		from := uint64(0)
		if len(pg.Key) == 8 {
			from = binary.BigEndian.Uint64(pg.Key)
		}
		var page []uint64
		res := &query.PageResponse{}
		for _, id := range ids {
			switch {
			case id < from:
			case uint64(len(page)) < pg.Limit:
				page = append(page, id)
			case res.NextKey == nil:
				res.NextKey = binary.BigEndian.AppendUint64(nil, id)
			}
		}
		if len(page) > 0 {
			asked = append(asked, page[0])
		}
		return page, res, nil
	}
	id := func(v uint64) uint64 { return v }
	slot := markettypes.NodeSlot{NodeId: 7, Region: "eu-west", GpuClass: "A100-80GB", Gpus: 8, Active: true, PowerGflops: 1_000, AskPerGpuHour: sdkmath.NewInt(100)}
	var c listCursor
	got, err := readList(&c, slot, read, id)
	require.NoError(t, err)
	require.Equal(t, ids, got, "the whole list, at the first tick")

	ids = append(ids, 13)
	asked = nil
	got, err = readList(&c, slot, read, id)
	require.NoError(t, err)
	require.Equal(t, []uint64{13}, got, "only what was added since")

	slot.PowerGflops = 1_040 // a PoCP challenge passed
	asked = nil
	got, err = readList(&c, slot, read, id)
	require.NoError(t, err)
	require.Empty(t, got, "its measured power decides nothing the list is read for")
	require.Empty(t, asked)

	for name, edit := range map[string]func(s *markettypes.NodeSlot){
		"region": func(s *markettypes.NodeSlot) { s.Region = "us-east" },
		"ask":    func(s *markettypes.NodeSlot) { s.AskPerGpuHour = sdkmath.NewInt(90) },
		"active": func(s *markettypes.NodeSlot) { s.Active = false },
	} {
		edit(&slot)
		got, err = readList(&c, slot, read, id)
		require.NoError(t, err)
		require.Equal(t, ids, got, "the list read again from its start when the %s changes", name)
	}
}
