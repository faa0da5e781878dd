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
