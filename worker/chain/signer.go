package chain

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsmod "cosmossdk.io/errors"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
)

// TxResult is a transaction's outcome once it is in a block.
type TxResult struct {
	Hash   string
	Height int64
	Code   uint32
	// Codespace is the module that registered Code ("sdk" for the SDK's own).
	Codespace string
	Log       string
	GasUsed   int64
	Events    []abci.Event
	// Responses are the msgs' responses (Any), in order.
	Responses [][]byte
}

// Err is nil for a successful tx, else an error carrying its code and log.
func (r *TxResult) Err() error {
	if r.Code == 0 {
		return nil
	}
	return &TxError{Code: r.Code, Codespace: r.Codespace, Log: r.Log, Hash: r.Hash}
}

// TxError is a transaction that failed (in simulation, in CheckTx or in its block).
// errors.Is tells it by the chain's registered error, its codespace and code, not by its
// text: errors.Is(err, markettypes.ErrBidBinding).
type TxError struct {
	Code      uint32
	Codespace string
	Log       string
	Hash      string
}

func (e *TxError) Error() string {
	return fmt.Sprintf("tx %s failed with code %d (%s): %s", e.Hash, e.Code, e.Codespace, e.Log)
}

// Is reports whether the chain refused the tx with target, a registered error.
func (e *TxError) Is(target error) bool {
	reg, ok := target.(*errorsmod.Error)
	return ok && refusedWith(e.Codespace, e.Code, reg)
}

// refusedWith reports whether codespace and code are reg's.
func refusedWith(codespace string, code uint32, reg *errorsmod.Error) bool {
	return code != 0 && codespace == reg.Codespace() && code == reg.ABCICode()
}

// Signer signs and sends one key's transactions. Run owns the account's sequence: every
// Submit goes through it in order, so no two transactions share a sequence; it does not
// wait for one tx's inclusion before signing the next (CheckTx has accepted it), and a
// sequence mismatch re-reads the account and retries once.
type Signer struct {
	c     *Client
	log   *slog.Logger
	priv  cryptotypes.PrivKey
	addr  sdk.AccAddress
	reqs  chan *request
	ready chan struct{}
	once  sync.Once

	accNum, seq uint64
	loaded      bool
}

type request struct {
	ctx  context.Context
	msgs []sdk.Msg
	memo string
	done chan *outcome
	// resigned counts the times the request was signed anew because the node lost its tx
	// and another tx of the account took its sequence (ErrSequenceUsed).
	resigned int
}

// maxResign bounds a request's new signatures after ErrSequenceUsed: each one means
// another tx of the key took the sequence first, which a second process signing with
// the same key can do every time.
const maxResign = 3

type outcome struct {
	res *TxResult
	err error
}

// NewSigner returns a signer for priv; start it with Run.
func NewSigner(c *Client, priv cryptotypes.PrivKey, log *slog.Logger) *Signer {
	return &Signer{c: c, log: log, priv: priv, addr: sdk.AccAddress(priv.PubKey().Address()), reqs: make(chan *request), ready: make(chan struct{})}
}

// Address is the signer's account.
func (s *Signer) Address() sdk.AccAddress { return s.addr }

// Run signs and broadcasts the submitted transactions until ctx ends; the waits for
// inclusion run beside it, so a slow block never holds back the next signature.
func (s *Signer) Run(ctx context.Context) error {
	s.once.Do(func() { close(s.ready) })
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for {
			select {
			case <-gctx.Done():
				return nil
			case r := <-s.reqs:
				hash, bz, err := s.send(r)
				if err != nil {
					r.done <- &outcome{err: err}
					continue
				}
				g.Go(func() error {
					res, err := s.c.WaitTx(r.ctx, hash, bz)
					if errors.Is(err, ErrSequenceUsed) && r.resigned < maxResign && s.resign(gctx, r, err) {
						return nil
					}
					r.done <- &outcome{res: res, err: err}
					return nil
				})
			}
		}
	})
	return g.Wait()
}

// resign hands a request whose tx can never be in a block (the node lost it and another
// tx of the account has used its sequence: ErrSequenceUsed) back to Run to be signed at
// the next sequence. Its msgs were never applied, so they are applied once. It reports
// false when Run or the request ended first.
func (s *Signer) resign(ctx context.Context, r *request, cause error) bool {
	r.resigned++
	s.log.Warn("tx lost by the node and its sequence used since: signing its msgs anew", "address", s.addr.String(), "err", cause)
	if s.c.cfg.Resent != nil {
		s.c.cfg.Resent()
	}
	select {
	case s.reqs <- r:
		return true
	case <-ctx.Done():
	case <-r.ctx.Done():
	}
	return false
}

// Submit sends msgs in one transaction and waits until it is in a block. The error is a
// *TxError when the chain refused or failed it.
func (s *Signer) Submit(ctx context.Context, msgs ...sdk.Msg) (*TxResult, error) {
	return s.SubmitMemo(ctx, "", msgs...)
}

// SubmitMemo is Submit with a memo.
func (s *Signer) SubmitMemo(ctx context.Context, memo string, msgs ...sdk.Msg) (*TxResult, error) {
	r := &request{ctx: ctx, msgs: msgs, memo: memo, done: make(chan *outcome, 1)}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case o := <-r.done:
		if o.err != nil {
			return o.res, o.err
		}
		return o.res, o.res.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send signs one request once and broadcasts those bytes until CheckTx answers: a
// transport failure or a full mempool resends the same bytes (retryable, with back-off);
// a sequence mismatch takes the node's sequence (resync) and signs again, once; any other
// non-zero code is terminal. It returns the hash and the signed bytes once CheckTx
// accepted the tx.
func (s *Signer) send(r *request) (string, []byte, error) {
	if !s.loaded {
		if err := s.refresh(r.ctx); err != nil {
			return "", nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		gas, err := s.simulate(r)
		if err != nil {
			return "", nil, err
		}
		bz, err := s.sign(r, s.seq, gas, true)
		if err != nil {
			return "", nil, err
		}
		hash, code, codespace, log, err := s.broadcastBytes(r.ctx, bz)
		if err != nil {
			return "", nil, err
		}
		switch {
		case code == 0 || refusedWith(codespace, code, sdkerrors.ErrTxInMempoolCache):
			s.seq++
			return hash, bz, nil
		case refusedWith(codespace, code, sdkerrors.ErrWrongSequence) && attempt == 0:
			if err := s.resync(r.ctx, log); err != nil {
				return "", nil, err
			}
			continue
		default:
			return "", nil, &TxError{Code: code, Codespace: codespace, Log: log, Hash: hash}
		}
	}
}

// resync takes the sequence the node expects from its refusal ("account sequence
// mismatch, expected N, got M"): the node's CheckTx state counts this signer's txs still
// in its mempool, so N is the next free one. Without it in the message the account's
// committed sequence is read instead.
func (s *Signer) resync(ctx context.Context, log string) error {
	if m := sequenceMismatch.FindStringSubmatch(log); m != nil {
		if next, err := strconv.ParseUint(m[1], 10, 64); err == nil {
			s.log.Warn("sequence mismatch, taking the node's", "address", s.addr.String(), "ours", s.seq, "node", next)
			s.seq = next
			return nil
		}
	}
	s.log.Warn("sequence mismatch, re-reading the account", "address", s.addr.String(), "log", log)
	return s.refresh(ctx)
}

// sequenceMismatch is the SDK's ante refusal of a wrong sequence (x/auth's
// SigVerificationDecorator).
var sequenceMismatch = regexp.MustCompile(`account sequence mismatch, expected (\d+), got (\d+)`)

// broadcastBytes sends signed bytes, resending them on retryable failures.
func (s *Signer) broadcastBytes(ctx context.Context, bz []byte) (hash string, code uint32, codespace, log string, err error) {
	wait := 250 * time.Millisecond
	for try := 0; ; try++ {
		res, err := s.c.Tx.BroadcastTx(ctx, &txtypes.BroadcastTxRequest{TxBytes: bz, Mode: txtypes.BroadcastMode_BROADCAST_MODE_SYNC})
		retry := false
		switch {
		case err != nil:
			retry = retryable(err)
			if !retry {
				return "", 0, "", "", fmt.Errorf("broadcast: %w", err)
			}
		case refusedWith(res.TxResponse.Codespace, res.TxResponse.Code, sdkerrors.ErrMempoolIsFull):
			retry = true
		default:
			return res.TxResponse.TxHash, res.TxResponse.Code, res.TxResponse.Codespace, res.TxResponse.RawLog, nil
		}
		if try >= 8 {
			if err == nil {
				err = errors.New("the mempool is full")
			}
			return "", 0, "", "", fmt.Errorf("broadcast: gave up after %d tries: %w", try+1, err)
		}
		s.log.Debug("broadcast retry", "try", try, "err", err)
		select {
		case <-ctx.Done():
			return "", 0, "", "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// retryable: the node could not be reached or was busy; the same bytes may be resent.
func retryable(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}

// refresh reads the account number and sequence from the chain.
func (s *Signer) refresh(ctx context.Context) error {
	accNum, seq, err := s.c.Account(ctx, s.addr)
	if err != nil {
		return err
	}
	s.accNum, s.seq, s.loaded = accNum, seq, true
	return nil
}

// simulate estimates the gas of a request. The node simulates on its CheckTx state, which
// includes this signer's transactions still in the mempool: the next sequence is ours.
// Right after a block is committed that state is the committed one until the mempool has
// been rechecked, so a simulation may briefly see an older sequence: it is retried
// (up to simulateTries times, 250 ms apart). A mismatch that outlasts them is no lag: a
// tx of ours left the mempool without a block (a validator killed and restarted loses
// its mempool) or another process signed with this key. The signer then takes the node's
// sequence (resync) and simulates once more; without that, every later tx of the worker
// would be refused for ever.
func (s *Signer) simulate(r *request) (uint64, error) {
	resynced := false
	for try := 1; ; try++ {
		gas, err := s.simulateOnce(r)
		var txErr *TxError
		if err == nil || !errors.As(err, &txErr) || !errors.Is(txErr, sdkerrors.ErrWrongSequence) {
			return gas, err
		}
		if try >= simulateTries {
			if resynced {
				return gas, err
			}
			if err := s.resync(r.ctx, txErr.Log); err != nil {
				return 0, err
			}
			resynced = true
			continue
		}
		s.log.Debug("simulation saw another sequence; retrying", "try", try, "sequence", s.seq)
		select {
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		case <-time.After(simulateRetry):
		}
	}
}

// simulateTries bounds the retries of a simulation that saw another sequence, and
// simulateRetry spaces them.
const simulateTries = 20

var simulateRetry = 250 * time.Millisecond

// simulateOnce asks the node for a request's gas through its ABCI query "/app/simulate",
// which answers a refusal with the chain's registered error (codespace and code) where
// the tx service's Simulate keeps only its text: the worker tells refusals by code
// (TxError.Is).
func (s *Signer) simulateOnce(r *request) (uint64, error) {
	bz, err := s.sign(r, s.seq, 0, false)
	if err != nil {
		return 0, err
	}
	res, err := s.c.Node.ABCIQuery(r.ctx, &cmtservice.ABCIQueryRequest{Path: simulatePath, Data: bz})
	if err != nil {
		return 0, fmt.Errorf("simulate: %w", err)
	}
	if res.Code != 0 {
		return 0, &TxError{Code: res.Code, Codespace: res.Codespace, Log: "simulation: " + res.Log}
	}
	var sim struct {
		GasInfo struct {
			GasUsed json.Number `json:"gas_used"`
		} `json:"gas_info"`
	}
	if err := json.Unmarshal(res.Value, &sim); err != nil {
		return 0, fmt.Errorf("simulate: the node's answer: %w", err)
	}
	var used uint64
	if sim.GasInfo.GasUsed != "" { // proto's JSON leaves a zero out
		if used, err = strconv.ParseUint(sim.GasInfo.GasUsed.String(), 10, 64); err != nil {
			return 0, fmt.Errorf("simulate: the node's gas used %q: %w", sim.GasInfo.GasUsed, err)
		}
	}
	return uint64(math.Ceil(float64(used) * s.c.cfg.GasAdjustment)), nil
}

// simulatePath is baseapp's ABCI query that simulates a tx (its value: the
// sdk.SimulationResponse as JSON).
const simulatePath = "/app/simulate"

// sign builds the tx; with signed false it carries an empty signature (simulation).
func (s *Signer) sign(r *request, seq, gas uint64, signed bool) ([]byte, error) {
	txCfg := s.c.enc.TxConfig
	b := txCfg.NewTxBuilder()
	if err := b.SetMsgs(r.msgs...); err != nil {
		return nil, err
	}
	b.SetMemo(r.memo)
	b.SetGasLimit(gas)
	if gas > 0 && s.c.cfg.GasPrice > 0 {
		fee := sdkmath.NewInt(int64(math.Ceil(float64(gas) * s.c.cfg.GasPrice)))
		b.SetFeeAmount(sdk.NewCoins(sdk.NewCoin(s.c.cfg.Denom, fee)))
	}
	mode, err := authsign.APISignModeToInternal(txCfg.SignModeHandler().DefaultMode())
	if err != nil {
		return nil, err
	}
	sig := signing.SignatureV2{PubKey: s.priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: mode}, Sequence: seq}
	if err := b.SetSignatures(sig); err != nil {
		return nil, err
	}
	if signed {
		if err := signTx(txCfg, b, s.priv, s.c.cfg.ChainID, s.accNum, seq, mode); err != nil {
			return nil, err
		}
	}
	return txCfg.TxEncoder()(b.GetTx())
}

func signTx(txCfg client.TxConfig, b client.TxBuilder, priv cryptotypes.PrivKey, chainID string, accNum, seq uint64, mode signing.SignMode) error {
	data := authsign.SignerData{Address: sdk.AccAddress(priv.PubKey().Address()).String(), ChainID: chainID, AccountNumber: accNum, Sequence: seq, PubKey: priv.PubKey()}
	bytes, err := authsign.GetSignBytesAdapter(context.Background(), txCfg.SignModeHandler(), mode, data, b.GetTx())
	if err != nil {
		return err
	}
	sigBytes, err := priv.Sign(bytes)
	if err != nil {
		return err
	}
	return b.SetSignatures(signing.SignatureV2{PubKey: priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: mode, Signature: sigBytes}, Sequence: seq})
}

// Account reads an account's number and sequence; ErrNoAccount for an account the chain
// has not seen (never funded).
func (c *Client) Account(ctx context.Context, addr sdk.AccAddress) (uint64, uint64, error) {
	res, err := c.Auth.Account(ctx, &authtypes.QueryAccountRequest{Address: addr.String()})
	if err != nil {
		if st, ok := status.FromError(err); ok && st.Code() == codes.NotFound {
			return 0, 0, fmt.Errorf("%s: %w", addr, ErrNoAccount)
		}
		return 0, 0, fmt.Errorf("account %s: %w", addr, err)
	}
	var acc sdk.AccountI
	if err := c.enc.InterfaceRegistry.UnpackAny(res.Account, &acc); err != nil {
		return 0, 0, err
	}
	return acc.GetAccountNumber(), acc.GetSequence(), nil
}

// WaitTx polls until a broadcast tx is in a block, or the inclusion timeout. While it is
// in none, its signed bytes bz are sent again every resendEvery: CheckTx accepting a tx
// does not keep it, since a validator killed and restarted comes back with an empty
// mempool, and a tx lost so would otherwise fail its caller after the whole timeout (a
// PoCP reveal or a task's commit past its window). A node that still holds the tx answers
// the copy from its cache, and one that committed it refuses the used sequence: the same
// bytes are never applied twice. A refusal of the sequence sends WaitTx to the chain's
// index for the tx that used it (the ante handler's tx.acc_seq event): that is this tx,
// in a block, or another one, and then this tx can never be (ErrSequenceUsed), which
// WaitTx says at once rather than after the timeout.
func (c *Client) WaitTx(ctx context.Context, hash string, bz []byte) (*TxResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.InclusionTimeout)
	defer cancel()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	sent := time.Now()
	for {
		res, err := c.Tx.GetTx(ctx, &txtypes.GetTxRequest{Hash: hash})
		if err == nil && res.TxResponse != nil {
			return c.txResult(res.TxResponse), nil
		}
		if err != nil && !notFound(err) {
			c.log.Debug("get tx", "hash", hash, "err", err)
		}
		if bz != nil && time.Since(sent) >= resendEvery {
			if c.resend(ctx, hash, bz) {
				res, err := c.sequenceUser(ctx, bz)
				switch {
				case err != nil:
					c.log.Debug("tx by sequence", "hash", hash, "err", err)
				case res != nil && strings.EqualFold(res.TxHash, hash):
					return c.txResult(res), nil
				case res != nil:
					return nil, fmt.Errorf("tx %s: %w: tx %s (height %d) took it", hash, ErrSequenceUsed, res.TxHash, res.Height)
				}
			}
			sent = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("tx %s not in a block after %s: %w", hash, c.cfg.InclusionTimeout, ctx.Err())
		case <-t.C:
		}
	}
}

// ErrSequenceUsed is a tx the node had accepted and lost, whose sequence another tx of
// the same account has since used: it can never be in a block, and its msgs were not
// applied. The Signer signs them anew.
var ErrSequenceUsed = errors.New("the node lost the tx and another tx has used its sequence")

// txResult is a committed tx's outcome, its msgs' responses decoded.
func (c *Client) txResult(r *sdk.TxResponse) *TxResult {
	out := &TxResult{Hash: r.TxHash, Height: r.Height, Code: r.Code, Codespace: r.Codespace, Log: r.RawLog, GasUsed: r.GasUsed, Events: r.Events}
	if r.Code == 0 && r.Data != "" {
		if data, err := hex.DecodeString(r.Data); err == nil {
			var msgData sdk.TxMsgData
			if err := c.enc.Codec.Unmarshal(data, &msgData); err == nil {
				for _, any := range msgData.MsgResponses {
					out.Responses = append(out.Responses, any.Value)
				}
			}
		}
	}
	return out
}

// resendEvery spaces WaitTx's sends of a tx that is in no block yet.
var resendEvery = 3 * time.Second

// resend sends a waiting tx's bytes once more. Only a node that had lost the tx takes
// them (code 0); its cache's answer, a refused sequence or an unreachable node leave the
// wait as it was. It reports whether the node refused the tx's sequence as used (it
// expects a later one): the tx itself, or another, is then in a block.
func (c *Client) resend(ctx context.Context, hash string, bz []byte) (used bool) {
	res, err := c.Tx.BroadcastTx(ctx, &txtypes.BroadcastTxRequest{TxBytes: bz, Mode: txtypes.BroadcastMode_BROADCAST_MODE_SYNC})
	switch {
	case err != nil:
		c.log.Debug("resend tx", "hash", hash, "err", err)
	case res.TxResponse.Code == 0:
		c.log.Warn("tx sent again: the node no longer held it (a restarted node loses its mempool)", "hash", hash)
		if c.cfg.Resent != nil {
			c.cfg.Resent()
		}
	default:
		c.log.Debug("resend tx", "hash", hash, "code", res.TxResponse.Code, "log", res.TxResponse.RawLog)
		if refusedWith(res.TxResponse.Codespace, res.TxResponse.Code, sdkerrors.ErrWrongSequence) {
			if m := sequenceMismatch.FindStringSubmatch(res.TxResponse.RawLog); m != nil {
				expected, err1 := strconv.ParseUint(m[1], 10, 64)
				got, err2 := strconv.ParseUint(m[2], 10, 64)
				return err1 == nil && err2 == nil && expected > got
			}
		}
	}
	return false
}

// sequenceUser finds the committed tx that used the signer's sequence of the signed
// bytes bz, through the node's index of the ante handler's tx.acc_seq event (one tx an
// account and sequence). Nil with no error: none indexed yet (the index follows the
// commit).
func (c *Client) sequenceUser(ctx context.Context, bz []byte) (*sdk.TxResponse, error) {
	tx, err := c.enc.TxConfig.TxDecoder()(bz)
	if err != nil {
		return nil, err
	}
	sigTx, ok := tx.(authsign.SigVerifiableTx)
	if !ok {
		return nil, fmt.Errorf("a %T carries no signatures", tx)
	}
	sigs, err := sigTx.GetSignaturesV2()
	if err != nil {
		return nil, err
	}
	if len(sigs) != 1 || sigs[0].PubKey == nil {
		return nil, fmt.Errorf("%d signatures: the signer signs one", len(sigs))
	}
	accSeq := fmt.Sprintf("%s/%d", sdk.AccAddress(sigs[0].PubKey.Address()), sigs[0].Sequence)
	res, err := c.Tx.GetTxsEvent(ctx, &txtypes.GetTxsEventRequest{Query: fmt.Sprintf("%s.%s='%s'", sdk.EventTypeTx, sdk.AttributeKeyAccountSequence, accSeq), Page: 1, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(res.TxResponses) == 0 {
		return nil, nil
	}
	return res.TxResponses[0], nil
}

func notFound(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.NotFound || strings.Contains(err.Error(), "not found")
}

// ErrNoAccount is returned when a key's account does not exist on chain (never funded).
var ErrNoAccount = errors.New("account not found on chain: fund it first")
