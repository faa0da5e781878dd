// Package simutil holds what the modules' simulation factories (x/*/simulation) share.
package simutil

import (
	"context"
	"errors"

	"cosmossdk.io/collections"

	"github.com/cosmos/cosmos-sdk/testutil/simsx"
)

// ScanLimit bounds how many of a collection's newest values a factory looks through.
const ScanLimit = 256

// Newest calls fn on the ScanLimit newest values of a uint64-keyed collection (pass its
// Iterate method).
func Newest[V any](ctx context.Context, iterate func(context.Context, collections.Ranger[uint64]) (collections.Iterator[uint64, V], error), fn func(V)) error {
	it, err := iterate(ctx, new(collections.Range[uint64]).Descending())
	if err != nil {
		return err
	}
	defer func() { _ = it.Close() }()
	for n := 0; it.Valid() && n < ScanLimit; it.Next() {
		v, err := it.Value()
		if err != nil {
			return err
		}
		fn(v)
		n++
	}
	return nil
}

// Matching returns up to ScanLimit values, in key order, of a collection whose Walk
// method is passed, that keep accepts.
func Matching[K, V any](ctx context.Context, walk func(context.Context, collections.Ranger[K], func(K, V) (bool, error)) error, keep func(V) bool) ([]V, error) {
	var out []V
	err := walk(ctx, nil, func(_ K, v V) (bool, error) {
		if keep(v) {
			out = append(out, v)
		}
		return len(out) >= ScanLimit, nil
	})
	return out, err
}

// Expect is a delivery result handler that accepts success or one of the errors a
// simulated actor may meet by its timing or its state.
func Expect(errs ...error) simsx.SimDeliveryResultHandler {
	return func(err error) error {
		for _, e := range errs {
			if errors.Is(err, e) {
				return nil
			}
		}
		return err
	}
}
