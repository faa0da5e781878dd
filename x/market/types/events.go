package types

import (
	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/typedevent"
)

// Event is the typed event as an sdk.Event, attribute for attribute what
// sdk.TypedEventToEvent makes of it (internal/typedevent), at a fraction of its cost: the
// scheduler emits one per assignment, up to thousands a block, and the JSON round trip of
// TypedEventToEvent was about a sixth of an assignment's cost. ParseTypedEvent reads it
// back as any typed event.
func (e *EventTaskAssigned) Event() (sdk.Event, error) {
	if !typedevent.SafeString(e.Provider) || e.Price.IsNil() {
		return sdk.TypedEventToEvent(e) // what the shortcut below does not quote or print
	}
	return sdk.Event{
		Type: "flops.market.v1.EventTaskAssigned",
		Attributes: []abci.EventAttribute{
			{Key: "job_id", Value: typedevent.Uint64(e.JobId)},
			{Key: "node_id", Value: typedevent.Uint64(e.NodeId)},
			{Key: "price", Value: typedevent.String(e.Price.String())},
			{Key: "provider", Value: typedevent.String(e.Provider)},
			{Key: "reassignment", Value: typedevent.Bool(e.Reassignment)},
			{Key: "task_id", Value: typedevent.Uint64(e.TaskId)},
		},
	}, nil
}

// Event is EventJobSubmitted as sdk.TypedEventToEvent makes it (see EventTaskAssigned's):
// every submission emits one, and the JSON round trip was a fifth of the submission
// handler's time under make load.
func (e *EventJobSubmitted) Event() (sdk.Event, error) {
	mode, known := AllocationMode_name[int32(e.Mode)]
	if !typedevent.SafeString(e.Owner) || e.Escrow.IsNil() || !known {
		return sdk.TypedEventToEvent(e) // what the shortcut below does not quote or print
	}
	return sdk.Event{
		Type: "flops.market.v1.EventJobSubmitted",
		Attributes: []abci.EventAttribute{
			{Key: "escrow", Value: typedevent.String(e.Escrow.String())},
			{Key: "job_id", Value: typedevent.Uint64(e.JobId)},
			{Key: "mode", Value: typedevent.String(mode)},
			{Key: "owner", Value: typedevent.String(e.Owner)},
			{Key: "tasks", Value: typedevent.Uint32(e.Tasks)},
		},
	}, nil
}
