package collkeys

import (
	"context"

	"cosmossdk.io/collections"
)

// CollectKeys reads up to limit keys of a key set in a range, so that a block hook can
// modify the set while it processes them (no writes under an open iterator).
func CollectKeys[K any](ctx context.Context, ks collections.KeySet[K], rng collections.Ranger[K], limit int) ([]K, error) {
	it, err := ks.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	var out []K
	for ; it.Valid() && len(out) < limit; it.Next() {
		key, err := it.Key()
		if err != nil {
			return nil, err
		}
		out = append(out, key)
	}
	return out, nil
}

// CollectEntries reads up to limit entries of a map in a range, as CollectKeys does for a
// key set.
func CollectEntries[K, V any](ctx context.Context, m collections.Map[K, V], rng collections.Ranger[K], limit int) ([]collections.KeyValue[K, V], error) {
	it, err := m.Iterate(ctx, rng)
	if err != nil {
		return nil, err
	}
	defer func() { _ = it.Close() }()
	var out []collections.KeyValue[K, V]
	for ; it.Valid() && len(out) < limit; it.Next() {
		kv, err := it.KeyValue()
		if err != nil {
			return nil, err
		}
		out = append(out, kv)
	}
	return out, nil
}
