package outputs

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/flopsnet/flops/internal/chain"
)

// The headers of a signed request.
const (
	HeaderAddress   = "X-Flops-Address"
	HeaderPubkey    = "X-Flops-Pubkey"
	HeaderTimestamp = "X-Flops-Timestamp"
	HeaderSignature = "X-Flops-Signature"
	// HeaderNonce is 32 lowercase hex characters (16 random bytes), never used twice.
	HeaderNonce = "X-Flops-Nonce"
	// HeaderSignMode says what the signature covers: absent or "raw", SignedMessage
	// itself (SignRequest, the CLI); "adr036", the ADR-036 sign doc of SignedMessage
	// (ADR036SignDoc), which is what a browser wallet signs for arbitrary data (Keplr's
	// signArbitrary, CosmJS's amino signers).
	HeaderSignMode = "X-Flops-Sign-Mode"
)

// SignModeADR036 is HeaderSignMode's value for an ADR-036 signature.
const SignModeADR036 = "adr036"

// ADR036SignDoc is the ADR-036 amino sign doc of data signed by signer, in the canonical
// form wallets sign (keys sorted, no spaces): a StdSignDoc with an empty chain id, account
// number and sequence 0, no fee and one sign/MsgSignData. signer must be a bech32 address
// (lowercase letters and digits: nothing to escape); data is base64 in the doc.
func ADR036SignDoc(signer string, data []byte) []byte {
	return []byte(`{"account_number":"0","chain_id":"","fee":{"amount":[],"gas":"0"},"memo":"","msgs":[{"type":"sign/MsgSignData","value":{"data":"` +
		base64.StdEncoding.EncodeToString(data) + `","signer":"` + signer + `"}}],"sequence":"0"}`)
}

// SignatureDomain starts every signed message.
const SignatureDomain = "flops-output-v2\n"

// MaxClockSkew is how far a request's timestamp may be from the server's clock, either
// way.
const MaxClockSkew = 5 * time.Minute

// SignedMessage is what a request's signature covers, lines joined by "\n" after
// SignatureDomain: the method, the host the request is sent to, the escaped path, the raw
// query, unix seconds in decimal, the nonce. The secp256k1 signature is over its sha256,
// 64 bytes r || s with a low s, as Cosmos SDK keys sign. The host binds a request to one
// provider (it cannot be replayed to another), the nonce to one use.
func SignedMessage(method, host, escapedPath, rawQuery string, unix int64, nonce string) []byte {
	return []byte(SignatureDomain + strings.Join([]string{method, host, escapedPath, rawQuery, strconv.FormatInt(unix, 10), nonce}, "\n"))
}

// SignRequest signs req with the owner's key at time now and a fresh nonce, setting the
// five X-Flops headers. The key must be a secp256k1 key (a Cosmos account key); the address header
// uses the flops bech32 prefix.
func SignRequest(req *http.Request, priv cryptotypes.PrivKey, now time.Time) error {
	if priv == nil {
		return errors.New("sign request: no key")
	}
	pub, ok := priv.PubKey().(*secp256k1.PubKey)
	if !ok {
		return fmt.Errorf("sign request: a %s key; output requests are signed with secp256k1 account keys", priv.Type())
	}
	addr, err := bech32.ConvertAndEncode(chain.Bech32Prefix, pub.Address())
	if err != nil {
		return fmt.Errorf("sign request: %w", err)
	}
	ts := now.Unix()
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return fmt.Errorf("sign request: %w", err)
	}
	nonce := hex.EncodeToString(n[:])
	host := req.Host // what the client sends as Host: req.Host, else the URL's
	if host == "" {
		host = req.URL.Host
	}
	sig, err := priv.Sign(SignedMessage(req.Method, host, req.URL.EscapedPath(), req.URL.RawQuery, ts, nonce))
	if err != nil {
		return fmt.Errorf("sign request: %w", err)
	}
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderAddress, addr)
	req.Header.Set(HeaderPubkey, base64.StdEncoding.EncodeToString(pub.Key))
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
	return nil
}

// authError is a request the server refuses, with the status to answer.
type authError struct {
	status int
	msg    string
}

func (e *authError) Error() string { return e.msg }

func unauthorized(format string, args ...any) error {
	return &authError{http.StatusUnauthorized, fmt.Sprintf(format, args...)}
}

var nonceHex = regexp.MustCompile(`^[0-9a-f]{32}$`)

// authenticate checks a signed request and returns the signer's address bytes and the
// request's nonce: the public key must hash to the address header (or be a session key
// the address's owner delegated to and has not revoked since, checkDelegation), the timestamp be
// within MaxClockSkew of now, the host be one of hosts (any when hosts is empty), and the
// signature verify over SignedMessage. The nonce is not spent here: the caller spends it
// (nonces.use) once the signer is known to be entitled to the request, so that a
// stranger's requests, signed by keys of its own, use up nothing the owners need.
func authenticate(r *http.Request, now time.Time, hosts []string, revoked *Revocations) (addr []byte, bech, nonce string, err error) {
	bech = r.Header.Get(HeaderAddress)
	pubB64, tsText, sigB64 := r.Header.Get(HeaderPubkey), r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature)
	nonce = r.Header.Get(HeaderNonce)
	if bech == "" || pubB64 == "" || tsText == "" || sigB64 == "" || nonce == "" {
		return nil, "", "", unauthorized("a signed request needs the headers %s, %s, %s, %s and %s", HeaderAddress, HeaderPubkey, HeaderTimestamp, HeaderNonce, HeaderSignature)
	}
	if !nonceHex.MatchString(nonce) {
		return nil, "", "", unauthorized("%s %q: must be 32 lowercase hex characters", HeaderNonce, nonce)
	}
	if len(hosts) > 0 && !slices.Contains(hosts, strings.ToLower(r.Host)) {
		return nil, "", "", unauthorized("the request was signed for host %q, which is not this server (%s)", r.Host, strings.Join(hosts, ", "))
	}
	hrp, addr, err := bech32.DecodeAndConvert(bech)
	if err != nil || hrp != chain.Bech32Prefix {
		return nil, "", "", unauthorized("%s %q: not a %s bech32 address", HeaderAddress, bech, chain.Bech32Prefix)
	}
	key, err := base64.StdEncoding.DecodeString(pubB64)
	if err != nil || len(key) != secp256k1.PubKeySize {
		return nil, "", "", unauthorized("%s: must be a base64 compressed secp256k1 public key (%d bytes)", HeaderPubkey, secp256k1.PubKeySize)
	}
	pub := &secp256k1.PubKey{Key: key}
	delegated := r.Header.Get(HeaderDelegation) != ""
	if delegated {
		// a session key the owner delegated its requests to (delegation.go)
		if err := checkDelegation(r, bech, addr, pubB64, now, revoked); err != nil {
			return nil, "", "", err
		}
	} else if !bytes.Equal(pub.Address(), addr) {
		return nil, "", "", unauthorized("%s does not belong to %s %s", HeaderPubkey, HeaderAddress, bech)
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return nil, "", "", unauthorized("%s %q: must be unix seconds", HeaderTimestamp, tsText)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > MaxClockSkew || skew < -MaxClockSkew {
		return nil, "", "", unauthorized("%s %d is %s from the server's clock; at most %s is accepted", HeaderTimestamp, ts, skew.Round(time.Second), MaxClockSkew)
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return nil, "", "", unauthorized("%s: not base64", HeaderSignature)
	}
	signed := SignedMessage(r.Method, r.Host, r.URL.EscapedPath(), r.URL.RawQuery, ts, nonce)
	switch mode := r.Header.Get(HeaderSignMode); mode {
	case "", "raw":
	case SignModeADR036:
		if delegated {
			return nil, "", "", unauthorized("%s %q: a session key signs raw", HeaderSignMode, mode)
		}
		signed = ADR036SignDoc(bech, signed)
	default:
		return nil, "", "", unauthorized("%s %q: must be raw or %s", HeaderSignMode, mode, SignModeADR036)
	}
	if !pub.VerifySignature(signed, sig) {
		return nil, "", "", unauthorized("%s does not verify for %s %s%s?%s at %d", HeaderSignature, r.Method, r.Host, r.URL.EscapedPath(), r.URL.RawQuery, ts)
	}
	return addr, bech, nonce, nil
}

// maxNonces bounds the nonces remembered at once (each for 2 x MaxClockSkew), and
// maxNoncesPerSigner those of one signer: past either, requests are refused until old
// ones expire, so one owner's flood of requests does not lock the others out. Vars for
// tests.
var (
	maxNonces          = 1 << 20
	maxNoncesPerSigner = 1 << 16
)

// nonces are the nonces of the requests accepted within the clock skew window: a
// request's timestamp cannot be older than that, so a nonce need not be kept longer.
type nonces struct {
	mu       sync.Mutex
	seen     map[string]spentNonce
	bySigner map[string]int
	pruned   time.Time
}

// spentNonce is a nonce's signer and when it may be forgotten.
type spentNonce struct {
	signer string
	until  time.Time
}

func (n *nonces) use(signer, nonce string, now time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen == nil {
		n.seen, n.bySigner = map[string]spentNonce{}, map[string]int{}
	}
	// expired nonces are dropped each minute, or each second while a bound is reached (not
	// at every request then: a full walk each time would be the flood's reward)
	full := len(n.seen) >= maxNonces || n.bySigner[signer] >= maxNoncesPerSigner
	if since := now.Sub(n.pruned); since > time.Minute || (full && since > time.Second) {
		for k, sn := range n.seen {
			if now.After(sn.until) {
				delete(n.seen, k)
				if n.bySigner[sn.signer]--; n.bySigner[sn.signer] <= 0 {
					delete(n.bySigner, sn.signer)
				}
			}
		}
		n.pruned = now
	}
	if _, replayed := n.seen[nonce]; replayed {
		return unauthorized("%s %s was used before: a signed request is good for one use", HeaderNonce, nonce)
	}
	if n.bySigner[signer] >= maxNoncesPerSigner {
		return &authError{http.StatusTooManyRequests, fmt.Sprintf("%s sent more than %d signed requests in the last %s: try again later", signer, maxNoncesPerSigner, 2*MaxClockSkew)}
	}
	if len(n.seen) >= maxNonces {
		return &authError{http.StatusServiceUnavailable, "too many signed requests in the last minutes: try again later"}
	}
	n.seen[nonce] = spentNonce{signer: signer, until: now.Add(2 * MaxClockSkew)}
	n.bySigner[signer]++
	return nil
}
