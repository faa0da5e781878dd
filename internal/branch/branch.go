// Package branch is a branch of a multistore for a block hook's unit of work, lighter
// than the SDK's cache branch (sdk.Context.CacheContext) and equivalent to it.
//
// A unit branches the block's state so that it lands whole or not at all
// (blockhook.Budget.Run). The SDK's branch is a cache: every key a unit reads is copied
// into it (a map entry and a value cell), and writing it back walks that whole map. A
// unit reads far more than it writes (the scheduler reads both candidates' slots,
// scores and collateral for each assignment and writes one), and it never needs what it
// read again from its own copy: the block's state under it is a cache already, and nothing
// else writes to it while the unit runs. This branch keeps the unit's writes alone: a read
// is the unit's own write of the key, or else the parent's value; the writes go back to the
// parent in key order, as the SDK's do, when the order can matter (KVStore.Write).
//
// Iteration needs the writes merged in order with the parent's keys. The first iterator
// opened on a store of the branch turns that store into the SDK's cache branch (its writes
// so far replayed into it), which does all from then on; few units iterate.
//
// The gas is the same: the gas meter wraps the store the branch hands out, above it, and
// charges by the operation and its sizes, not by where the value came from.
package branch

import (
	"errors"
	"maps"
	"slices"
	"unsafe"

	"github.com/cosmos/cosmos-sdk/store/v2/cachekv"
	"github.com/cosmos/cosmos-sdk/store/v2/cachemulti"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Context is ctx.CacheContext() on this package's branch: ctx on a branch of its
// multistore with an event manager of its own, and the function that writes the branch
// to ctx's multistore and emits its events on ctx's manager.
func Context(ctx sdk.Context) (sdk.Context, func()) {
	ms := New(ctx.MultiStore())
	cc := ctx.WithMultiStore(ms).WithEventManager(sdk.NewEventManager())
	return cc, func() {
		ctx.EventManager().EmitEvents(cc.EventManager().Events())
		ms.Write()
	}
}

// MultiStore is a branch of a multistore. Its key-value stores are opened on first use;
// object stores are left to the SDK's branch.
type MultiStore struct {
	parent storetypes.MultiStore
	stores map[storetypes.StoreKey]*KVStore
	opened []*KVStore // in the order opened: the order Write writes them back
	other  storetypes.CacheMultiStore
}

var _ storetypes.CacheMultiStore = (*MultiStore)(nil)

// New branches parent.
func New(parent storetypes.MultiStore) *MultiStore {
	return &MultiStore{parent: parent, stores: map[storetypes.StoreKey]*KVStore{}}
}

// GetKVStore is the branch's store of key.
func (m *MultiStore) GetKVStore(key storetypes.StoreKey) storetypes.KVStore {
	if s, ok := m.stores[key]; ok {
		return s
	}
	s := &KVStore{parent: m.parent.GetKVStore(key)}
	m.stores[key] = s
	m.opened = append(m.opened, s)
	return s
}

// GetStore is GetKVStore, or the SDK branch's store for an object store.
func (m *MultiStore) GetStore(key storetypes.StoreKey) storetypes.Store {
	if isObject(key) {
		return m.objects().GetStore(key)
	}
	return m.GetKVStore(key)
}

// GetObjKVStore is the SDK branch's object store of key.
func (m *MultiStore) GetObjKVStore(key storetypes.StoreKey) storetypes.ObjKVStore {
	return m.objects().GetObjKVStore(key)
}

func (m *MultiStore) objects() storetypes.CacheMultiStore {
	if m.other == nil {
		m.other = m.parent.CacheMultiStore()
	}
	return m.other
}

func isObject(key storetypes.StoreKey) bool {
	_, ok := key.(*storetypes.ObjectStoreKey)
	return ok
}

// Write writes every store of the branch to its parent, in the order they were opened
// (KVStore.Write).
func (m *MultiStore) Write() {
	for _, s := range m.opened {
		s.Write()
	}
	if m.other != nil {
		m.other.Write()
	}
}

// CacheMultiStore branches the branch (the SDK's cache branch, on this one's stores).
func (m *MultiStore) CacheMultiStore() storetypes.CacheMultiStore {
	return cachemulti.NewFromParent(func(key storetypes.StoreKey) storetypes.CacheWrapper {
		return m.GetStore(key)
	})
}

// CacheWrap is CacheMultiStore.
func (m *MultiStore) CacheWrap() storetypes.CacheWrap {
	return m.CacheMultiStore().(storetypes.CacheWrap)
}

// CacheMultiStoreWithVersion is not supported on a branch (nor on the SDK's).
func (m *MultiStore) CacheMultiStoreWithVersion(int64) (storetypes.CacheMultiStore, error) {
	return nil, errors.New("branch: cannot branch a branch at a version")
}

// LatestVersion is the parent's.
func (m *MultiStore) LatestVersion() int64 { return m.parent.LatestVersion() }

// GetStoreType is a multistore's.
func (m *MultiStore) GetStoreType() storetypes.StoreType { return storetypes.StoreTypeMulti }

// KVStore is a branch of a key-value store: its writes (a nil value is a deletion) over
// the parent, until its first iterator; the SDK's cache branch from then on.
type KVStore struct {
	parent storetypes.KVStore
	writes map[string][]byte
	cache  *cachekv.Store
}

var _ storetypes.CacheKVStore = (*KVStore)(nil)

// Get is the branch's write of key, else the parent's value.
func (s *KVStore) Get(key []byte) []byte {
	storetypes.AssertValidKey(key)
	if s.cache != nil {
		return s.cache.Get(key)
	}
	if v, ok := s.writes[string(key)]; ok {
		return v
	}
	return s.parent.Get(key)
}

// Has says whether key has a value.
func (s *KVStore) Has(key []byte) bool { return s.Get(key) != nil }

// Set writes key in the branch. As with the SDK's branch, value is kept, not copied.
func (s *KVStore) Set(key, value []byte) {
	storetypes.AssertValidKey(key)
	storetypes.AssertValidValue(value)
	s.put(key, value)
}

// Delete deletes key in the branch.
func (s *KVStore) Delete(key []byte) {
	storetypes.AssertValidKey(key)
	s.put(key, nil)
}

func (s *KVStore) put(key, value []byte) {
	if s.cache != nil {
		if value == nil {
			s.cache.Delete(key)
		} else {
			s.cache.Set(key, value)
		}
		return
	}
	if s.writes == nil {
		s.writes = map[string][]byte{}
	}
	s.writes[unsafeString(key)] = value
}

// unsafeString is key's bytes as a string, not copied. The key is kept as the SDK's cache
// branch keeps it (its setCacheValue): a caller does not change a key it handed a store.
func unsafeString(key []byte) string { return unsafe.String(unsafe.SliceData(key), len(key)) }

// unsafeBytes is a kept key's bytes, not copied: no store changes a key it is handed.
func unsafeBytes(k string) []byte { return unsafe.Slice(unsafe.StringData(k), len(k)) }

// Iterator is the SDK's cache branch's, which the store becomes.
func (s *KVStore) Iterator(start, end []byte) storetypes.Iterator {
	return s.cached().Iterator(start, end)
}

// ReverseIterator is the SDK's cache branch's, which the store becomes.
func (s *KVStore) ReverseIterator(start, end []byte) storetypes.Iterator {
	return s.cached().ReverseIterator(start, end)
}

// cached turns the store into the SDK's cache branch of its parent, with its writes.
func (s *KVStore) cached() *cachekv.Store {
	if s.cache == nil {
		s.cache = cachekv.NewStore(s.parent)
		for k, v := range s.writes { // order-free: a cache (Write)
			apply(s.cache, k, v)
		}
		s.writes = nil
	}
	return s.cache
}

// Write writes the branch's writes to the parent and forgets them: in key order, as the
// SDK's branch does, unless the parent is itself a cache (the SDK's or this package's
// branch), which keeps its writes in a map and sorts them when it writes them on or
// opens an iterator. Then the order of the Sets changes nothing the parent holds or
// will do (each is a map assignment), and sorting them cost 3% of a 1,000-assignment
// EndBlock. A block hook's unit always writes to the block's cache; a keeper test's may
// write to the committed store itself, whose tree depends on the order.
func (s *KVStore) Write() {
	if s.cache != nil {
		s.cache.Write()
		return
	}
	switch s.parent.(type) {
	case *cachekv.Store, *KVStore:
		for k, v := range s.writes { // order-free: see above
			apply(s.parent, k, v)
		}
	default:
		for _, k := range slices.Sorted(maps.Keys(s.writes)) {
			apply(s.parent, k, s.writes[k])
		}
	}
	clear(s.writes)
}

// apply writes one of the branch's writes (nil: a deletion) to dst.
func apply(dst storetypes.KVStore, k string, v []byte) {
	if v == nil {
		dst.Delete(unsafeBytes(k))
	} else {
		dst.Set(unsafeBytes(k), v)
	}
}

// CacheWrap branches the store (the SDK's cache branch over this one).
func (s *KVStore) CacheWrap() storetypes.CacheWrap { return cachekv.NewStore(s) }

// GetStoreType is the parent's.
func (s *KVStore) GetStoreType() storetypes.StoreType { return s.parent.GetStoreType() }
