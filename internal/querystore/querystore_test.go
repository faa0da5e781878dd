package querystore

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"cosmossdk.io/log/v2"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/store/v2/rootmulti"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
)

// countingDB counts the reads that reach the database.
type countingDB struct {
	dbm.DB
	reads atomic.Int64
}

func (d *countingDB) Get(k []byte) ([]byte, error) { d.reads.Add(1); return d.DB.Get(k) }
func (d *countingDB) Has(k []byte) (bool, error)   { d.reads.Add(1); return d.DB.Has(k) }

// chain is a root multistore of n IAVL stores and a transient one over db, and its query
// multistore.
type chain struct {
	rms       *rootmulti.Store
	qs        *Store
	iavl      []*storetypes.KVStoreKey
	transient *storetypes.TransientStoreKey
}

func newChain(t testing.TB, db dbm.DB, n int) *chain {
	c := &chain{rms: rootmulti.NewStore(db, log.NewNopLogger()), transient: storetypes.NewTransientStoreKey("transient")}
	for i := range n {
		k := storetypes.NewKVStoreKey(fmt.Sprintf("store%02d", i))
		c.iavl = append(c.iavl, k)
		c.rms.MountStoreWithDB(k, storetypes.StoreTypeIAVL, nil)
	}
	c.rms.MountStoreWithDB(c.transient, storetypes.StoreTypeTransient, nil)
	require.NoError(t, c.rms.LoadLatestVersion())
	c.qs = New(c.rms, db)
	return c
}

// commit writes "height" = the version being committed and key -> value into every
// IAVL store, and commits.
func (c *chain) commit(t testing.TB, kv ...string) int64 {
	version := c.rms.LatestVersion() + 1
	for _, k := range c.iavl {
		st := c.rms.GetKVStore(k)
		st.Set([]byte("height"), []byte(strconv.FormatInt(version, 10)))
		for i := 0; i+1 < len(kv); i += 2 {
			st.Set([]byte(kv[i]), []byte(kv[i+1]))
		}
	}
	id := c.rms.Commit()
	require.Equal(t, version, id.Version)
	return version
}

// read is key in store k of the query multistore's branch at version (nil when absent).
func read(t testing.TB, ms storetypes.MultiStore, version int64, k storetypes.StoreKey, key string) []byte {
	branch, err := ms.CacheMultiStoreWithVersion(version)
	require.NoError(t, err)
	return branch.GetKVStore(k).Get([]byte(key))
}

// TestLatestStateFromStoresOpenedOnce: the query multistore's latest version is the root
// multistore's; a branch at it reads what the root multistore's branch reads, key for
// key, and the second branch at a version opens nothing again (its one database read is
// the recorded version); each branch is its own (a query's writes reach neither another
// query nor the state); an older version is the root multistore's.
func TestLatestStateFromStoresOpenedOnce(t *testing.T) {
	db := &countingDB{DB: dbm.NewMemDB()}
	c := newChain(t, db, 3)
	require.Zero(t, c.qs.LatestVersion(), "nothing committed")
	v1 := c.commit(t, "a", "1", "b", "2")
	require.Equal(t, v1, c.qs.LatestVersion())
	require.Equal(t, c.rms.LatestVersion(), c.qs.LatestVersion())

	branch, err := c.qs.CacheMultiStoreWithVersion(v1)
	require.NoError(t, err)
	root, err := c.rms.CacheMultiStoreWithVersion(v1)
	require.NoError(t, err)
	for _, k := range c.iavl {
		it, want := branch.GetKVStore(k).Iterator(nil, nil), root.GetKVStore(k).Iterator(nil, nil)
		n := 0
		for ; want.Valid(); want.Next() {
			require.True(t, it.Valid(), "%s: %q missing", k.Name(), want.Key())
			require.Equal(t, want.Key(), it.Key())
			require.Equal(t, want.Value(), it.Value())
			it.Next()
			n++
		}
		require.False(t, it.Valid(), "%s: a key the root multistore has not", k.Name())
		require.NoError(t, it.Close())
		require.NoError(t, want.Close())
		require.Equal(t, 3, n)
	}
	require.NotNil(t, branch.GetKVStore(c.transient), "the transient store is mounted in the branch")

	before := db.reads.Load()
	again, err := c.qs.CacheMultiStoreWithVersion(v1)
	require.NoError(t, err)
	require.Equal(t, before+1, db.reads.Load(), "one read, the recorded version: the stores were opened at it once")
	require.Equal(t, []byte("1"), again.GetKVStore(c.iavl[0]).Get([]byte("a")))

	// a query's writes stay in its branch
	branch.GetKVStore(c.iavl[1]).Set([]byte("a"), []byte("query"))
	require.Equal(t, []byte("1"), again.GetKVStore(c.iavl[1]).Get([]byte("a")), "another query's branch")
	require.Equal(t, []byte("1"), read(t, c.qs, v1, c.iavl[1], "a"), "a new branch")
	require.Equal(t, []byte("1"), c.rms.GetKVStore(c.iavl[1]).Get([]byte("a")), "the state")

	v2 := c.commit(t, "a", "3")
	require.Equal(t, v2, c.qs.LatestVersion())
	require.Equal(t, c.rms.LatestVersion(), c.qs.LatestVersion())
	require.Equal(t, []byte("3"), read(t, c.qs, v2, c.iavl[2], "a"), "the new latest version")
	require.Equal(t, v2, c.qs.at.Load().version, "the stores opened at the new version")
	require.Equal(t, []byte("1"), read(t, c.qs, v1, c.iavl[2], "a"), "an older version, from the root multistore")
	require.Equal(t, v2, c.qs.at.Load().version, "an older version is not kept")

	_, err = c.qs.CacheMultiStoreWithVersion(v2 + 1)
	require.Error(t, err, "a future version, as the root multistore says")
}

// TestQueriesWhileBlocksCommit: queries of the latest state from many goroutines while
// blocks commit (run with -race): each sees one whole version, every store at the
// height it says.
func TestQueriesWhileBlocksCommit(t *testing.T) {
	c := newChain(t, dbm.NewMemDB(), 4)
	c.commit(t)
	const blocks, readers = 200, 4
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			for !done.Load() {
				v := c.qs.LatestVersion()
				branch, err := c.qs.CacheMultiStoreWithVersion(v)
				if err != nil {
					errs <- err
					return
				}
				for _, k := range c.iavl {
					if got := string(branch.GetKVStore(k).Get([]byte("height"))); got != strconv.FormatInt(v, 10) {
						errs <- fmt.Errorf("version %d: %s says height %s", v, k.Name(), got)
						return
					}
				}
			}
		})
	}
	for range blocks {
		c.commit(t, "x", "y")
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(blocks+1), c.qs.LatestVersion())
}

// BenchmarkQueryContext is what baseapp does for each query of the latest state (each
// gRPC call a node serves, a BroadcastTx included): ask the multistore its latest
// version twice and branch it there, on goleveldb with 20 IAVL stores of 2,000 keys
// each, 100 versions committed. root is the root multistore's; query the query
// multistore's (its stores opened at the version by the first query after a commit).
func BenchmarkQueryContext(b *testing.B) {
	db, err := dbm.NewGoLevelDB("state", b.TempDir(), nil)
	require.NoError(b, err)
	b.Cleanup(func() { _ = db.Close() })
	c := newChain(b, db, 20)
	for v := range 100 {
		kv := make([]string, 0, 40)
		for i := range 20 {
			kv = append(kv, fmt.Sprintf("key-%d-%d", v, i), "value")
		}
		c.commit(b, kv...)
	}
	for _, ms := range []struct {
		name string
		ms   storetypes.MultiStore
	}{{"root", c.rms}, {"query", c.qs}} {
		b.Run(ms.name, func(b *testing.B) {
			for b.Loop() {
				_ = ms.ms.LatestVersion()
				branch, err := ms.ms.CacheMultiStoreWithVersion(ms.ms.LatestVersion())
				if err != nil {
					b.Fatal(err)
				}
				_ = branch.GetKVStore(c.iavl[7]).Get([]byte("height"))
			}
		})
	}
}
