package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"
	"cosmossdk.io/collections/indexes"
)

// sparseMulti is a multi index that leaves out the values it has no reference for (a
// task not assigned has no node and no provider): a pending task costs no index entries
// under node 0 and the empty provider, written at submission and deleted at assignment,
// that no query reads. Reads (MatchExact, Iterate, the pagination) are the Multi's.
type sparseMulti[R, K, V any] struct {
	*indexes.Multi[R, K, V]
	indexed func(V) bool
}

func newSparseMulti[R, K, V any](m *indexes.Multi[R, K, V], indexed func(V) bool) *sparseMulti[R, K, V] {
	return &sparseMulti[R, K, V]{Multi: m, indexed: indexed}
}

// Reference implements collections.Index: the old value's entry goes (if it had one),
// the new value's is written (if it has one).
func (s *sparseMulti[R, K, V]) Reference(ctx context.Context, pk K, value V, lazyOld func() (V, error)) error {
	old, err := lazyOld()
	hadOld := err == nil && s.indexed(old)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return err
	}
	if !s.indexed(value) {
		if !hadOld {
			return nil
		}
		return s.Multi.Unreference(ctx, pk, func() (V, error) { return old, nil })
	}
	return s.Multi.Reference(ctx, pk, value, func() (V, error) {
		if hadOld {
			return old, nil
		}
		var zero V
		return zero, collections.ErrNotFound
	})
}

// Unreference implements collections.Index.
func (s *sparseMulti[R, K, V]) Unreference(ctx context.Context, pk K, getValue func() (V, error)) error {
	v, err := getValue()
	if err != nil {
		return err
	}
	if !s.indexed(v) {
		return nil
	}
	return s.Multi.Unreference(ctx, pk, func() (V, error) { return v, nil })
}
