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
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/flopsnet/flops/internal/chain"
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

// DelegationDomain starts every delegation. v2 added the issue time, which a revocation
// (revocation.go) is weighed against; a v1 delegation, which had none and so could not be
// revoked, is refused.
const DelegationDomain = "flops-output-delegation-v2"

// MaxDelegation is the longest a delegation may last, from its issue time.
const MaxDelegation = 24 * time.Hour

// DelegationDoc is what the owner signs to let the session key (base64 of its compressed
// secp256k1 public key) sign its requests to host (as in SignedMessage) from issued until
// expires (unix seconds): lines joined by "\n".
func DelegationDoc(owner, sessionKey, host string, issued, expires int64) []byte {
	return []byte(strings.Join([]string{DelegationDomain, "owner: " + owner, "key: " + sessionKey, "host: " + strings.ToLower(host),
		"issued: " + strconv.FormatInt(issued, 10), "expires: " + strconv.FormatInt(expires, 10)}, "\n"))
}

// Delegation is a signed delegation, as its headers carry it.
type Delegation struct {
	Doc         []byte
	OwnerPubkey []byte
	Signature   []byte
	SignMode    string // "" (raw) or SignModeADR036
}

// Delegate has owner sign a delegation of its requests to host to session, issued now, until
// expires.
func Delegate(owner, session cryptotypes.PrivKey, ownerAddr, host string, now, expires time.Time) (Delegation, error) {
	doc := DelegationDoc(ownerAddr, base64.StdEncoding.EncodeToString(session.PubKey().Bytes()), host, now.Unix(), expires.Unix())
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
// for owner (bech, addr) at this host now: the doc names them, was issued no later than
// now (give or take MaxClockSkew) and after the owner's last revocation here (revoked, nil
// for none), has not expired, lasts at most MaxDelegation, and the owner's key (which must
// be owner's address) signed it.
func checkDelegation(r *http.Request, bech string, addr []byte, pubB64 string, now time.Time, revoked *Revocations) error {
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
	issued, issuedErr := strconv.ParseInt(field(4, "issued"), 10, 64)
	expires, err := strconv.ParseInt(field(5, "expires"), 10, 64)
	switch {
	case len(lines) != 6 || lines[0] != DelegationDomain:
		return unauthorized("%s: not a %s delegation", HeaderDelegation, DelegationDomain)
	case field(1, "owner") != bech:
		return unauthorized("%s: it delegates %s's requests, not %s's", HeaderDelegation, field(1, "owner"), bech)
	case field(2, "key") != pubB64:
		return unauthorized("%s: it delegates to another key than %s", HeaderDelegation, HeaderPubkey)
	case field(3, "host") != strings.ToLower(r.Host):
		return unauthorized("%s: it is for host %q, not %q", HeaderDelegation, field(3, "host"), r.Host)
	case issuedErr != nil || err != nil:
		return unauthorized("%s: issued and expires must be unix seconds", HeaderDelegation)
	case time.Unix(issued, 0).Sub(now) > MaxClockSkew:
		return unauthorized("%s: issued at %d, %s after the server's clock; at most %s is accepted", HeaderDelegation, issued, time.Unix(issued, 0).Sub(now), MaxClockSkew)
	case !now.Before(time.Unix(expires, 0)):
		return unauthorized("%s: expired at %d", HeaderDelegation, expires)
	case issued < expires-int64(MaxDelegation/time.Second): // expires is after now: no overflow
		return unauthorized("%s: lasts more than %s from its issue (%d to %d); at most %s is accepted", HeaderDelegation, MaxDelegation, issued, expires, MaxDelegation)
	}
	canonical, err := bech32.ConvertAndEncode(chain.Bech32Prefix, addr)
	if err != nil {
		return unauthorized("%s %q: %v", HeaderAddress, bech, err)
	}
	if before := revoked.Before(canonical); issued < before {
		return unauthorized("%s: issued at %d, before %s ended its sessions here (those issued before %d): sign a new delegation", HeaderDelegation, issued, bech, before)
	}
	return verifyOwnerSigned(r, doc, HeaderDelegationPubkey, HeaderDelegationSignature, HeaderDelegationSignMode, bech, addr)
}

// verifyOwnerSigned checks that doc (a delegation, a revocation) is signed by the account
// bech (addr): its public key in the header pubkeyHeader hashes to the address, and the
// signature in sigHeader verifies over doc, raw or as ADR-036 as modeHeader says.
func verifyOwnerSigned(r *http.Request, doc []byte, pubkeyHeader, sigHeader, modeHeader, bech string, addr []byte) error {
	ownerKey, err := base64.StdEncoding.DecodeString(r.Header.Get(pubkeyHeader))
	if err != nil || len(ownerKey) != secp256k1.PubKeySize {
		return unauthorized("%s: must be a base64 compressed secp256k1 public key (%d bytes)", pubkeyHeader, secp256k1.PubKeySize)
	}
	owner := &secp256k1.PubKey{Key: ownerKey}
	if !bytes.Equal(owner.Address(), addr) {
		return unauthorized("%s does not belong to %s", pubkeyHeader, bech)
	}
	sig, err := base64.StdEncoding.DecodeString(r.Header.Get(sigHeader))
	if err != nil {
		return unauthorized("%s: not base64", sigHeader)
	}
	signed := doc
	switch mode := r.Header.Get(modeHeader); mode {
	case "", "raw":
	case SignModeADR036:
		signed = ADR036SignDoc(bech, doc)
	default:
		return unauthorized("%s %q: must be raw or %s", modeHeader, mode, SignModeADR036)
	}
	if !owner.VerifySignature(signed, sig) {
		return unauthorized("%s does not verify for %s", sigHeader, bech)
	}
	return nil
}

// delegationHeaders are the headers a delegated request adds (CORS).
var delegationHeaders = []string{HeaderDelegation, HeaderDelegationPubkey, HeaderDelegationSignature, HeaderDelegationSignMode}
