// Package appdbtest holds what tests of the application database (internal/appdb) share:
// the tables a goleveldb database has flushed, which tell whether its memtable was the
// size it was asked to be.
package appdbtest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	dbm "github.com/cosmos/cosmos-db"

	"github.com/flopsnet/flops/internal/appdb"
)

// TablesWithin waits up to d for the goleveldb application database under rootDir
// (rootDir/data/application.db) to have flushed a memtable into a sorted table (*.ldb),
// and returns its tables then: none if it flushed nothing in that time.
func TablesWithin(t testing.TB, rootDir string, d time.Duration) []string {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		tables, err := filepath.Glob(filepath.Join(rootDir, "data", appdb.Name+dbm.DBFileSuffix, "*.ldb"))
		require.NoError(t, err)
		if len(tables) > 0 || time.Now().After(deadline) {
			return tables
		}
	}
}
