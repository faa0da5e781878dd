// Package epochref checks the epoch a module follows (its epoch_identifier param) against
// the epochs x/epochs runs. x/epochs takes no message that adds an epoch, so a params
// update naming one it does not run would stop the module's epoch work (x/gfl's
// rebalance, x/reputation's scoring, x/dps's distribution) until another update, with
// nothing failing.
package epochref

import (
	"context"

	errorsmod "cosmossdk.io/errors"
)

// Epochs says whether x/epochs runs an epoch.
type Epochs interface {
	HasEpoch(ctx context.Context, identifier string) (bool, error)
}

// Check is nil when epochs runs the epoch identifier names (or epochs is nil: a keeper
// test without x/epochs); an epoch it does not run is invalid (the module's registered
// params error), wrapped with what was wrong.
func Check(ctx context.Context, epochs Epochs, identifier string, invalid *errorsmod.Error) error {
	if epochs == nil {
		return nil
	}
	ok, err := epochs.HasEpoch(ctx, identifier)
	if err != nil {
		return err
	}
	if !ok {
		return errorsmod.Wrapf(invalid, "epoch_identifier %q: x/epochs runs no such epoch, and no message adds one", identifier)
	}
	return nil
}
