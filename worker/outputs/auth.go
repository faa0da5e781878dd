package outputs

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
)

// SignatureDomain starts every signed message.
const SignatureDomain = "flops-output-v1\n"

// MaxClockSkew is how far a request's timestamp may be from the server's clock, either
// way.
const MaxClockSkew = 5 * time.Minute

// SignedMessage is what a request's signature covers: SignatureDomain || method || "\n"
// || escaped path || "\n" || unix seconds in decimal. The secp256k1 signature is over
// its sha256, 64 bytes r || s with a low s, as Cosmos SDK keys sign.
func SignedMessage(method, escapedPath string, unix int64) []byte {
	return []byte(SignatureDomain + method + "\n" + escapedPath + "\n" + strconv.FormatInt(unix, 10))
}

// SignRequest signs req with the owner's key at time now, setting the four X-Flops
// headers. The key must be a secp256k1 key (a Cosmos account key); the address header
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
	sig, err := priv.Sign(SignedMessage(req.Method, req.URL.EscapedPath(), ts))
	if err != nil {
		return fmt.Errorf("sign request: %w", err)
	}
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

// authenticate checks a signed request and returns the signer's address bytes: the
// public key must hash to the address header, the timestamp be within MaxClockSkew of
// now, and the signature verify over SignedMessage.
func authenticate(r *http.Request, now time.Time) (addr []byte, bech string, err error) {
	bech = r.Header.Get(HeaderAddress)
	pubB64, tsText, sigB64 := r.Header.Get(HeaderPubkey), r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature)
	if bech == "" || pubB64 == "" || tsText == "" || sigB64 == "" {
		return nil, "", unauthorized("a signed request needs the headers %s, %s, %s and %s", HeaderAddress, HeaderPubkey, HeaderTimestamp, HeaderSignature)
	}
	hrp, addr, err := bech32.DecodeAndConvert(bech)
	if err != nil || hrp != chain.Bech32Prefix {
		return nil, "", unauthorized("%s %q: not a %s bech32 address", HeaderAddress, bech, chain.Bech32Prefix)
	}
	key, err := base64.StdEncoding.DecodeString(pubB64)
	if err != nil || len(key) != secp256k1.PubKeySize {
		return nil, "", unauthorized("%s: must be a base64 compressed secp256k1 public key (%d bytes)", HeaderPubkey, secp256k1.PubKeySize)
	}
	pub := &secp256k1.PubKey{Key: key}
	if !bytes.Equal(pub.Address(), addr) {
		return nil, "", unauthorized("%s does not belong to %s %s", HeaderPubkey, HeaderAddress, bech)
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return nil, "", unauthorized("%s %q: must be unix seconds", HeaderTimestamp, tsText)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > MaxClockSkew || skew < -MaxClockSkew {
		return nil, "", unauthorized("%s %d is %s from the server's clock; at most %s is accepted", HeaderTimestamp, ts, skew.Round(time.Second), MaxClockSkew)
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return nil, "", unauthorized("%s: not base64", HeaderSignature)
	}
	if !pub.VerifySignature(SignedMessage(r.Method, r.URL.EscapedPath(), ts), sig) {
		return nil, "", unauthorized("%s does not verify for %s %s at %d", HeaderSignature, r.Method, r.URL.EscapedPath(), ts)
	}
	return addr, bech, nil
}
