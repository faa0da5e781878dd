package branch_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/cosmos/cosmos-sdk/store/v2/cachekv"
	"github.com/cosmos/cosmos-sdk/store/v2/dbadapter"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	"github.com/cosmos/cosmos-sdk/testutil"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/branch"
)

// parentWith is a block's state as a unit sees it: the SDK's cache over a database, here
// holding keys k00..k39 with every other one set.
func parentWith(t *testing.T) storetypes.CacheKVStore {
	t.Helper()
	parent := cachekv.NewStore(dbadapter.Store{DB: dbm.NewMemDB()})
	for i := 0; i < 40; i += 2 {
		parent.Set(key(i), []byte(fmt.Sprintf("v%d", i)))
	}
	return parent
}

func key(i int) []byte { return []byte(fmt.Sprintf("k%02d", i)) }

// iterate lists the keys and values an iterator walks, and closes it.
func iterate(t *testing.T, it storetypes.Iterator) []string {
	t.Helper()
	var out []string
	for ; it.Valid(); it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Close())
	return out
}

// contents lists every key and value of a store, in order.
func contents(t *testing.T, s storetypes.KVStore) []string { return iterate(t, s.Iterator(nil, nil)) }

// TestBranchActsAsTheSDKBranch runs the same random operations on this package's branch
// and on the SDK's cache branch, each over its own copy of one parent: every read, every
// iteration (either direction, any range, with writes before and after it), every branch
// of the branch written back or dropped, and the parent after the write (or after none)
// must be the same.
func TestBranchActsAsTheSDKBranch(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		parentA, parentB := parentWith(t), parentWith(t)
		a := branch.New(fakeMulti{parentA}).GetKVStore(storetypes.NewKVStoreKey("m")).(*branch.KVStore)
		var b storetypes.CacheKVStore = cachekv.NewStore(parentB)
		stores := func() (storetypes.KVStore, storetypes.KVStore) { return a, b }
		for op := 0; op < 60; op++ {
			sa, sb := stores()
			k := key(r.Intn(44))
			switch n := r.Intn(20); {
			case n < 6:
				require.Equal(t, sb.Get(k), sa.Get(k), "seed %d op %d: get %s", seed, op, k)
				require.Equal(t, sb.Has(k), sa.Has(k), "seed %d op %d: has %s", seed, op, k)
			case n < 12:
				v := []byte(fmt.Sprintf("w%d-%d", seed, op))
				sa.Set(k, v)
				sb.Set(k, v)
			case n < 15:
				sa.Delete(k)
				sb.Delete(k)
			case n < 17:
				lo, hi := r.Intn(44), r.Intn(44)
				if lo > hi {
					lo, hi = hi, lo
				}
				start, end := key(lo), key(hi+1)
				if r.Intn(4) == 0 {
					start = nil
				}
				if r.Intn(2) == 0 {
					require.Equal(t, iterate(t, sb.Iterator(start, end)), iterate(t, sa.Iterator(start, end)), "seed %d op %d: iterator", seed, op)
				} else {
					require.Equal(t, iterate(t, sb.ReverseIterator(start, end)), iterate(t, sa.ReverseIterator(start, end)), "seed %d op %d: reverse iterator", seed, op)
				}
			default:
				// a branch of the branch (as a nested CacheContext makes), written or not
				na, nb := sa.(storetypes.CacheWrapper).CacheWrap().(storetypes.CacheKVStore), sb.(storetypes.CacheWrapper).CacheWrap().(storetypes.CacheKVStore)
				for i := 0; i < 4; i++ {
					k := key(r.Intn(44))
					if r.Intn(3) == 0 {
						na.Delete(k)
						nb.Delete(k)
					} else {
						v := []byte(fmt.Sprintf("n%d-%d-%d", seed, op, i))
						na.Set(k, v)
						nb.Set(k, v)
					}
				}
				if r.Intn(2) == 0 {
					na.Write()
					nb.Write()
				}
			}
		}
		require.Equal(t, contents(t, parentWith(t)), contents(t, parentA), "seed %d: the parent unchanged before the write", seed)
		if seed%4 != 0 {
			a.Write()
			b.Write()
		}
		require.Equal(t, contents(t, parentB), contents(t, parentA), "seed %d: the parent after the write", seed)
	}
}

// fakeMulti is a multistore of one key-value store, for the branch's stores.
type fakeMulti struct{ storetypes.CacheKVStore }

func (f fakeMulti) CacheMultiStore() storetypes.CacheMultiStore { panic("unused") }
func (f fakeMulti) CacheMultiStoreWithVersion(int64) (storetypes.CacheMultiStore, error) {
	panic("unused")
}
func (f fakeMulti) GetStore(storetypes.StoreKey) storetypes.Store           { return f.CacheKVStore }
func (f fakeMulti) GetKVStore(storetypes.StoreKey) storetypes.KVStore       { return f.CacheKVStore }
func (f fakeMulti) GetObjKVStore(storetypes.StoreKey) storetypes.ObjKVStore { panic("unused") }
func (f fakeMulti) LatestVersion() int64                                    { return 0 }

// TestBranchReadsCopyNothing: reads of the parent's values allocate nothing and keep
// nothing (the SDK's branch keeps a copy of each key read, which is what this branch saves
// a block hook's unit); a write is kept until the branch is written.
func TestBranchReadsCopyNothing(t *testing.T) {
	parent := parentWith(t)
	keys := make([][]byte, 40)
	for i := range keys {
		keys[i] = key(i)
		_ = parent.Get(keys[i]) // the parent's own cache warmed: its reads allocate no more
	}
	// testing.AllocsPerRun averages over many runs (with GOMAXPROCS at 1), so a stray
	// allocation elsewhere in the process during one run does not count as the branch's.
	// Each run reads through a fresh branch, less what opening one costs: a branch reused
	// across runs would hide a copy it kept in its first run, the one AllocsPerRun warms
	// up with.
	readsAllocate := func(open func() storetypes.KVStore) float64 {
		return testing.AllocsPerRun(100, func() {
			s := open()
			for _, k := range keys {
				_ = s.Get(k)
			}
		}) - testing.AllocsPerRun(100, func() { _ = open() })
	}
	storeKey := storetypes.NewKVStoreKey("m")
	require.Zero(t, readsAllocate(func() storetypes.KVStore { return branch.New(fakeMulti{parent}).GetKVStore(storeKey) }),
		"40 reads of the parent through the branch")
	require.GreaterOrEqual(t, readsAllocate(func() storetypes.KVStore { return cachekv.NewStore(parent) }), float64(20),
		"the SDK's branch keeps what it reads (the comparison this test stands on)")

	s := branch.New(fakeMulti{parent}).GetKVStore(storeKey)
	k := key(2)
	s.Set(k, []byte("mine"))
	require.Equal(t, []byte("v2"), parent.Get(k), "not in the parent before the write")
	require.Equal(t, []byte("mine"), s.Get(k))
	s.(storetypes.CacheKVStore).Write()
	require.Equal(t, []byte("mine"), parent.Get(k))
}

// TestContext: a unit's context on the branch sees its own writes in every store it opens;
// the block sees none of them, nor the unit's events, until it writes the branch, and
// then all of them; a branch made inside the unit (blockhook.Apply, a keeper's own
// CacheContext) lands in the unit only when written; and a unit dropped leaves nothing.
func TestContext(t *testing.T) {
	k1, k2 := storetypes.NewKVStoreKey("market"), storetypes.NewKVStoreKey("gfl")
	block := testutil.DefaultContextWithKeys(map[string]*storetypes.KVStoreKey{"market": k1, "gfl": k2}, nil, nil)
	block.KVStore(k1).Set([]byte("a"), []byte("1"))

	unit, write := branch.Context(block)
	unit.KVStore(k1).Set([]byte("a"), []byte("2"))
	unit.KVStore(k2).Set([]byte("b"), []byte("3"))
	unit.EventManager().EmitEvent(sdk.NewEvent("unit"))
	require.Equal(t, []byte("2"), unit.KVStore(k1).Get([]byte("a")))

	inner, writeInner := unit.CacheContext()
	inner.KVStore(k2).Set([]byte("c"), []byte("4"))
	require.Nil(t, unit.KVStore(k2).Get([]byte("c")), "the inner branch's write before it is written")
	writeInner()
	require.Equal(t, []byte("4"), unit.KVStore(k2).Get([]byte("c")))
	dropped, _ := unit.CacheContext()
	dropped.KVStore(k2).Set([]byte("d"), []byte("5"))

	require.Equal(t, []byte("1"), block.KVStore(k1).Get([]byte("a")), "the block before the write")
	require.Nil(t, block.KVStore(k2).Get([]byte("b")))
	require.Empty(t, block.EventManager().Events())
	write()
	require.Equal(t, []byte("2"), block.KVStore(k1).Get([]byte("a")))
	require.Equal(t, []byte("3"), block.KVStore(k2).Get([]byte("b")))
	require.Equal(t, []byte("4"), block.KVStore(k2).Get([]byte("c")))
	require.Nil(t, block.KVStore(k2).Get([]byte("d")), "a dropped inner branch")
	require.Len(t, block.EventManager().Events(), 1)

	gone, _ := branch.Context(block)
	gone.KVStore(k1).Set([]byte("a"), []byte("9"))
	gone.KVStore(k1).Delete([]byte("a"))
	require.True(t, bytes.Equal([]byte("2"), block.KVStore(k1).Get([]byte("a"))), "a unit not written leaves nothing")
}

// TestContextOtherStores: a unit's transient store is a branch like its others, and its
// object store is the SDK's branch of it; both land in the block only when the unit is
// written.
func TestContextOtherStores(t *testing.T) {
	key, tkey, okey := storetypes.NewKVStoreKey("kv"), storetypes.NewTransientStoreKey("t"), storetypes.NewObjectStoreKey("o")
	block := testutil.DefaultContextWithObjectStore(t, key, tkey, okey).Ctx
	block = block.WithMultiStore(block.MultiStore().CacheMultiStore()) // the block's state, as FinalizeBlock's

	unit, write := branch.Context(block)
	unit.TransientStore(tkey).Set([]byte("t"), []byte("1"))
	unit.ObjectStore(okey).Set([]byte("o"), 42)
	require.Equal(t, 42, unit.ObjectStore(okey).Get([]byte("o")))
	inner, writeInner := unit.CacheContext() // a keeper's own branch inside the unit
	inner.ObjectStore(okey).Set([]byte("p"), 7)
	inner.TransientStore(tkey).Set([]byte("u"), []byte("2"))
	writeInner()
	require.Equal(t, 7, unit.ObjectStore(okey).Get([]byte("p")))
	require.Nil(t, block.TransientStore(tkey).Get([]byte("t")))
	require.Nil(t, block.ObjectStore(okey).Get([]byte("o")))
	write()
	require.Equal(t, []byte("1"), block.TransientStore(tkey).Get([]byte("t")))
	require.Equal(t, 42, block.ObjectStore(okey).Get([]byte("o")))
	require.Equal(t, 7, block.ObjectStore(okey).Get([]byte("p")))
	require.Equal(t, []byte("2"), block.TransientStore(tkey).Get([]byte("u")))
}

// recorder is a store that is not a cache (as IAVL is not): it records the order of the
// writes it is handed.
type recorder struct {
	dbadapter.Store
	order []string
}

func (r *recorder) Set(k, v []byte) { r.order = append(r.order, string(k)); r.Store.Set(k, v) }
func (r *recorder) Delete(k []byte) { r.order = append(r.order, "-"+string(k)); r.Store.Delete(k) }

// TestBranchWritesReachAStoreInKeyOrder: a store whose contents depend on the order of
// its writes (IAVL's tree does) gets the branch's writes in key order, whether the branch
// writes to it directly or through a cache (the block's state, which the branch then
// writes to in no particular order, and which sorts them when written).
func TestBranchWritesReachAStoreInKeyOrder(t *testing.T) {
	var want []string
	for i := range 30 {
		if i%3 == 0 {
			want = append(want, "-"+string(key(i)))
		} else {
			want = append(want, string(key(i)))
		}
	}
	fill := func(s storetypes.KVStore) {
		for _, i := range rand.New(rand.NewSource(7)).Perm(30) {
			if i%3 == 0 {
				s.Delete(key(i))
			} else {
				s.Set(key(i), []byte("v"))
			}
		}
	}
	direct := &recorder{Store: dbadapter.Store{DB: dbm.NewMemDB()}}
	b := branch.New(fakeMulti{storeAsCache{direct}}).GetKVStore(storetypes.NewKVStoreKey("m")).(*branch.KVStore)
	fill(b)
	b.Write()
	require.Equal(t, want, direct.order, "written to the store itself")

	under := &recorder{Store: dbadapter.Store{DB: dbm.NewMemDB()}}
	block := cachekv.NewStore(under)
	b = branch.New(fakeMulti{block}).GetKVStore(storetypes.NewKVStoreKey("m")).(*branch.KVStore)
	fill(b)
	b.Write()
	require.Empty(t, under.order, "held by the block's cache")
	block.Write()
	require.Equal(t, want, under.order, "through the block's cache")
}

// storeAsCache hands a plain store to fakeMulti (whose field is a CacheKVStore).
type storeAsCache struct{ *recorder }

func (storeAsCache) Write() {}
func (s storeAsCache) CacheWrap() storetypes.CacheWrap {
	return cachekv.NewStore(s.recorder)
}
