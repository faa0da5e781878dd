package types

import (
	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/typedevent"
)

// Event is EventExposure as sdk.TypedEventToEvent makes it (internal/typedevent), at a
// fraction of its cost: every assignment, settlement and release of a task changes its
// provider's exposure and emits one.
func (e *EventExposure) Event() (sdk.Event, error) {
	if !typedevent.SafeString(e.Provider) || e.Exposure.IsNil() {
		return sdk.TypedEventToEvent(e) // what the shortcut below does not quote or print
	}
	return sdk.Event{
		Type: "flops.stakingslash.v1.EventExposure",
		Attributes: []abci.EventAttribute{
			{Key: "exposure", Value: typedevent.String(e.Exposure.String())},
			{Key: "provider", Value: typedevent.String(e.Provider)},
		},
	}, nil
}
