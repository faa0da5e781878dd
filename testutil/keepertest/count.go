package keepertest

import (
	"context"

	corestore "cosmossdk.io/core/store"
)

// StoreOps counts a keeper's store operations: its reads (Get and Has), writes and
// deletes by the first byte of the key (the collection's prefix), its iterators and the
// stores it opened. The counts are exact and deterministic: a test can hold a hot path to
// the operations it needs, where a timing could not.
type StoreOps struct {
	On                        bool // counting (off: the wrapper only forwards)
	Opens, Its                int
	GetsBy, SetsBy, DeletesBy map[byte]int
}

// Total is the sum of a by-prefix count.
func Total(by map[byte]int) int {
	n := 0
	for _, c := range by {
		n += c
	}
	return n
}

// Reset zeroes the counts.
func (o *StoreOps) Reset() {
	on := o.On
	*o = StoreOps{On: on, GetsBy: map[byte]int{}, SetsBy: map[byte]int{}, DeletesBy: map[byte]int{}}
}

// Counting wraps a store service so that every store it opens counts its operations in ops.
func Counting(s corestore.KVStoreService, ops *StoreOps) corestore.KVStoreService {
	ops.Reset()
	return countingService{s, ops}
}

type countingService struct {
	corestore.KVStoreService
	ops *StoreOps
}

func (c countingService) OpenKVStore(ctx context.Context) corestore.KVStore {
	if c.ops.On {
		c.ops.Opens++
	}
	return countingStore{c.KVStoreService.OpenKVStore(ctx), c.ops}
}

type countingStore struct {
	corestore.KVStore
	ops *StoreOps
}

func prefix(k []byte) byte {
	if len(k) == 0 {
		return 0
	}
	return k[0]
}

func (s countingStore) Get(k []byte) ([]byte, error) {
	if s.ops.On {
		s.ops.GetsBy[prefix(k)]++
	}
	return s.KVStore.Get(k)
}

func (s countingStore) Has(k []byte) (bool, error) {
	if s.ops.On {
		s.ops.GetsBy[prefix(k)]++
	}
	return s.KVStore.Has(k)
}

func (s countingStore) Set(k, v []byte) error {
	if s.ops.On {
		s.ops.SetsBy[prefix(k)]++
	}
	return s.KVStore.Set(k, v)
}

func (s countingStore) Delete(k []byte) error {
	if s.ops.On {
		s.ops.DeletesBy[prefix(k)]++
	}
	return s.KVStore.Delete(k)
}

func (s countingStore) Iterator(start, end []byte) (corestore.Iterator, error) {
	if s.ops.On {
		s.ops.Its++
	}
	return s.KVStore.Iterator(start, end)
}

func (s countingStore) ReverseIterator(start, end []byte) (corestore.Iterator, error) {
	if s.ops.On {
		s.ops.Its++
	}
	return s.KVStore.ReverseIterator(start, end)
}
