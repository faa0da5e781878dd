package types

import (
	"strconv"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Event is the typed event as an sdk.Event, attribute for attribute what
// sdk.TypedEventToEvent makes of it (its type is the message's full name; each field
// is an attribute holding its value's proto JSON, the attributes sorted by name), at a
// fraction of its cost: the scheduler emits one per assignment, up to thousands a block,
// and the JSON round trip of TypedEventToEvent was about a sixth of an assignment's
// cost. ParseTypedEvent reads it back as any typed event.
func (e *EventTaskAssigned) Event() (sdk.Event, error) {
	if !jsonSafe(e.Provider) || e.Price.IsNil() {
		return sdk.TypedEventToEvent(e) // what the shortcut below does not quote or print
	}
	price := e.Price.String()
	return sdk.Event{
		Type: "flops.market.v1.EventTaskAssigned",
		Attributes: []abci.EventAttribute{
			{Key: "job_id", Value: quoteUint(e.JobId)},
			{Key: "node_id", Value: quoteUint(e.NodeId)},
			{Key: "price", Value: `"` + price + `"`},
			{Key: "provider", Value: `"` + e.Provider + `"`},
			{Key: "reassignment", Value: strconv.FormatBool(e.Reassignment)},
			{Key: "task_id", Value: quoteUint(e.TaskId)},
		},
	}, nil
}

// Event is EventJobSubmitted as sdk.TypedEventToEvent makes it (see EventTaskAssigned's):
// every submission emits one, and the JSON round trip was a fifth of the submission
// handler's time under make load.
func (e *EventJobSubmitted) Event() (sdk.Event, error) {
	mode, known := AllocationMode_name[int32(e.Mode)]
	if !jsonSafe(e.Owner) || e.Escrow.IsNil() || !known {
		return sdk.TypedEventToEvent(e) // what the shortcut below does not quote or print
	}
	return sdk.Event{
		Type: "flops.market.v1.EventJobSubmitted",
		Attributes: []abci.EventAttribute{
			{Key: "escrow", Value: `"` + e.Escrow.String() + `"`},
			{Key: "job_id", Value: quoteUint(e.JobId)},
			{Key: "mode", Value: `"` + mode + `"`},
			{Key: "owner", Value: `"` + e.Owner + `"`},
			{Key: "tasks", Value: strconv.FormatUint(uint64(e.Tasks), 10)},
		},
	}, nil
}

// quoteUint is a uint64 as proto JSON writes it: a decimal string.
func quoteUint(v uint64) string { return `"` + strconv.FormatUint(v, 10) + `"` }

// jsonSafe: s is printable ASCII that JSON quotes as it is (no quote, backslash, control
// character, or character that Go's JSON encoder escapes).
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
