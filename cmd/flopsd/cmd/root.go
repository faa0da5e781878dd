// Package cmd builds flopsd's command tree: node (start, comet, export, rollback),
// genesis, keys, status, version, and autocli tx/query commands for every module.
package cmd

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"errors"
	"os"
	"time"

	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/spf13/pflag"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	cmtcfg "github.com/cometbft/cometbft/config"

	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log/v2"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/config"
	"github.com/cosmos/cosmos-sdk/client/debug"
	"github.com/cosmos/cosmos-sdk/client/keys"
	"github.com/cosmos/cosmos-sdk/client/pruning"
	"github.com/cosmos/cosmos-sdk/client/rpc"
	"github.com/cosmos/cosmos-sdk/client/snapshot"
	"github.com/cosmos/cosmos-sdk/server"
	serverconfig "github.com/cosmos/cosmos-sdk/server/config"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	authcli "github.com/cosmos/cosmos-sdk/x/auth/client/cli"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	genutilcli "github.com/cosmos/cosmos-sdk/x/genutil/client/cli"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/internal/appdb"
	"github.com/flopsnet/flops/internal/chain"
)

// NewRootCmd returns flopsd's root command.
func NewRootCmd() *cobra.Command {
	// A throw-away app gives the codecs and the module basics the CLI needs.
	tempDir, err := os.MkdirTemp("", "flopsd-cli")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(tempDir) }()
	tempApp := app.New(log.NewNopLogger(), dbm.NewMemDB(), false, simtestutil.NewAppOptionsWithFlagHome(tempDir))

	initClientCtx := client.Context{}.
		WithCodec(tempApp.AppCodec()).
		WithInterfaceRegistry(tempApp.InterfaceRegistry()).
		WithTxConfig(tempApp.TxConfig()).
		WithLegacyAmino(tempApp.LegacyAmino()).
		WithInput(os.Stdin).
		WithAccountRetriever(authtypes.AccountRetriever{}).
		WithHomeDir(app.DefaultNodeHome).
		WithViper("FLOPSD")

	rootCmd := &cobra.Command{
		Use:           "flopsd",
		Short:         "flops: an open market for GPU compute (node and CLI)",
		SilenceErrors: true,
		// an error is printed alone, first (main), not after the whole usage
		SilenceUsage: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.OutOrStdout())
			cmd.SetErr(cmd.ErrOrStderr())

			clientCtx := initClientCtx.WithCmdContext(cmd.Context())
			clientCtx, err := client.ReadPersistentCommandFlags(clientCtx, cmd.Flags())
			if err != nil {
				return err
			}
			clientCtx, err = config.ReadFromClientConfig(clientCtx)
			if err != nil {
				return err
			}
			if err := client.SetCmdClientContextHandler(clientCtx, cmd); err != nil {
				return err
			}
			appTemplate, appConfig := initAppConfig()
			return server.InterceptConfigsPreRunHandler(cmd, appTemplate, appConfig, initCometBFTConfig())
		},
	}

	initRootCmd(rootCmd, tempApp)

	autoCliOpts := tempApp.AutoCliOpts()
	autoCliOpts.ClientCtx = initClientCtx
	if err := autoCliOpts.EnhanceRootCommand(rootCmd); err != nil {
		panic(err)
	}
	flopsTxDefaults(rootCmd)
	queryPageDefaults(rootCmd)
	genesisValidateAcrossModules(rootCmd)
	return rootCmd
}

// genesisValidateAcrossModules makes `flopsd genesis validate` and `flopsd genesis
// collect-gentxs` also check the rules between modules' params
// (app.CheckGenesisAcrossModules), which the SDK's check of each module alone does not see
// and InitChain would refuse: a file that validates starts, and collect-gentxs writes no
// genesis the chain would refuse at its launch. A file it cannot read or decode goes on
// to the SDK's command, which says what is wrong.
func genesisValidateAcrossModules(root *cobra.Command) {
	for _, name := range []string{"validate", "collect-gentxs"} {
		v, _, err := root.Find([]string{"genesis", name})
		if err != nil || v.Name() != name || v.RunE == nil {
			panic("flopsd has no genesis " + name + " command")
		}
		inner := v.RunE
		v.RunE = func(cmd *cobra.Command, args []string) error {
			path := server.GetServerContextFromCmd(cmd).Config.GenesisFile()
			if name == "validate" && len(args) > 0 {
				path = args[0]
			}
			var gs app.GenesisState
			if gen, err := genutiltypes.AppGenesisFromFile(path); err == nil && json.Unmarshal(gen.AppState, &gs) == nil {
				if err := app.CheckGenesisAcrossModules(client.GetClientContextFromCmd(cmd).Codec, gs); err != nil {
					return fmt.Errorf("error validating genesis file %s: %w", path, err)
				}
			}
			return inner(cmd, args)
		}
	}
}

// queryPageLimit is the page a list query asks for when --page-limit is not given.
const queryPageLimit = 100

// queryPageDefaults makes every list query ask for a page of queryPageLimit by default.
// autocli sends the page flags as they are, and a limit of 0 makes the SDK's pagination
// take its default page of 100 and count every entry of the list too (count_total): on a
// big chain that count reads a whole table, and the node stops it at its query gas limit
// (chain.DefaultQueryGasLimit), so `flopsd q market tasks` would have been refused where
// its first page costs little. The same page, without the count unless
// --page-count-total asks for it.
func queryPageDefaults(root *cobra.Command) {
	q, _, err := root.Find([]string{"query"})
	if err != nil || q == root {
		panic("flopsd has no query command")
	}
	limit := strconv.Itoa(queryPageLimit)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("page-limit"); f != nil {
			if err := f.Value.Set(limit); err != nil {
				panic(err)
			}
			f.DefValue = limit
			f.Usage = "the page's length (without --page-count-total the list is not counted)"
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(q)
}

// flopsModules are the flops modules' tx command names.
var flopsModules = []string{"dps", "gfl", "market", "reputation", "stakingslash"}

// flopsTxDefaults makes every flops tx estimate its gas by default (--gas auto with
// --gas-adjustment 1.5): the SDK's fixed 200,000 is too little for some (a cancel-job that
// refunds many tasks), and a tx out of gas is reported with code 0 by a sync broadcast and
// fails in the block. With --offline nothing can be simulated, so an unset --gas is the
// SDK's 200,000 there.
func flopsTxDefaults(root *cobra.Command) {
	txCmd, _, err := root.Find([]string{"tx"})
	if err != nil || txCmd == root {
		panic("flopsd has no tx command")
	}
	for _, m := range flopsModules {
		mod, _, err := txCmd.Find([]string{m})
		if err != nil || mod == txCmd {
			panic("flopsd has no tx " + m + " command")
		}
		for _, c := range mod.Commands() {
			setGasDefaults(c)
		}
	}
}

func setGasDefaults(c *cobra.Command) {
	gas := c.Flags().Lookup(flags.FlagGas)
	adj := c.Flags().Lookup(flags.FlagGasAdjustment)
	if gas == nil || adj == nil {
		return // not a tx (a group)
	}
	for _, d := range []struct {
		f *pflag.Flag
		v string
	}{{gas, flags.GasFlagAuto}, {adj, "1.5"}} {
		if err := d.f.Value.Set(d.v); err != nil {
			panic(err)
		}
		d.f.DefValue = d.v
	}
	gas.Usage = `gas limit of the tx, or "auto" to estimate it by simulating the tx (flops txs default to auto, times --gas-adjustment; 200000 with --offline)`
	pre := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if off, _ := cmd.Flags().GetBool(flags.FlagOffline); off && !gas.Changed {
			if err := gas.Value.Set(strconv.Itoa(flags.DefaultGasLimit)); err != nil {
				return err
			}
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
}

// initCometBFTConfig: a dev chain makes a block about every second.
func initCometBFTConfig() *cmtcfg.Config {
	cfg := cmtcfg.DefaultConfig()
	cfg.Consensus.TimeoutCommit = time.Second
	return cfg
}

// initAppConfig: a non-zero minimum gas price (chain.DefaultMinGasPrice; a localnet sets
// zero), a gas limit on each query (chain.DefaultQueryGasLimit, boundedQueries), the REST
// and gRPC servers on, and no inter-block cache (noInterBlockCache).
func initAppConfig() (string, any) {
	cfg := serverconfig.DefaultConfig()
	cfg.MinGasPrices = chain.DefaultMinGasPrice
	cfg.QueryGasLimit = chain.DefaultQueryGasLimit
	cfg.API.Enable = true
	cfg.GRPC.Enable = true
	cfg.InterBlockCache = false
	return serverconfig.DefaultConfigTemplate + appDBConfigTemplate, appConfig{
		Config: *cfg,
		AppDB:  appDBConfig{WriteBufferMiB: appdb.DefaultWriteBufferMiB},
	}
}

// appConfig is app.toml: the SDK's settings and flopsd's [app-db] section.
type appConfig struct {
	serverconfig.Config `mapstructure:",squash"`

	AppDB appDBConfig `mapstructure:"app-db"`
}

// appDBConfig is app.toml's [app-db]: how start opens data/application.db.
type appDBConfig struct {
	WriteBufferMiB int `mapstructure:"write-buffer-mib"`
}

// flagAppDBWriteBuffer is start's flag and app.toml's key for the application
// database's memtable size.
const flagAppDBWriteBuffer = "app-db.write-buffer-mib"

const appDBConfigTemplate = `
###############################################################################
###                      Application Database (flopsd)                      ###
###############################################################################

[app-db]

# The memtable size, in MiB, of data/application.db on goleveldb (app-db-backend or
# db_backend). A job submission leaves several new keys in the state; goleveldb's
# default 4 MiB memtable flushes and compacts them many times over, on the cores the
# block's execution needs. 0 opens the database with goleveldb's defaults (4 MiB, 2 MiB
# tables). Other backends take only 0 or the default, and open as the SDK opens them.
# The node holds up to two memtables in memory.
write-buffer-mib = {{ .AppDB.WriteBufferMiB }}
`

// addAppDBFlag adds --app-db.write-buffer-mib to start, which checks the setting (from
// the flag or app.toml) before it runs.
func addAppDBFlag(startCmd *cobra.Command) {
	startCmd.Flags().Int(flagAppDBWriteBuffer, appdb.DefaultWriteBufferMiB,
		"Memtable size in MiB of the application database on goleveldb (0: goleveldb's default of 4)")
	pre := startCmd.PreRunE
	startCmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if err := appDBOptions(cmd).Validate(); err != nil {
			return fmt.Errorf("%s: %w", flagAppDBWriteBuffer, err)
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
}

// appDBOptions are the application database's options that cmd (start) was given.
func appDBOptions(cmd *cobra.Command) appdb.Options {
	return appdb.Options{WriteBufferMiB: server.GetServerContextFromCmd(cmd).Viper.GetInt(flagAppDBWriteBuffer)}
}

// openAppDB is how start opens data/application.db (a test swaps it to see what start
// asks for). The SDK's other commands that open the database (export, rollback, prune)
// open it with their defaults: the files are the same either way.
var openAppDB = appdb.Open

// sequentialOnly makes start refuse a block executor other than "sequential": the SDK
// offers block-stm (block-executor in app.toml, --block-executor), but only to an app
// that installs its runner (baseapp/blockexec), and flopsd does not: its modules have
// not been checked for parallel execution. Without this, the setting would be accepted
// and the blocks run in sequence all the same.
func sequentialOnly(startCmd *cobra.Command) {
	f := startCmd.Flags().Lookup(server.FlagBlockExecutor)
	if f == nil {
		panic("flopsd start has no --" + server.FlagBlockExecutor)
	}
	f.Usage = `Block executor mode: flopsd supports only "sequential"`
	pre := startCmd.PreRunE
	startCmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		v := server.GetServerContextFromCmd(cmd).Viper
		if e := v.GetString(server.FlagBlockExecutor); e != "" && e != serverconfig.BlockExecutorSequential {
			return fmt.Errorf("block-executor %q: flopsd executes a block's transactions in sequence (block-stm is not installed: its modules are not checked for parallel execution); set block-executor = %q in app.toml", e, serverconfig.BlockExecutorSequential)
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
}

// noInterBlockCache makes start's --inter-block-cache default false, as initAppConfig
// writes it in a new app.toml. The SDK's inter-block cache (an ARC of 1,000 entries in
// front of each store) sits over IAVL's own cache of 100,000 fast nodes, and its misses
// and evictions on the scheduler's random reads of nodes cost more than its hits save:
// the market's EndBlock assigning 1,000 tasks takes 16-40% longer behind it at 1,000 to
// 100,000 nodes (BenchmarkEndBlockAssignInterBlockCache). An operator can still turn it
// on, in app.toml or with the flag.
func noInterBlockCache(startCmd *cobra.Command) {
	f := startCmd.Flags().Lookup(server.FlagInterBlockCache)
	if f == nil {
		panic("flopsd start has no --" + server.FlagInterBlockCache)
	}
	if err := f.Value.Set("false"); err != nil {
		panic(err)
	}
	f.DefValue = "false"
	f.Usage = "Enable the SDK's inter-block cache (an ARC of 1,000 entries per store; flopsd's default is off: it slows the market's EndBlock)"
}

// boundedQueries makes start's --query-gas-limit default chain.DefaultQueryGasLimit, as
// initAppConfig writes it in a new app.toml, so that a node whose app.toml has no
// query-gas-limit (one written before flopsd set it) is not left with the SDK's 0, no
// limit, which lets one query read a whole table (chain.DefaultQueryGasLimit). An app.toml
// that says 0 is an operator's choice and is kept; so is the flag.
func boundedQueries(startCmd *cobra.Command) {
	f := startCmd.Flags().Lookup(server.FlagQueryGasLimit)
	if f == nil {
		panic("flopsd start has no --" + server.FlagQueryGasLimit)
	}
	limit := strconv.FormatUint(chain.DefaultQueryGasLimit, 10)
	if err := f.Value.Set(limit); err != nil {
		panic(err)
	}
	f.DefValue = limit
	f.Usage = "Maximum gas one gRPC, REST or ABCI query may spend (0: no limit)"
}

func initRootCmd(rootCmd *cobra.Command, tempApp *app.App) {
	cfg := sdk.GetConfig()
	cfg.Seal()

	basics := tempApp.BasicModuleManager
	rootCmd.AddCommand(
		initCmd(basics),
		debug.Cmd(),
		pruning.Cmd(newApp, app.DefaultNodeHome),
		snapshot.Cmd(newApp),
	)

	var startCmd *cobra.Command
	server.AddCommandsWithStartCmdOptions(rootCmd, app.DefaultNodeHome, newApp, appExport, server.StartCmdOptions{
		AddFlags: func(cmd *cobra.Command) {
			startCmd = cmd
			noInterBlockCache(cmd)
			boundedQueries(cmd)
			sequentialOnly(cmd)
			addAppDBFlag(cmd)
		},
		DBOpener: func(rootDir string, backend dbm.BackendType) (dbm.DB, error) {
			return openAppDB(rootDir, backend, appDBOptions(startCmd))
		},
	})

	rootCmd.AddCommand(
		server.ModuleHashByHeightQuery(newApp), // as server.AddCommands adds it
		server.StatusCommand(),
		genutilcli.Commands(tempApp.TxConfig(), basics, app.DefaultNodeHome),
		queryCommand(),
		txCommand(),
		keys.Commands(),
	)
}

func queryCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:                        "query",
		Aliases:                    []string{"q"},
		Short:                      "Querying subcommands",
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}
	cmd.AddCommand(
		rpc.WaitTxCmd(),
		server.QueryBlockCmd(),
		server.QueryBlocksCmd(),
		server.QueryBlockResultsCmd(),
		authcli.QueryTxsByEventsCmd(),
		authcli.QueryTxCmd(),
	)
	return cmd
}

func txCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:                        "tx",
		Short:                      "Transactions subcommands",
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}
	cmd.AddCommand(
		authcli.GetSignCommand(),
		authcli.GetSignBatchCommand(),
		authcli.GetMultiSignCommand(),
		authcli.GetMultiSignBatchCmd(),
		authcli.GetValidateSignaturesCommand(),
		authcli.GetBroadcastCommand(),
		authcli.GetEncodeCommand(),
		authcli.GetDecodeCommand(),
		authcli.GetSimulateCmd(),
	)
	return cmd
}

func newApp(logger log.Logger, db dbm.DB, appOpts servertypes.AppOptions) servertypes.Application {
	a := app.New(logger, db, true, appOpts, server.DefaultBaseappOptions(appOpts)...)
	// the flops metrics, served by CometBFT's Prometheus listener ([instrumentation]) with
	// its own; one app per process
	if err := prometheus.DefaultRegisterer.Register(a.Metrics()); err != nil {
		logger.Error("flops metrics not registered", "err", err)
	}
	return a
}

func appExport(
	logger log.Logger, db dbm.DB, height int64, forZeroHeight bool, jailAllowedAddrs []string,
	appOpts servertypes.AppOptions, modulesToExport []string,
) (servertypes.ExportedApp, error) {
	viperOpts, ok := appOpts.(*viper.Viper)
	if !ok {
		return servertypes.ExportedApp{}, errors.New("appOpts is not a viper.Viper")
	}
	// The exporting app must not re-run invariants as it loads.
	viperOpts.Set(server.FlagInvCheckPeriod, 0)
	loadLatest := height == -1
	a := app.New(logger, db, loadLatest, viperOpts)
	if !loadLatest {
		if err := a.LoadHeight(height); err != nil {
			return servertypes.ExportedApp{}, err
		}
	}
	return a.ExportAppStateAndValidators(forZeroHeight, jailAllowedAddrs, modulesToExport)
}

// initCmd is the SDK's init with a finite block gas limit in the genesis it writes
// (app.DefaultBlockMaxGas; CometBFT's default is unlimited).
func initCmd(basics module.BasicManager) *cobra.Command {
	cmd := genutilcli.InitCmd(basics, app.DefaultNodeHome)
	cmd.PostRunE = func(cmd *cobra.Command, _ []string) error {
		path := server.GetServerContextFromCmd(cmd).Config.GenesisFile()
		gen, err := genutiltypes.AppGenesisFromFile(path)
		if err != nil {
			return err
		}
		if gen.Consensus == nil || gen.Consensus.Params == nil || gen.Consensus.Params.Block.MaxGas > 0 {
			return nil
		}
		gen.Consensus.Params.Block.MaxGas = app.DefaultBlockMaxGas
		return gen.SaveAs(path)
	}
	return cmd
}
