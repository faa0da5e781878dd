package keeper

import (
	"context"
	"errors"

	"cosmossdk.io/collections"
	"cosmossdk.io/collections/indexes"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
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

// providerTaskKey is a providerTasks entry: (provider, task, node).
type providerTaskKey = collections.Triple[sdk.AccAddress, uint64, uint64]

// providerTasks indexes each task with a node under (provider, task, node) (store
// version 8). A provider's tasks come in task order, so the tasks a block assigns to one
// provider are written next to each other and share their path in the tree, where
// version 7's (provider, node, task) scattered them over the provider's nodes. A node's
// tasks are its operator's filtered by the key's last part, without reading the tasks.
type providerTasks struct {
	collections.KeySet[providerTaskKey]
	addr func(string) (sdk.AccAddress, error)
}

func newProviderTasks(sb *collections.SchemaBuilder, addr func(string) (sdk.AccAddress, error)) *providerTasks {
	return &providerTasks{
		KeySet: collections.NewKeySet(sb, types.TasksByProviderTaskKey, "tasks_by_provider_task",
			collections.TripleKeyCodec(sdk.AccAddressKey, collections.Uint64Key, collections.Uint64Key)),
		addr: addr,
	}
}

// hasNode: a task with a node and a provider has an entry; a pending one none.
func hasNode(t types.Task) bool { return t.NodeId != 0 && t.Provider != "" }

func (p *providerTasks) key(id uint64, t types.Task) (providerTaskKey, error) {
	a, err := p.addr(t.Provider)
	return collections.Join3(a, id, t.NodeId), err
}

// Reference implements collections.Index: the old value's entry goes when its provider
// or node changed, the new value's is written; an unchanged entry is not rewritten.
func (p *providerTasks) Reference(ctx context.Context, id uint64, t types.Task, lazyOld func() (types.Task, error)) error {
	old, err := lazyOld()
	switch {
	case errors.Is(err, collections.ErrNotFound):
	case err != nil:
		return err
	case hasNode(old) && hasNode(t) && old.Provider == t.Provider && old.NodeId == t.NodeId:
		return nil
	case hasNode(old):
		if err := p.Unreference(ctx, id, func() (types.Task, error) { return old, nil }); err != nil {
			return err
		}
	}
	if !hasNode(t) {
		return nil
	}
	k, err := p.key(id, t)
	if err != nil {
		return err
	}
	return p.Set(ctx, k)
}

// Unreference implements collections.Index.
func (p *providerTasks) Unreference(ctx context.Context, id uint64, getValue func() (types.Task, error)) error {
	t, err := getValue()
	if err != nil {
		return err
	}
	if !hasNode(t) {
		return nil
	}
	k, err := p.key(id, t)
	if err != nil {
		return err
	}
	return p.Remove(ctx, k)
}
