package appdb_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	dbm "github.com/cosmos/cosmos-db"

	"github.com/flopsnet/flops/internal/appdb"
	"github.com/flopsnet/flops/internal/appdb/appdbtest"
)

// write puts n MiB of distinct keys into db, in blocks' worth of batches.
func write(t *testing.T, db dbm.DB, n int) {
	t.Helper()
	value := make([]byte, 1024)
	for b := 0; b < n; b++ {
		batch := db.NewBatch()
		for i := 0; i < 1024; i++ {
			value[0], value[1] = byte(b), byte(i)
			require.NoError(t, batch.Set([]byte(fmt.Sprintf("key/%04d/%04d", b, i)), value))
		}
		require.NoError(t, batch.Write())
		require.NoError(t, batch.Close())
	}
}

// flopsd's database keeps 12 MiB of a flood's writes in its 64 MiB memtable; opened with
// goleveldb's defaults (the SDK's, WriteBufferMiB 0) it has flushed them into tables.
func TestOpenWriteBufferHoldsWhatDefaultsFlush(t *testing.T) {
	tuned := t.TempDir()
	db, err := appdb.Open(tuned, dbm.GoLevelDBBackend, appdb.DefaultOptions())
	require.NoError(t, err)
	require.IsType(t, &dbm.GoLevelDB{}, db)
	write(t, db, 12)

	sdk := t.TempDir()
	sdkDB, err := appdb.Open(sdk, dbm.GoLevelDBBackend, appdb.Options{})
	require.NoError(t, err)
	write(t, sdkDB, 12)
	require.NotEmpty(t, appdbtest.TablesWithin(t, sdk, 10*time.Second), "goleveldb's 4 MiB memtable flushes 12 MiB")
	require.Empty(t, appdbtest.TablesWithin(t, tuned, 200*time.Millisecond), "a 64 MiB memtable holds 12 MiB")

	// a 1 MiB memtable flushes too: the setting is what goleveldb gets
	small := t.TempDir()
	smallDB, err := appdb.Open(small, dbm.GoLevelDBBackend, appdb.Options{WriteBufferMiB: 1})
	require.NoError(t, err)
	write(t, smallDB, 4)
	require.NotEmpty(t, appdbtest.TablesWithin(t, small, 10*time.Second))

	for _, d := range []dbm.DB{db, sdkDB, smallDB} {
		require.NoError(t, d.Close())
	}
}

// The files are goleveldb's whatever the options: what a node wrote with flopsd's
// options, the SDK's export, rollback and prune (dbm.NewDB, its defaults) read back, and
// the other way round.
func TestOpenFilesReadWithSDKDefaults(t *testing.T) {
	home := t.TempDir()
	db, err := appdb.Open(home, dbm.GoLevelDBBackend, appdb.Options{WriteBufferMiB: 1})
	require.NoError(t, err)
	write(t, db, 4)
	require.NotEmpty(t, appdbtest.TablesWithin(t, home, 10*time.Second), "some of it is in tables")
	require.NoError(t, db.Close())

	sdkDB, err := dbm.NewDB(appdb.Name, dbm.GoLevelDBBackend, filepath.Join(home, "data"))
	require.NoError(t, err)
	for _, k := range []string{"key/0000/0000", "key/0003/1023"} {
		v, err := sdkDB.Get([]byte(k))
		require.NoError(t, err)
		require.Len(t, v, 1024, k)
	}
	require.NoError(t, sdkDB.Set([]byte("written/by/sdk"), []byte{1}))
	require.NoError(t, sdkDB.Close())

	db, err = appdb.Open(home, dbm.GoLevelDBBackend, appdb.DefaultOptions())
	require.NoError(t, err)
	v, err := db.Get([]byte("written/by/sdk"))
	require.NoError(t, err)
	require.Equal(t, []byte{1}, v)
	v, err = db.Get([]byte("key/0002/0512"))
	require.NoError(t, err)
	require.Len(t, v, 1024)
	require.NoError(t, db.Close())
}

// A setting out of range is refused with what was wrong, before anything is created.
func TestOpenRefusesWriteBufferOutOfRange(t *testing.T) {
	for _, mib := range []int{-1, appdb.MaxWriteBufferMiB + 1} {
		home := t.TempDir()
		_, err := appdb.Open(home, dbm.GoLevelDBBackend, appdb.Options{WriteBufferMiB: mib})
		require.ErrorContains(t, err, fmt.Sprintf("application database write buffer %d MiB: must be 0", mib))
		entries, err := os.ReadDir(home)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing created")
	}
	require.NoError(t, appdb.Options{WriteBufferMiB: appdb.MaxWriteBufferMiB}.Validate())
	require.NoError(t, appdb.Options{}.Validate())
}

// Another backend refuses a write buffer set to anything but goleveldb's default or 0: the
// setting would do nothing there. Nothing is created.
func TestOpenRefusesWriteBufferOnOtherBackends(t *testing.T) {
	home := t.TempDir()
	_, err := appdb.Open(home, dbm.PebbleDBBackend, appdb.Options{WriteBufferMiB: 256})
	require.ErrorContains(t, err, "application database write buffer 256 MiB: a goleveldb setting, and the database is on pebbledb")
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing created")

	db, err := appdb.Open(t.TempDir(), dbm.PebbleDBBackend, appdb.Options{})
	require.NoError(t, err, "0: the SDK's options")
	require.NoError(t, db.Close())
}

// Other backends open as the SDK opens them: the setting is goleveldb's.
func TestOpenOtherBackends(t *testing.T) {
	home := t.TempDir()
	db, err := appdb.Open(home, dbm.PebbleDBBackend, appdb.DefaultOptions())
	require.NoError(t, err)
	require.IsType(t, &dbm.PebbleDB{}, db)
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	require.NoError(t, db.Close())
	_, err = os.Stat(filepath.Join(home, "data", appdb.Name+dbm.DBFileSuffix))
	require.NoError(t, err, "in the same place")

	db, err = appdb.Open(t.TempDir(), dbm.MemDBBackend, appdb.DefaultOptions())
	require.NoError(t, err)
	require.IsType(t, &dbm.MemDB{}, db)
}
