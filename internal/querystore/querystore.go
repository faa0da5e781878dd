// Package querystore is the app's query multistore (baseapp.SetQueryMultiStore): the root
// multistore, except that a query of the latest committed state reuses the stores opened
// at that version instead of opening them again.
//
// Every gRPC call the node serves, a BroadcastTx included, and every ABCI query goes
// through baseapp's CreateQueryContext, which asks the multistore its latest version
// (twice) and branches it at that version. On the root multistore the first hashes the
// commit info of every store, the second opens each IAVL store at that version: its root
// read from the database, one read per store, about 20 here. In make load's 12,000-sender
// run that was 0.25 ms per call in the bank-send phases and 0.45 ms in the submit-job
// phase (the database busier with the jobs' writes), 10% of the node's CPU, spent next
// to the serial ABCI path on a 2-core machine (FLOPS_LOAD_CPUPROFILE).
//
// Here the latest version is read from where the root multistore records it at the end
// of each commit (one key of the database, rewritten every block: usually a read of the
// database's memory table), and the IAVL stores are opened at it once, by the first
// query after the commit; each query still gets a branch of its own over them (a cache
// that its writes go to and that nothing else sees), as from the root multistore. An
// immutable IAVL tree is read-only and safe for concurrent reads, as the root
// multistore's callers already rely on (its nodes are shared between versions through
// the node cache). Any other version, a store that cannot be opened at the latest one,
// and a multistore with listeners (whose stores the root multistore wraps for them) go to
// the root multistore as before.
//
// The recorded version moves to a new block's after every store has committed it and
// before baseapp moves its check state to that block, while its finalize state (the
// block's header) is still there: a query that sees the new version finds a state at
// that height, as it would from the root multistore (baseapp's CreateQueryContext checks
// that it does).
//
// The recorded version is the root multistore's latest except after LoadVersion at an
// older height (flopsd export --height), which rewrites nothing: that runs with no query
// server. This is the query path only: nothing of the state machine reads it.
package querystore

import (
	"sync"
	"sync/atomic"

	dbm "github.com/cosmos/cosmos-db"

	"github.com/cosmos/cosmos-sdk/store/v2/cachemulti"
	"github.com/cosmos/cosmos-sdk/store/v2/iavl"
	"github.com/cosmos/cosmos-sdk/store/v2/rootmulti"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
)

// Store is the query multistore over a root multistore.
type Store struct {
	*rootmulti.Store // everything but LatestVersion and CacheMultiStoreWithVersion

	db dbm.DB // the root multistore's database

	at atomic.Pointer[opened] // the stores opened at a version (the latest when they were)
	mu sync.Mutex             // held while stores are opened: by one query, once a version
}

// opened is every mounted store at one version: the IAVL ones opened at it (immutable),
// the others (transient, memory, object) as they are.
type opened struct {
	version int64
	stores  map[storetypes.StoreKey]storetypes.CacheWrapper
}

// New is the query multistore over rms, whose database is db.
func New(rms *rootmulti.Store, db dbm.DB) *Store { return &Store{Store: rms, db: db} }

// LatestVersion is the last committed version, as the root multistore records it at the
// end of a commit (the root multistore's own LatestVersion hashes its commit info).
func (s *Store) LatestVersion() int64 { return rootmulti.GetLatestVersion(s.db) }

// CacheMultiStoreWithVersion is a branch of the stores at version: of the stores opened
// at the latest version when that is the one asked for, the root multistore's otherwise.
func (s *Store) CacheMultiStoreWithVersion(version int64) (storetypes.CacheMultiStore, error) {
	if version <= 0 || version != s.LatestVersion() {
		return s.Store.CacheMultiStoreWithVersion(version)
	}
	at, ok := s.open(version)
	if !ok {
		return s.Store.CacheMultiStoreWithVersion(version)
	}
	return cachemulti.NewStore(at.stores), nil
}

// open is the stores at version, opened once (false: the root multistore must branch
// them itself: a store that cannot be opened there, or listeners).
func (s *Store) open(version int64) (*opened, bool) {
	if at := s.at.Load(); at != nil && at.version == version {
		return at, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if at := s.at.Load(); at != nil && at.version == version {
		return at, true // opened by a query that held the lock first
	}
	keys := s.StoreKeysByName()
	at := &opened{version: version, stores: make(map[storetypes.StoreKey]storetypes.CacheWrapper, len(keys))}
	for _, key := range keys {
		if s.ListeningEnabled(key) {
			return nil, false
		}
		st := s.GetStore(key) // unwrapped from the inter-block cache
		if st.GetStoreType() != storetypes.StoreTypeIAVL {
			at.stores[key] = st
			continue
		}
		tree, ok := st.(*iavl.Store)
		if !ok {
			return nil, false
		}
		imm, err := tree.GetImmutable(version)
		if err != nil {
			return nil, false
		}
		at.stores[key] = imm
	}
	s.at.Store(at)
	return at, true
}
