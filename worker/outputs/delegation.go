package outputs

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
)

// A delegation lets a session key sign an owner's requests to one output server for a
// while: the owner signs it once (a browser wallet asks its user once), and the page signs
// each request with the session key it holds, where a wallet would have asked for every
// file and for every read of a followed log (Keplr's signArbitrary shows a prompt each
// time). The request carries its session key in HeaderPubkey, its signature in
// HeaderSignature (raw), the owner's address in HeaderAddress, and these:
const (
	// HeaderDelegation is base64 of DelegationDoc.
	HeaderDelegation = "X-Flops-Delegation"
	// HeaderDelegationPubkey is the owner's public key (base64, compressed secp256k1).
	HeaderDelegationPubkey = "X-Flops-Delegation-Pubkey"
	// HeaderDelegationSignature is the owner's signature of the doc (base64, r || s).
	HeaderDelegationSignature = "X-Flops-Delegation-Signature"
	// HeaderDelegationSignMode is how the owner signed the doc: absent or "raw", or
	// "adr036" (a browser wallet's signArbitrary).
	HeaderDelegationSignMode = "X-Flops-Delegation-Sign-Mode"
)

// DelegationDomain starts every delegation.
const DelegationDomain = "flops-output-delegation-v1"

// MaxDelegation is the longest a delegation may last, from the request it is used with.
const MaxDelegation = 24 * time.Hour

// DelegationDoc is what the owner signs to let the session key (base64 of its compressed
// secp256k1 public key) sign its requests to host (as in SignedMessage) until expires
// (unix seconds): lines joined by "\n".
func DelegationDoc(owner, sessionKey, host string, expires int64) []byte {
	return []byte(strings.Join([]string{DelegationDomain, "owner: " + owner, "key: " + sessionKey, "host: " + strings.ToLower(host),
		"expires: " + strconv.FormatInt(expires, 10)}, "\n"))
}

// Delegation is a signed delegation, as its headers carry it.
type Delegation struct {
	Doc         []byte
	OwnerPubkey []byte
	Signature   []byte
	SignMode    string // "" (raw) or SignModeADR036
}

// Delegate has owner sign a delegation of its requests to host to session until expires.
func Delegate(owner, session cryptotypes.PrivKey, ownerAddr, host string, expires time.Time) (Delegation, error) {
	doc := DelegationDoc(ownerAddr, base64.StdEncoding.EncodeToString(session.PubKey().Bytes()), host, expires.Unix())
	sig, err := owner.Sign(doc)
	if err != nil {
		return Delegation{}, err
	}
	return Delegation{Doc: doc, OwnerPubkey: owner.PubKey().Bytes(), Signature: sig}, nil
}

// SignDelegated signs req with the session key of d at time now, as SignRequest signs
// with the owner's, and sets d's headers.
func SignDelegated(req *http.Request, session cryptotypes.PrivKey, ownerAddr string, d Delegation, now time.Time) error {
	if err := SignRequest(req, session, now); err != nil {
		return err
	}
	req.Header.Set(HeaderAddress, ownerAddr)
	req.Header.Set(HeaderDelegation, base64.StdEncoding.EncodeToString(d.Doc))
	req.Header.Set(HeaderDelegationPubkey, base64.StdEncoding.EncodeToString(d.OwnerPubkey))
	req.Header.Set(HeaderDelegationSignature, base64.StdEncoding.EncodeToString(d.Signature))
	if d.SignMode != "" {
		req.Header.Set(HeaderDelegationSignMode, d.SignMode)
	}
	return nil
}

// checkDelegation checks that the request's delegation lets the session key pubB64 sign
// for owner (bech, addr) at this host now: the doc names them, has not expired and lasts
// at most MaxDelegation, and the owner's key (which must be owner's address) signed it.
func checkDelegation(r *http.Request, bech string, addr []byte, pubB64 string, now time.Time) error {
	doc, err := base64.StdEncoding.DecodeString(r.Header.Get(HeaderDelegation))
	if err != nil {
		return unauthorized("%s: not base64", HeaderDelegation)
	}
	lines := strings.Split(string(doc), "\n")
	field := func(i int, name string) string {
		if i < len(lines) {
			if v, ok := strings.CutPrefix(lines[i], name+": "); ok {
				return v
			}
		}
		return ""
	}
	expires, err := strconv.ParseInt(field(4, "expires"), 10, 64)
	switch {
	case len(lines) != 5 || lines[0] != DelegationDomain:
		return unauthorized("%s: not a %s delegation", HeaderDelegation, DelegationDomain)
	case field(1, "owner") != bech:
		return unauthorized("%s: it delegates %s's requests, not %s's", HeaderDelegation, field(1, "owner"), bech)
	case field(2, "key") != pubB64:
		return unauthorized("%s: it delegates to another key than %s", HeaderDelegation, HeaderPubkey)
	case field(3, "host") != strings.ToLower(r.Host):
		return unauthorized("%s: it is for host %q, not %q", HeaderDelegation, field(3, "host"), r.Host)
	case err != nil:
		return unauthorized("%s: expires must be unix seconds", HeaderDelegation)
	case !now.Before(time.Unix(expires, 0)):
		return unauthorized("%s: expired at %d", HeaderDelegation, expires)
	case time.Unix(expires, 0).Sub(now) > MaxDelegation:
		return unauthorized("%s: lasts past %s from now; at most %s is accepted", HeaderDelegation, MaxDelegation, MaxDelegation)
	}
	ownerKey, err := base64.StdEncoding.DecodeString(r.Header.Get(HeaderDelegationPubkey))
	if err != nil || len(ownerKey) != secp256k1.PubKeySize {
		return unauthorized("%s: must be a base64 compressed secp256k1 public key (%d bytes)", HeaderDelegationPubkey, secp256k1.PubKeySize)
	}
	owner := &secp256k1.PubKey{Key: ownerKey}
	if !bytes.Equal(owner.Address(), addr) {
		return unauthorized("%s does not belong to %s %s", HeaderDelegationPubkey, HeaderAddress, bech)
	}
	sig, err := base64.StdEncoding.DecodeString(r.Header.Get(HeaderDelegationSignature))
	if err != nil {
		return unauthorized("%s: not base64", HeaderDelegationSignature)
	}
	signed := doc
	switch mode := r.Header.Get(HeaderDelegationSignMode); mode {
	case "", "raw":
	case SignModeADR036:
		signed = ADR036SignDoc(bech, doc)
	default:
		return unauthorized("%s %q: must be raw or %s", HeaderDelegationSignMode, mode, SignModeADR036)
	}
	if !owner.VerifySignature(signed, sig) {
		return unauthorized("%s does not verify for %s", HeaderDelegationSignature, bech)
	}
	return nil
}

// delegationHeaders are the headers a delegated request adds (CORS).
var delegationHeaders = []string{HeaderDelegation, HeaderDelegationPubkey, HeaderDelegationSignature, HeaderDelegationSignMode}
