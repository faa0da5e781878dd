package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/server"
	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	storecache "github.com/cosmos/cosmos-sdk/store/v2/cache"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/internal/appdb"
	"github.com/flopsnet/flops/internal/appdb/appdbtest"
	"github.com/flopsnet/flops/internal/chain"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// initHome is a node home set up as the README says: flopsd init.
func initHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	root := NewRootCmd()
	root.SetOut(&strings.Builder{})
	root.SetErr(&strings.Builder{})
	root.SetArgs([]string{"init", "node", "--home", home, "--chain-id", "flops-test-1"})
	require.NoError(t, svrcmd.Execute(root, "FLOPSD", home))
	return home
}

// readAppToml is home's config/app.toml.
func readAppToml(t *testing.T, home string) string {
	t.Helper()
	toml, err := os.ReadFile(filepath.Join(home, "config", "app.toml"))
	require.NoError(t, err)
	return string(toml)
}

// replaceInAppToml replaces old, which home's app.toml must hold, with new.
func replaceInAppToml(t *testing.T, home, old, new string) {
	t.Helper()
	toml := readAppToml(t, home)
	require.Contains(t, toml, old)
	require.NoError(t, os.WriteFile(filepath.Join(home, "config", "app.toml"), []byte(strings.Replace(toml, old, new, 1)), 0o600))
}

// startOptions runs flopsd start with args on home up to the point where it would build
// the app, and returns the options it would build it with (app.toml, the flags and their
// defaults, as the SDK resolves them).
func startOptions(t *testing.T, home string, args ...string) servertypes.AppOptions {
	t.Helper()
	root := NewRootCmd()
	start, _, err := root.Find([]string{"start"})
	require.NoError(t, err)
	require.Equal(t, "start", start.Name())
	var opts servertypes.AppOptions
	start.RunE = func(cmd *cobra.Command, _ []string) error {
		opts = server.GetServerContextFromCmd(cmd).Viper
		return nil
	}
	root.SetArgs(append([]string{"start", "--home", home}, args...))
	require.NoError(t, svrcmd.Execute(root, "FLOPSD", home))
	require.NotNil(t, opts)
	return opts
}

// cached: the app start would build keeps the market's store behind the SDK's
// inter-block cache.
func cached(t *testing.T, opts servertypes.AppOptions) bool {
	t.Helper()
	a, ok := newApp(log.NewNopLogger(), dbm.NewMemDB(), opts).(*app.App)
	require.True(t, ok)
	defer func() { require.NoError(t, a.Close()) }() // its snapshot store, which the next app opens
	_, isCache := a.CommitMultiStore().GetKVStore(a.GetKey(markettypes.StoreKey)).(*storecache.CommitKVStoreCache)
	return isCache
}

// A node set up as the README says (flopsd init, then start) runs without the SDK's
// inter-block cache (noInterBlockCache: it slows the market's EndBlock 16-40%), and its
// app.toml says so; an operator who wants it gets it, from the flag or from app.toml.
func TestStartHasNoInterBlockCacheByDefault(t *testing.T) {
	home := initHome(t)
	require.Contains(t, readAppToml(t, home), "\ninter-block-cache = false\n")

	require.False(t, cached(t, startOptions(t, home)), "by default")
	require.True(t, cached(t, startOptions(t, home, "--inter-block-cache=true")), "with --inter-block-cache=true")
	replaceInAppToml(t, home, "\ninter-block-cache = false\n", "\ninter-block-cache = true\n")
	require.True(t, cached(t, startOptions(t, home)), "with inter-block-cache = true in app.toml")

	start, _, err := NewRootCmd().Find([]string{"start"})
	require.NoError(t, err)
	require.Equal(t, "false", start.Flags().Lookup(server.FlagInterBlockCache).DefValue, "start --help says the default")
}

// queryGasLimit is the query-gas-limit start resolves (app.toml, the flag, their
// defaults), which newApp hands to baseapp's SetQueryGasLimit through the SDK's
// server.DefaultBaseappOptions. An app built here has no block to query, so the limit's
// effect on queries is tested on a running app (tests/integration
// TestWholeTableScanStopsAtQueryGasLimit).
func queryGasLimit(t *testing.T, opts servertypes.AppOptions) uint64 {
	t.Helper()
	return cast.ToUint64(opts.Get(server.FlagQueryGasLimit))
}

// A node set up as the README says bounds the gas of each query at
// chain.DefaultQueryGasLimit (the SDK's default is no limit: one query could read a whole
// table; tests/integration TestWholeTableScanStopsAtQueryGasLimit), and its app.toml says
// so. A node whose app.toml predates the setting gets the bound too; an operator who sets
// 0 (no limit) or another value, in app.toml or with the flag, gets that.
func TestStartBoundsQueryGas(t *testing.T) {
	home := initHome(t)
	line := fmt.Sprintf("\nquery-gas-limit = \"%d\"\n", chain.DefaultQueryGasLimit)
	require.Contains(t, readAppToml(t, home), line)

	require.Equal(t, chain.DefaultQueryGasLimit, queryGasLimit(t, startOptions(t, home)), "by default")
	require.Equal(t, uint64(7_000_000), queryGasLimit(t, startOptions(t, home, "--query-gas-limit=7000000")), "with the flag")
	replaceInAppToml(t, home, line, "\nquery-gas-limit = \"0\"\n")
	require.Zero(t, queryGasLimit(t, startOptions(t, home)), "with 0 (no limit) in app.toml")
	replaceInAppToml(t, home, "\nquery-gas-limit = \"0\"\n", "\n")
	require.Equal(t, chain.DefaultQueryGasLimit, queryGasLimit(t, startOptions(t, home)), "with no query-gas-limit in app.toml")

	start, _, err := NewRootCmd().Find([]string{"start"})
	require.NoError(t, err)
	require.Equal(t, strconv.FormatUint(chain.DefaultQueryGasLimit, 10), start.Flags().Lookup(server.FlagQueryGasLimit).DefValue, "start --help says the default")
}

// block-executor = "block-stm" (app.toml or the flag) is refused at start, with what to
// set instead: flopsd does not install the SDK's parallel runner, so the setting would
// be accepted and ignored. "sequential" starts.
func TestStartRefusesBlockSTM(t *testing.T) {
	home := initHome(t)
	startWith := func(args ...string) error {
		root := NewRootCmd()
		start, _, err := root.Find([]string{"start"})
		require.NoError(t, err)
		ran := false
		start.RunE = func(*cobra.Command, []string) error { ran = true; return nil }
		root.SetArgs(append([]string{"start", "--home", home}, args...))
		err = svrcmd.Execute(root, "FLOPSD", home)
		require.Equal(t, err == nil, ran, "start runs exactly when it is not refused")
		return err
	}
	require.NoError(t, startWith())
	require.NoError(t, startWith("--block-executor", "sequential"))
	err := startWith("--block-executor", "block-stm")
	require.ErrorContains(t, err, `block-executor "block-stm": flopsd executes a block's transactions in sequence`)
	require.ErrorContains(t, err, `set block-executor = "sequential" in app.toml`)

	replaceInAppToml(t, home, "\nblock-executor = \"sequential\"\n", "\nblock-executor = \"block-stm\"\n")
	require.ErrorContains(t, startWith(), `block-executor "block-stm"`)
}

// start opens data/application.db with appdb's options (a 64 MiB goleveldb memtable by
// default, app.toml's [app-db] write-buffer-mib, or the flag) and refuses a setting out
// of range before it runs.
func TestStartOpensAppDBWithWriteBuffer(t *testing.T) {
	home := initHome(t)
	toml := readAppToml(t, home)
	require.Contains(t, toml, "\n[app-db]\n")
	require.Contains(t, toml, "\nwrite-buffer-mib = 64\n")

	// flushed runs flopsd start with args, up to its opening of the application
	// database, and reports whether 8 MiB written to what it opened reached its tables
	// (a memtable under 8 MiB flushes them).
	stop := errors.New("the test stops start here")
	defer func(open func(string, dbm.BackendType, appdb.Options) (dbm.DB, error)) { openAppDB = open }(openAppDB)
	flushed := func(args ...string) (bool, error) {
		opened, wrote := false, false
		openAppDB = func(rootDir string, backend dbm.BackendType, o appdb.Options) (dbm.DB, error) {
			opened = true
			require.Equal(t, home, rootDir)
			require.Equal(t, dbm.GoLevelDBBackend, backend)
			dataHome := t.TempDir()
			db, err := appdb.Open(dataHome, backend, o)
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			batch := db.NewBatch()
			for i := 0; i < 8*1024; i++ {
				require.NoError(t, batch.Set([]byte(strconv.Itoa(i)), make([]byte, 1024)))
			}
			require.NoError(t, batch.Write())
			wrote = len(appdbtest.TablesWithin(t, dataHome, 2*time.Second)) > 0
			return nil, stop
		}
		root := NewRootCmd()
		root.SetArgs(append([]string{"start", "--home", home}, args...))
		err := svrcmd.Execute(root, "FLOPSD", home)
		require.Error(t, err)
		require.Equal(t, errors.Is(err, stop), opened, "start opens the database exactly when it is not refused")
		if opened {
			err = nil
		}
		return wrote, err
	}
	wrote, err := flushed()
	require.NoError(t, err)
	require.False(t, wrote, "64 MiB by default")
	wrote, err = flushed("--" + flagAppDBWriteBuffer + "=1")
	require.NoError(t, err)
	require.True(t, wrote, "1 MiB from the flag")

	_, err = flushed("--" + flagAppDBWriteBuffer + "=-1")
	require.ErrorContains(t, err, "app-db.write-buffer-mib: application database write buffer -1 MiB: must be 0")

	replaceInAppToml(t, home, "\nwrite-buffer-mib = 64\n", "\nwrite-buffer-mib = 1\n")
	wrote, err = flushed()
	require.NoError(t, err)
	require.True(t, wrote, "1 MiB from app.toml")

	start, _, err := NewRootCmd().Find([]string{"start"})
	require.NoError(t, err)
	require.Equal(t, "64", start.Flags().Lookup(flagAppDBWriteBuffer).DefValue, "start --help says the default")
}
