// Package apptest runs the real flops app in-process, block by block, for integration
// tests: one validator, named funded accounts, signed transactions delivered through
// FinalizeBlock, and contexts to read committed state or write it out of band.
package apptest

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	abci "github.com/cometbft/cometbft/abci/types"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	cmttypes "github.com/cometbft/cometbft/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/cosmos/gogoproto/proto"

	"cosmossdk.io/log/v2"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client/flags"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	cryptocodec "github.com/cosmos/cosmos-sdk/crypto/codec"
	sdked25519 "github.com/cosmos/cosmos-sdk/crypto/keys/ed25519"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	"github.com/cosmos/cosmos-sdk/testutil/mock"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/internal/chain"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
)

// ChainID is the chain id of test apps.
const ChainID = "flops-test-1"

// GenesisTime is the genesis block time.
var GenesisTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultBalance is what every named account holds at genesis: 1,000,000 DPS.
var DefaultBalance = sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 1_000_000_000_000))

// Account is a funded test account.
type Account struct {
	Name    string
	Priv    *secp256k1.PrivKey
	Address sdk.AccAddress
}

// String returns the bech32 address.
func (a *Account) String() string { return a.Address.String() }

// App is a flops app driven block by block.
type App struct {
	*app.App
	t         testing.TB
	accounts  map[string]*Account
	names     []string
	height    int64
	blockTime time.Time
	// BlockInterval is the time between blocks (default 1 s).
	BlockInterval time.Duration
	proposer      []byte
	// HeaderHash, when set, gives each block's header hash (default BlockHash): a test
	// plays a proposer that chooses its block's hash with it.
	HeaderHash func(height int64) []byte
	// LastResults is the result of the last FinalizeBlock.
	LastResults *abci.ResponseFinalizeBlock
	pending     bool
	// Propose, when set, makes each block as CometBFT does: the validator's
	// PrepareProposal (which puts its VRF's randomness tx first, LastResults.TxResults[0]),
	// then ProcessProposal, which must accept it.
	Propose     bool
	proposerKey cmted25519.PrivKey
}

type config struct {
	accounts      []string
	genesis       []func(cdcGenesis GenesisEditor)
	queryGasLimit uint64
}

// GenesisEditor lets an option edit a module's genesis before InitChain.
type GenesisEditor struct {
	App     *app.App
	Genesis app.GenesisState
}

// Edit decodes a module's genesis into v, calls fn (which edits v), and stores v back.
func (e GenesisEditor) Edit(module string, v proto.Message, fn func()) {
	e.App.AppCodec().MustUnmarshalJSON(e.Genesis[module], v)
	fn()
	e.Genesis[module] = e.App.AppCodec().MustMarshalJSON(v)
}

// Option configures a test app.
type Option func(*config)

// WithAccounts adds funded accounts by name (each gets DefaultBalance).
func WithAccounts(names ...string) Option {
	return func(c *config) { c.accounts = append(c.accounts, names...) }
}

// WithQueryGasLimit bounds the app's queries at limit gas instead of
// chain.DefaultQueryGasLimit: a test of what the limit stops, on a state far smaller than
// the one the default would need.
func WithQueryGasLimit(limit uint64) Option {
	return func(c *config) { c.queryGasLimit = limit }
}

// WithGenesis edits the genesis state before InitChain.
func WithGenesis(fn func(e GenesisEditor)) Option {
	return func(c *config) { c.genesis = append(c.genesis, fn) }
}

// New starts a flops app with one validator (account "validator") and the named
// accounts, the GPU classes without their PoCP power ranges (its GPUs are mocks), and
// commits the first block. Its queries (a.Query, the path of every gRPC and ABCI query)
// are bounded at chain.DefaultQueryGasLimit, as a node flopsd init set up bounds them
// (WithQueryGasLimit).
func New(t testing.TB, opts ...Option) *App {
	t.Helper()
	ta, err := start(t, opts...)
	require.NoError(t, err)
	ta.NextBlock()
	return ta
}

// InitChainError is the error of the chain's InitChain for the genesis opts make (nil
// when the chain starts): for a genesis each module's own check lets through.
func InitChainError(t testing.TB, opts ...Option) error {
	t.Helper()
	_, err := start(t, opts...)
	return err
}

// start builds the app and runs InitChain.
func start(t testing.TB, opts ...Option) (*App, error) {
	t.Helper()
	cfg := &config{queryGasLimit: chain.DefaultQueryGasLimit}
	for _, o := range opts {
		o(cfg)
	}
	a := app.New(errorLogger(t), dbm.NewMemDB(), true, simtestutil.AppOptionsMap{flags.FlagHome: t.TempDir()},
		baseapp.SetChainID(ChainID), baseapp.SetQueryGasLimit(cfg.queryGasLimit))
	ta := &App{
		App: a, t: t, accounts: map[string]*Account{},
		blockTime: GenesisTime, BlockInterval: time.Second,
	}
	names := append([]string{"validator"}, cfg.accounts...)
	for _, n := range names {
		ta.addAccount(n)
	}

	gs := a.DefaultGenesis()
	// the validator's consensus key: the same in every test app, so that two apps fed the
	// same blocks reach the same beacon values (its VRF makes them)
	privVal := mock.PV{PrivKey: &sdked25519.PrivKey{Key: []byte(cmted25519.GenPrivKeyFromSecret([]byte("flops-apptest/validator")))}}
	pubKey, err := privVal.GetPubKey()
	require.NoError(t, err)
	val := cmttypes.NewValidator(pubKey, 1)
	ta.proposer = val.Address
	ta.proposerKey = cmted25519.PrivKey(privVal.PrivKey.Bytes())
	a.SetProposerKey(ta.proposerKey)
	ta.genesisAccountsAndValidator(gs, val)
	// The test app's "GPUs" are mocks answering PoCP with the CPU solver (as on the dev
	// chain, scripts/localnet.sh): the launch class table's power floors would re-class
	// every node at its first rebalance. A test of the floors sets them (WithGenesis).
	var gfl gfltypes.GenesisState
	GenesisEditor{App: a, Genesis: gs}.Edit(gfltypes.ModuleName, &gfl, func() {
		gfl.Params.GpuClasses = gfltypes.WithoutPowerRanges(gfl.Params.GpuClasses)
	})
	for _, fn := range cfg.genesis {
		fn(GenesisEditor{App: a, Genesis: gs})
	}

	stateBytes, err := json.Marshal(gs)
	require.NoError(t, err)
	_, err = a.InitChain(&abci.RequestInitChain{
		ChainId:         ChainID,
		Time:            GenesisTime,
		Validators:      []abci.ValidatorUpdate{},
		ConsensusParams: app.DefaultConsensusParams(),
		AppStateBytes:   stateBytes,
		InitialHeight:   1,
	})
	return ta, err
}

func (a *App) addAccount(name string) {
	priv := secp256k1.GenPrivKeyFromSecret([]byte("flops-apptest/" + name))
	acc := &Account{Name: name, Priv: priv, Address: sdk.AccAddress(priv.PubKey().Address())}
	a.accounts[name] = acc
	a.names = append(a.names, name)
}

// genesisAccountsAndValidator funds every account and bonds the validator, keeping the
// rest of the app's default genesis (ugfl send flag, metadata, epochs) intact.
func (a *App) genesisAccountsAndValidator(gs app.GenesisState, val *cmttypes.Validator) {
	cdc := a.AppCodec()
	var genAccs []authtypes.GenesisAccount
	var balances []banktypes.Balance
	supply := sdk.NewCoins()
	for _, n := range a.names {
		acc := a.accounts[n]
		genAccs = append(genAccs, authtypes.NewBaseAccount(acc.Address, acc.Priv.PubKey(), 0, 0))
		balances = append(balances, banktypes.Balance{Address: acc.String(), Coins: DefaultBalance})
		supply = supply.Add(DefaultBalance...)
	}
	authGen := authtypes.NewGenesisState(authtypes.DefaultParams(), genAccs)
	gs[authtypes.ModuleName] = cdc.MustMarshalJSON(authGen)

	bond := sdk.DefaultPowerReduction
	pk, err := cryptocodec.FromCmtPubKeyInterface(val.PubKey)
	require.NoError(a.t, err)
	pkAny, err := codectypes.NewAnyWithValue(pk)
	require.NoError(a.t, err)
	validator := stakingtypes.Validator{
		OperatorAddress:   sdk.ValAddress(val.Address).String(),
		ConsensusPubkey:   pkAny,
		Status:            stakingtypes.Bonded,
		Tokens:            bond,
		DelegatorShares:   sdkmath.LegacyOneDec(),
		UnbondingTime:     time.Unix(0, 0).UTC(),
		Commission:        stakingtypes.NewCommission(sdkmath.LegacyZeroDec(), sdkmath.LegacyZeroDec(), sdkmath.LegacyZeroDec()),
		MinSelfDelegation: sdkmath.ZeroInt(),
	}
	var stakingGen stakingtypes.GenesisState
	cdc.MustUnmarshalJSON(gs[stakingtypes.ModuleName], &stakingGen)
	stakingGen.Validators = []stakingtypes.Validator{validator}
	stakingGen.Delegations = []stakingtypes.Delegation{
		stakingtypes.NewDelegation(a.accounts["validator"].String(), validator.OperatorAddress, sdkmath.LegacyOneDec()),
	}
	gs[stakingtypes.ModuleName] = cdc.MustMarshalJSON(&stakingGen)

	bondCoins := sdk.NewCoins(sdk.NewCoin(app.BondDenom, bond))
	balances = append(balances, banktypes.Balance{
		Address: authtypes.NewModuleAddress(stakingtypes.BondedPoolName).String(), Coins: bondCoins,
	})
	supply = supply.Add(bondCoins...)
	var bankGen banktypes.GenesisState
	cdc.MustUnmarshalJSON(gs[banktypes.ModuleName], &bankGen)
	bankGen.Balances = balances
	bankGen.Supply = supply
	gs[banktypes.ModuleName] = cdc.MustMarshalJSON(&bankGen)
}

// Account returns a named account; it fails the test if there is none.
func (a *App) Account(name string) *Account {
	acc, ok := a.accounts[name]
	if !ok {
		a.t.Fatalf("apptest: no account %q", name)
	}
	return acc
}

// SetT makes the app report later failures to t: each input of a fuzz target has its own.
func (a *App) SetT(t testing.TB) { a.t = t }

// Height is the height of the last committed block.
func (a *App) Height() int64 { return a.height }

// BlockTime is the time of the last committed block.
func (a *App) BlockTime() time.Time { return a.blockTime }

func (a *App) nextHeader() cmtproto.Header {
	return cmtproto.Header{ChainID: ChainID, Height: a.height + 1, Time: a.blockTime.Add(a.BlockInterval), ProposerAddress: a.proposer}
}

// Ctx is a read-only view of the committed state (writes to it are dropped).
func (a *App) Ctx() sdk.Context {
	ctx := a.NewContextLegacy(true, cmtproto.Header{ChainID: ChainID, Height: a.height, Time: a.blockTime})
	ctx, _ = ctx.CacheContext()
	return ctx
}

// Prepare writes state out of band; the writes land in the next block.
func (a *App) Prepare(fn func(ctx sdk.Context)) {
	var ctx sdk.Context
	if !a.pending {
		ctx = a.NewNextBlockContext(a.nextHeader())
		a.pending = true
	} else {
		ctx = a.NewContextLegacy(false, a.nextHeader())
	}
	fn(ctx)
}

// NextBlock finalizes and commits a block with the given raw txs.
func (a *App) NextBlock(txs ...[]byte) *abci.ResponseFinalizeBlock {
	a.t.Helper()
	return a.NextBlockThen(nil, txs...)
}

// NextBlockThen is NextBlock that calls then between the block's finalization and its
// commit: the block's state is still open (SimDeliver runs a tx in it after the block
// hooks, and NewContextLegacy(false, ...) reads it).
func (a *App) NextBlockThen(then func(), txs ...[]byte) *abci.ResponseFinalizeBlock {
	a.t.Helper()
	h := a.nextHeader()
	hash := BlockHash(h.Height)
	if a.HeaderHash != nil {
		hash = a.HeaderHash(h.Height)
	}
	if a.Propose {
		prep, err := a.PrepareProposal(&abci.RequestPrepareProposal{
			MaxTxBytes: maxProposalBytes, Txs: txs, Height: h.Height, Time: h.Time, ProposerAddress: a.proposer,
		})
		require.NoError(a.t, err)
		txs = prep.Txs
		require.Equal(a.t, abci.ResponseProcessProposal_ACCEPT, a.ProcessProposalOf(txs...), "the validator refuses its own proposal")
	}
	res, err := a.FinalizeBlock(&abci.RequestFinalizeBlock{
		Height: h.Height, Time: h.Time, Txs: txs, ProposerAddress: a.proposer,
		Hash: hash,
	})
	require.NoError(a.t, err)
	if then != nil {
		then()
	}
	_, err = a.Commit()
	require.NoError(a.t, err)
	a.height, a.blockTime, a.pending = h.Height, h.Time, false
	a.LastResults = res
	return res
}

// maxProposalBytes is the room a test proposal has for its txs.
const maxProposalBytes = 4 << 20

// BeaconValue is the beacon's value of committed block h (with drand off: the chain of
// its proposers' VRF outputs), which the chain's samples and draws bound to h use.
func (a *App) BeaconValue(h int64) []byte {
	a.t.Helper()
	v, err := a.GFLKeeper.BlockHashes.Get(a.Ctx(), h)
	require.NoError(a.t, err, "beacon value of block %d", h)
	return v
}

// ProposerKey is the validator's consensus key (ed25519).
func (a *App) ProposerKey() cmted25519.PrivKey { return a.proposerKey }

// ProposerAddress is the validator's consensus address.
func (a *App) ProposerAddress() []byte { return a.proposer }

// ProcessProposalOf is the validator's verdict on a proposal of the next block made of txs.
func (a *App) ProcessProposalOf(txs ...[]byte) abci.ResponseProcessProposal_ProposalStatus {
	a.t.Helper()
	h := a.nextHeader()
	res, err := a.ProcessProposal(&abci.RequestProcessProposal{
		Txs: txs, Height: h.Height, Time: h.Time, ProposerAddress: a.proposer, Hash: BlockHash(h.Height),
	})
	require.NoError(a.t, err)
	return res.Status
}

// NextBlocks commits n empty blocks.
func (a *App) NextBlocks(n int) {
	for range n {
		a.NextBlock()
	}
}

// SignTx signs msgs as the named account with its current account number and sequence.
func (a *App) SignTx(from string, gas uint64, msgs ...sdk.Msg) []byte {
	a.t.Helper()
	acc, num, seq := a.onChain(from)
	return a.signTx(acc, num, seq, gas, msgs...)
}

// SignTxSeq signs msgs as the named account with its account number and the given
// sequence (a run of txs for one block, or for the mempool, signed ahead).
func (a *App) SignTxSeq(from string, seq, gas uint64, msgs ...sdk.Msg) []byte {
	a.t.Helper()
	acc, num, _ := a.onChain(from)
	return a.signTx(acc, num, seq, gas, msgs...)
}

// SignTxMode is SignTx in a given sign mode (SIGN_MODE_LEGACY_AMINO_JSON is what a
// Ledger and the CLI's --sign-mode amino-json sign).
func (a *App) SignTxMode(from string, mode signing.SignMode, gas uint64, msgs ...sdk.Msg) []byte {
	a.t.Helper()
	acc, num, seq := a.onChain(from)
	return a.signTxMode(acc, mode, num, seq, gas, nil, nil, msgs...)
}

// SignTxFee is SignTx with a fee, paid by granter through a fee grant when granter is
// not nil.
func (a *App) SignTxFee(from string, gas uint64, fee sdk.Coins, granter sdk.AccAddress, msgs ...sdk.Msg) []byte {
	a.t.Helper()
	acc, num, seq := a.onChain(from)
	return a.signTxMode(acc, signing.SignMode_SIGN_MODE_DIRECT, num, seq, gas, fee, granter, msgs...)
}

// onChain is the named account with its current account number and sequence.
func (a *App) onChain(from string) (*Account, uint64, uint64) {
	a.t.Helper()
	acc := a.Account(from)
	authAcc := a.AccountKeeper.GetAccount(a.Ctx(), acc.Address)
	require.NotNil(a.t, authAcc, "account %s not on chain", from)
	return acc, authAcc.GetAccountNumber(), authAcc.GetSequence()
}

func (a *App) signTx(acc *Account, accNum, seq, gas uint64, msgs ...sdk.Msg) []byte {
	signMode, err := authsign.APISignModeToInternal(a.TxConfig().SignModeHandler().DefaultMode())
	require.NoError(a.t, err)
	return a.signTxMode(acc, signMode, accNum, seq, gas, nil, nil, msgs...)
}

func (a *App) signTxMode(acc *Account, signMode signing.SignMode, accNum, seq, gas uint64, fee sdk.Coins, granter sdk.AccAddress, msgs ...sdk.Msg) []byte {
	txCfg := a.TxConfig()
	b := txCfg.NewTxBuilder()
	require.NoError(a.t, b.SetMsgs(msgs...))
	b.SetGasLimit(gas)
	b.SetFeeAmount(fee)
	b.SetFeeGranter(granter)
	sig := signing.SignatureV2{PubKey: acc.Priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: signMode}, Sequence: seq}
	require.NoError(a.t, b.SetSignatures(sig))
	signBytes, err := authsign.GetSignBytesAdapter(context.Background(), txCfg.SignModeHandler(), signMode,
		authsign.SignerData{Address: acc.String(), ChainID: ChainID, AccountNumber: accNum, Sequence: seq, PubKey: acc.Priv.PubKey()},
		b.GetTx())
	require.NoError(a.t, err)
	sigBytes, err := acc.Priv.Sign(signBytes)
	require.NoError(a.t, err)
	sig.Data.(*signing.SingleSignatureData).Signature = sigBytes
	require.NoError(a.t, b.SetSignatures(sig))
	bz, err := txCfg.TxEncoder()(b.GetTx())
	require.NoError(a.t, err)
	return bz
}

// DefaultGas is the gas limit of Deliver.
const DefaultGas = 50_000_000

// Deliver signs msgs as the named account and includes them, as one tx, in the next
// block. It returns the tx result; a non-zero Code is a failed tx, not a test failure.
func (a *App) Deliver(from string, msgs ...sdk.Msg) *abci.ExecTxResult {
	a.t.Helper()
	res := a.NextBlock(a.SignTx(from, DefaultGas, msgs...))
	results := res.TxResults
	if a.Propose && len(results) == 2 {
		require.Zerof(a.t, results[0].Code, "the proposer's randomness tx failed: %s", results[0].Log)
		results = results[1:]
	}
	require.Len(a.t, results, 1)
	return results[0]
}

// MustDeliver is Deliver that fails the test unless the tx succeeds.
func (a *App) MustDeliver(from string, msgs ...sdk.Msg) *abci.ExecTxResult {
	a.t.Helper()
	r := a.Deliver(from, msgs...)
	require.Zerof(a.t, r.Code, "tx from %s failed: %s", from, r.Log)
	return r
}

// Balance returns an address's balance of denom.
func (a *App) Balance(addr sdk.AccAddress, denom string) sdkmath.Int {
	return a.BankKeeper.GetBalance(a.Ctx(), addr, denom).Amount
}

// ModuleBalance returns a module account's balance of denom.
func (a *App) ModuleBalance(module, denom string) sdkmath.Int {
	return a.Balance(authtypes.NewModuleAddress(module), denom)
}

// AssertInvariants fails the test if any registered accounting invariant is broken.
func (a *App) AssertInvariants() {
	a.t.Helper()
	require.NoError(a.t, a.Invariants.AssertAll(a.Ctx()))
}

// Events returns the events of the last block's txs and block hooks of the given type.
func (a *App) Events(eventType string) []abci.Event {
	var out []abci.Event
	if a.LastResults == nil {
		return nil
	}
	for _, tx := range a.LastResults.TxResults {
		for _, e := range tx.Events {
			if e.Type == eventType {
				out = append(out, e)
			}
		}
	}
	for _, e := range a.LastResults.Events {
		if e.Type == eventType {
			out = append(out, e)
		}
	}
	return out
}

// String describes the app's position, for failure messages.
func (a *App) String() string { return fmt.Sprintf("apptest height %d at %s", a.height, a.blockTime) }

// BlockHash is the header hash the harness gives block h (CometBFT would give the real
// one); the beacon draws from it.
func BlockHash(h int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(h))
	sum := sha256.Sum256(append([]byte("apptest block "), b[:]...))
	return sum[:]
}

// errorLogger writes the app's error-level logs (a failed block-hook item, for one) to
// the test's output, so that a skipped item is visible when a test fails.
func errorLogger(t testing.TB) log.Logger {
	return log.NewLogger(testWriter{t}, log.LevelOption(zerolog.ErrorLevel), log.ColorOption(false))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ConsensusParamsMaxGas is the block max_gas the app runs with.
func (a *App) ConsensusParamsMaxGas() int64 {
	cp, err := a.ConsensusParamsKeeper.ParamsStore.Get(a.Ctx())
	require.NoError(a.t, err)
	return cp.Block.MaxGas
}
