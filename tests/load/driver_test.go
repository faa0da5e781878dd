package load

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"

	"github.com/flopsnet/flops/worker/chain"
)

// The load driver. worker/chain's Signer simulates every transaction before it signs it
// and polls GetTx for each one until it is in a block: right for a worker, but under load
// that doubles the node's execution work and floods it with queries, so the figures would
// measure the client. Here each account signs at its own sequence with a gas limit
// simulated once per kind of transaction (a flood's transactions all ahead, before its
// clock starts: presign), broadcasts in sync mode (CheckTx answers), and
// one watcher reads each new block's transactions to confirm inclusion by hash; the
// results (code, gas used, events) are read once a phase is over, a page per block.

// account is a funded key whose sequence one goroutine at a time owns.
type account struct {
	name   string
	priv   cryptotypes.PrivKey
	addr   sdk.AccAddress
	accNum uint64
	seq    uint64
}

// newAccount derives a deterministic key from its name.
func newAccount(name string) *account {
	priv := secp256k1.GenPrivKeyFromSecret([]byte("flops-load/" + name))
	return &account{name: name, priv: priv, addr: sdk.AccAddress(priv.PubKey().Address())}
}

// driver signs and broadcasts transactions and confirms their inclusion.
type driver struct {
	c     *chain.Client
	txCfg client.TxConfig
	mode  signing.SignMode
	w     *watcher
	abci  *abciTimer // the validator's ABCI calls, timed (nil: not timed)

	mu  sync.Mutex
	gas map[string]uint64 // gas limit per kind of tx, from one simulation
}

func newDriver(c *chain.Client) (*driver, error) {
	txCfg := c.Encoding().TxConfig
	mode, err := authsign.APISignModeToInternal(txCfg.SignModeHandler().DefaultMode())
	if err != nil {
		return nil, err
	}
	return &driver{c: c, txCfg: txCfg, mode: mode, w: newWatcher(c), gas: map[string]uint64{}}, nil
}

// load reads the accounts' numbers and sequences from the chain.
func (d *driver) load(ctx context.Context, accs ...*account) error {
	for _, a := range accs {
		num, seq, err := d.c.Account(ctx, a.addr)
		if err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		a.accNum, a.seq = num, seq
	}
	return nil
}

// build encodes msgs as a tx of acc at its next sequence; unsigned, it carries an empty
// signature (what Simulate takes).
func (d *driver) build(acc *account, gas uint64, signed bool, msgs ...sdk.Msg) ([]byte, error) {
	return d.buildAt(acc, acc.seq, gas, signed, msgs...)
}

// buildAt is build at a given sequence of acc (a tx signed ahead of those before it).
func (d *driver) buildAt(acc *account, seq, gas uint64, signed bool, msgs ...sdk.Msg) ([]byte, error) {
	b := d.txCfg.NewTxBuilder()
	if err := b.SetMsgs(msgs...); err != nil {
		return nil, err
	}
	b.SetGasLimit(gas) // the network's minimum gas price is zero: no fee
	sig := signing.SignatureV2{PubKey: acc.priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: d.mode}, Sequence: seq}
	if err := b.SetSignatures(sig); err != nil {
		return nil, err
	}
	if signed {
		data := authsign.SignerData{Address: acc.addr.String(), ChainID: d.c.ChainID(), AccountNumber: acc.accNum, Sequence: seq, PubKey: acc.priv.PubKey()}
		bz, err := authsign.GetSignBytesAdapter(context.Background(), d.txCfg.SignModeHandler(), d.mode, data, b.GetTx())
		if err != nil {
			return nil, err
		}
		sigBytes, err := acc.priv.Sign(bz)
		if err != nil {
			return nil, err
		}
		sig.Data = &signing.SingleSignatureData{SignMode: d.mode, Signature: sigBytes}
		if err := b.SetSignatures(sig); err != nil {
			return nil, err
		}
	}
	return d.txCfg.TxEncoder()(b.GetTx())
}

// gasLimit is the gas limit of a kind of tx: the first one's simulated gas x 1.5 (later
// ones of the kind carry as many msgs or fewer).
func (d *driver) gasLimit(ctx context.Context, kind string, acc *account, msgs ...sdk.Msg) (uint64, error) {
	d.mu.Lock()
	g, ok := d.gas[kind]
	d.mu.Unlock()
	if ok {
		return g, nil
	}
	bz, err := d.build(acc, 0, false, msgs...)
	if err != nil {
		return 0, err
	}
	res, err := d.c.Tx.Simulate(ctx, &txtypes.SimulateRequest{TxBytes: bz})
	if err != nil {
		return 0, fmt.Errorf("simulate %s from %s: %w", kind, acc.name, err)
	}
	g = res.GasInfo.GasUsed*3/2 + 10_000
	d.mu.Lock()
	d.gas[kind] = g
	d.mu.Unlock()
	return g, nil
}

// hasGas says whether a kind of tx has its gas limit.
func (d *driver) hasGas(kind string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.gas[kind]
	return ok
}

// txHash is CometBFT's hash of a tx: sha256 of its bytes, upper-case hex.
func txHash(bz []byte) string {
	h := sha256.Sum256(bz)
	return strings.ToUpper(hex.EncodeToString(h[:]))
}

// send signs msgs at acc's next sequence and broadcasts them until CheckTx answers; a full
// mempool or a busy node resends the same bytes. It returns the tx hash once CheckTx took
// the tx; any other refusal is an error naming the chain's reason.
func (d *driver) send(ctx context.Context, kind string, acc *account, msgs ...sdk.Msg) (string, error) {
	gas, err := d.gasLimit(ctx, kind, acc, msgs...)
	if err != nil {
		return "", err
	}
	bz, err := d.build(acc, gas, true, msgs...)
	if err != nil {
		return "", err
	}
	return d.broadcast(ctx, kind, acc, bz)
}

// presign signs n txs of acc ahead, at its next n sequences, the i-th of msg(i): a flood
// broadcasts them with no signing in its timed window (broadcast, in order).
func (d *driver) presign(ctx context.Context, kind string, acc *account, n int, msg func(i int) sdk.Msg) ([][]byte, error) {
	gas, err := d.gasLimit(ctx, kind, acc, msg(0))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, n)
	for i := range out {
		if out[i], err = d.buildAt(acc, acc.seq+uint64(i), gas, true, msg(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// broadcast sends a signed tx of acc at its next sequence until CheckTx answers (see send).
func (d *driver) broadcast(ctx context.Context, kind string, acc *account, bz []byte) (string, error) {
	hash := txHash(bz)
	for try := 0; ; try++ {
		res, err := d.c.Tx.BroadcastTx(ctx, &txtypes.BroadcastTxRequest{TxBytes: bz, Mode: txtypes.BroadcastMode_BROADCAST_MODE_SYNC})
		busy := false
		switch {
		case err != nil:
			st, ok := status.FromError(err)
			busy = ok && (st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted || st.Code() == codes.DeadlineExceeded)
			if !busy {
				return "", fmt.Errorf("%s from %s: broadcast: %w", kind, acc.name, err)
			}
		case res.TxResponse.Code == 0 || res.TxResponse.Code == sdkerrors.ErrTxInMempoolCache.ABCICode():
			acc.seq++
			return hash, nil
		case res.TxResponse.Code == sdkerrors.ErrMempoolIsFull.ABCICode():
			busy = true
		default:
			return "", fmt.Errorf("%s from %s (sequence %d): CheckTx code %d: %s", kind, acc.name, acc.seq, res.TxResponse.Code, res.TxResponse.RawLog)
		}
		if try >= 200 {
			return "", fmt.Errorf("%s from %s: the node stayed busy for %d tries", kind, acc.name, try)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// seenTx is where and when the watcher found a tx.
type seenTx struct {
	height int64
	at     time.Time // when the watcher read the block
}

// watcher reads every new block once and records its transactions by hash.
type watcher struct {
	c *chain.Client

	mu     sync.Mutex
	height int64
	seen   map[string]seenTx
	read   map[int64]time.Time // when it read each block
	total  int                 // txs seen in blocks
	tick   chan struct{}       // closed, and replaced, at each new block
	err    error
}

func newWatcher(c *chain.Client) *watcher {
	return &watcher{c: c, seen: map[string]seenTx{}, read: map[int64]time.Time{}, tick: make(chan struct{})}
}

// run polls the node every 25 ms until ctx ends, starting after the current height.
func (w *watcher) run(ctx context.Context) {
	h, _, err := w.c.Height(ctx)
	if err != nil {
		w.fail(err)
		return
	}
	w.mu.Lock()
	w.height = h
	w.mu.Unlock()
	t := time.NewTicker(25 * time.Millisecond)
	defer t.Stop()
	failures := 0 // in a row; a busy node may miss a poll, not 400 (10 s)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		latest, _, err := w.c.Height(ctx)
		if err != nil {
			if failures++; failures >= 400 && ctx.Err() == nil {
				w.fail(fmt.Errorf("latest block: %w", err))
				return
			}
			continue
		}
		for h := w.latest() + 1; h <= latest; h++ {
			res, err := w.c.Node.GetBlockByHeight(ctx, &cmtservice.GetBlockByHeightRequest{Height: h})
			if err != nil {
				if failures++; failures >= 400 && ctx.Err() == nil {
					w.fail(fmt.Errorf("block %d: %w", h, err))
					return
				}
				break
			}
			failures = 0
			now := time.Now()
			w.mu.Lock()
			for _, tx := range res.SdkBlock.Data.Txs {
				w.seen[txHash(tx)] = seenTx{height: h, at: now}
			}
			w.total += len(res.SdkBlock.Data.Txs)
			w.read[h] = now
			w.height = h
			close(w.tick)
			w.tick = make(chan struct{})
			w.mu.Unlock()
		}
	}
}

func (w *watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
	close(w.tick)
	w.tick = make(chan struct{})
}

// next is closed at the next block.
func (w *watcher) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tick
}

func (w *watcher) latest() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.height
}

// readAt waits until the watcher has read block h and says when it did.
func (w *watcher) readAt(ctx context.Context, h int64) (time.Time, error) {
	for {
		tick := w.next()
		w.mu.Lock()
		at, ok := w.read[h]
		err := w.err
		w.mu.Unlock()
		switch {
		case ok:
			return at, nil
		case err != nil:
			return time.Time{}, err
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-tick:
		}
	}
}

func (w *watcher) included(hash string) (seenTx, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.seen[hash]
	return s, ok
}

// gate holds a flood to at most n txs sent and not yet seen in a block. It counts every
// tx of the blocks it sees from its creation, which are the flood's own while nothing
// else sends. Its count is kept under the watcher's lock.
type gate struct {
	w             *watcher
	n, base, sent int
}

// gate is a gate for a flood that starts now.
func (w *watcher) gate(n int) *gate {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &gate{w: w, n: n, base: w.total}
}

// enter returns when one more tx may be sent (and counts it sent).
func (g *gate) enter(ctx context.Context) error {
	for {
		g.w.mu.Lock()
		tick, err := g.w.tick, g.w.err
		open := err == nil && g.sent-(g.w.total-g.base) < g.n
		if open {
			g.sent++
		}
		g.w.mu.Unlock()
		if err != nil || open {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
		}
	}
}

// stallBlocks is how many blocks waitAll waits with none of its missing txs included
// before it gives up: a tx the node accepted and then dropped (CometBFT does so when its
// mempool filled while the tx was checked: a flood above the mempool's size) is never
// included, and the run would otherwise wait out its whole timeout (30 min).
const stallBlocks = 30

// waitAll waits until every hash is in a block and returns when the last was seen.
func (w *watcher) waitAll(ctx context.Context, hashes []string) (time.Time, error) {
	lastMissing, since := -1, int64(0)
	for {
		tick := w.next()
		w.mu.Lock()
		err := w.err
		height := w.height
		var last time.Time
		missing := 0
		for _, h := range hashes {
			s, ok := w.seen[h]
			if !ok {
				missing++
				continue
			}
			if s.at.After(last) {
				last = s.at
			}
		}
		w.mu.Unlock()
		if err != nil {
			return time.Time{}, err
		}
		if missing == 0 {
			return last, nil
		}
		if missing != lastMissing {
			lastMissing, since = missing, height
		} else if height-since >= stallBlocks {
			return time.Time{}, fmt.Errorf("%d of %d txs not in a block, none included in the last %d blocks (a flood larger than the node's mempool?)", missing, len(hashes), height-since)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d of %d txs not in a block: %w", missing, len(hashes), ctx.Err())
		case <-tick:
		}
	}
}

// results reads the results of included txs, one page of 100 per block at a time; the
// node indexes a block's txs after it commits it, so a block not yet indexed is read again.
func (d *driver) results(ctx context.Context, hashes []string) (map[string]*sdk.TxResponse, error) {
	for try := 0; ; try++ {
		out, err := d.readResults(ctx, hashes)
		if err == nil || try >= 100 {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *driver) readResults(ctx context.Context, hashes []string) (map[string]*sdk.TxResponse, error) {
	want := map[int64]int{}
	for _, h := range hashes {
		s, ok := d.w.included(h)
		if !ok {
			return nil, fmt.Errorf("tx %s is in no block", h)
		}
		want[s.height]++
	}
	out := map[string]*sdk.TxResponse{}
	for height := range want {
		for page := uint64(1); ; page++ {
			res, err := d.c.Tx.GetTxsEvent(ctx, &txtypes.GetTxsEventRequest{Query: fmt.Sprintf("tx.height=%d", height), Page: page, Limit: 100},
				grpc.MaxCallRecvMsgSize(256<<20)) // a page of 100-msg txs and their events passes 4 MiB
			if err != nil {
				return nil, fmt.Errorf("txs of block %d: %w", height, err)
			}
			for _, r := range res.TxResponses {
				out[r.TxHash] = r
			}
			if page*100 >= res.Total || len(res.TxResponses) == 0 {
				break
			}
		}
	}
	for _, h := range hashes {
		if _, ok := out[h]; !ok {
			return nil, fmt.Errorf("tx %s: no result in its block", h)
		}
	}
	return out, nil
}

// submit sends one tx and waits for its result (setup and teardown steps).
func (d *driver) submit(ctx context.Context, kind string, acc *account, msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	hash, err := d.send(ctx, kind, acc, msgs...)
	if err != nil {
		return nil, err
	}
	if _, err := d.w.waitAll(ctx, []string{hash}); err != nil {
		return nil, err
	}
	res, err := d.results(ctx, []string{hash})
	if err != nil {
		return nil, err
	}
	r := res[hash]
	if r.Code != 0 {
		return r, fmt.Errorf("%s from %s: code %d: %s", kind, acc.name, r.Code, r.RawLog)
	}
	return r, nil
}
