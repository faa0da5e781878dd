package outputs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/flopsnet/flops/internal/chain"
)

// A revocation ends, at an output server, every delegation (delegation.go) its owner
// issued before a time: a session key that leaked (a tab's memory read by a browser
// extension, a laptop left signed in) reads nothing more there, where it had read the
// owner's outputs and logs until its delegation expired, up to a day later. The owner
// signs one doc, raw or ADR-036 (a browser wallet asks once), and sends it to each
// provider holding its tasks: POST /v1/tasks/{id}/revocation, id one of its tasks held
// there, with the doc in these headers (as a delegation's):
const (
	// HeaderRevocation is base64 of RevocationDoc.
	HeaderRevocation = "X-Flops-Revocation"
	// HeaderRevocationPubkey is the owner's public key (base64, compressed secp256k1).
	HeaderRevocationPubkey = "X-Flops-Revocation-Pubkey"
	// HeaderRevocationSignature is the owner's signature of the doc (base64, r || s).
	HeaderRevocationSignature = "X-Flops-Revocation-Signature"
	// HeaderRevocationSignMode is how the owner signed the doc: absent or "raw", or
	// "adr036".
	HeaderRevocationSignMode = "X-Flops-Revocation-Sign-Mode"
)

// RevocationDomain starts every revocation.
const RevocationDomain = "flops-output-revocation-v1"

// RevocationDoc is what the owner signs to end its delegations issued before before (unix
// seconds): lines joined by "\n". It names no host: one signature ends the sessions at
// every provider it is sent to. Sent again, here or elsewhere, it ends nothing the owner
// did not ask to end, and a server keeps the latest time it was given. Times are whole
// seconds: to end every delegation issued so far, a delegation of this very second
// included, revoke before the next second (RevokeAllUntil), and issue the next delegation
// at that time or later.
func RevocationDoc(owner string, before int64) []byte {
	return []byte(strings.Join([]string{RevocationDomain, "owner: " + owner, "before: " + strconv.FormatInt(before, 10)}, "\n"))
}

// Revocation is a signed revocation, as its headers carry it.
type Revocation struct {
	Doc         []byte
	OwnerPubkey []byte
	Signature   []byte
	SignMode    string // "" (raw) or SignModeADR036
}

// Revoke has owner sign the end of its delegations issued before before.
func Revoke(owner cryptotypes.PrivKey, ownerAddr string, before time.Time) (Revocation, error) {
	doc := RevocationDoc(ownerAddr, before.Unix())
	sig, err := owner.Sign(doc)
	if err != nil {
		return Revocation{}, err
	}
	return Revocation{Doc: doc, OwnerPubkey: owner.PubKey().Bytes(), Signature: sig}, nil
}

// RevokeAllUntil is the revocation time that ends every delegation issued up to now: the
// next whole second (a delegation issued earlier in now's second is ended too). It is at
// most a second ahead of the clock, within MaxClockSkew.
func RevokeAllUntil(now time.Time) time.Time { return now.Truncate(time.Second).Add(time.Second) }

// revocationURL is Handler's revocation route for a task under baseURL.
func revocationURL(baseURL string, taskID uint64) string {
	return strings.TrimRight(baseURL, "/") + "/v1/tasks/" + strconv.FormatUint(taskID, 10) + "/revocation"
}

// SendRevocation sends rv to the output server at baseURL, naming taskID, one of the
// owner's tasks it holds, and returns the time before which the server now refuses the
// owner's delegations (rv's, or a later one it was sent before).
func SendRevocation(ctx context.Context, client *http.Client, baseURL string, taskID uint64, rv Revocation) (int64, error) {
	u := revocationURL(baseURL, taskID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(HeaderRevocation, base64.StdEncoding.EncodeToString(rv.Doc))
	req.Header.Set(HeaderRevocationPubkey, base64.StdEncoding.EncodeToString(rv.OwnerPubkey))
	req.Header.Set(HeaderRevocationSignature, base64.StdEncoding.EncodeToString(rv.Signature))
	if rv.SignMode != "" {
		req.Header.Set(HeaderRevocationSignMode, rv.SignMode)
	}
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct {
		Error         string `json:"error"`
		RevokedBefore string `json:"revoked_before"`
	}
	decoded := json.Unmarshal(b, &body) == nil
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		if decoded && body.Error != "" {
			msg = body.Error
		}
		return 0, &statusError{url: u, status: resp.Status, code: resp.StatusCode, msg: msg}
	}
	before, err := strconv.ParseInt(body.RevokedBefore, 10, 64)
	if !decoded || err != nil {
		return 0, fmt.Errorf("POST %s: the answer %q names no revoked_before", u, b)
	}
	return before, nil
}

// statusError is a server's refusal of a revocation.
type statusError struct {
	url, status string
	code        int
	msg         string
}

func (e *statusError) Error() string { return fmt.Sprintf("POST %s: %s: %s", e.url, e.status, e.msg) }

// Revocations are the owners' revocation times an output server holds to: one time per
// owner, kept until every delegation issued before it has expired (MaxDelegation after
// it), and only for owners of tasks the server holds (the handler checks that before it
// keeps one), so that strangers with keys of their own add nothing. With a path they are
// written there at each change and read back when the worker starts again: a restart must
// not bring a revoked session back. Safe for concurrent use; a nil *Revocations holds none.
type Revocations struct {
	path   string
	mu     sync.Mutex
	before map[string]int64
}

// revocationsFile is the file's layout.
type revocationsFile struct {
	Owners map[string]int64 `json:"owners"`
}

// OpenRevocations reads the revocations kept at path (none when it does not exist yet);
// path "" keeps them in memory only (tests).
func OpenRevocations(path string) (*Revocations, error) {
	r := &Revocations{path: path, before: map[string]int64{}}
	if path == "" {
		return r, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	} else if err != nil {
		return nil, fmt.Errorf("output session revocations: %w", err)
	}
	var f revocationsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("output session revocations %s: %w", path, err)
	}
	for owner, before := range f.Owners {
		r.before[owner] = before
	}
	return r, nil
}

// Before is the time (unix seconds) before which owner's delegations are refused: 0 when
// it revoked none that can still be in use.
func (r *Revocations) Before(owner string) int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.before[owner]
}

// revoke keeps before for owner at time now, unless a later time is kept already, and
// returns the time kept. Times whose delegations have all expired are dropped; the file
// is written only when what it holds changes.
func (r *Revocations) revoke(owner string, before int64, now time.Time) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for o, b := range r.before {
		if !now.Before(time.Unix(b, 0).Add(MaxDelegation)) {
			delete(r.before, o)
			changed = true
		}
	}
	kept := r.before[owner]
	if before > kept && now.Before(time.Unix(before, 0).Add(MaxDelegation)) {
		kept = before
		r.before[owner] = before
		changed = true
	}
	if changed && r.path != "" {
		b, err := json.Marshal(revocationsFile{Owners: r.before})
		if err == nil {
			err = writeAtomic(filepath.Dir(r.path), ".revocations-*", r.path, b, 0o600)
		}
		if err != nil {
			return 0, fmt.Errorf("output session revocations: %w", err)
		}
	}
	return kept, nil
}

// WithRevocations has the handler keep revocations in r (OpenRevocations) instead of in
// memory.
func WithRevocations(r *Revocations) Option {
	return func(h *handler) { h.revocations = r }
}

// revocationHeaders are the headers a revocation adds (CORS).
var revocationHeaders = []string{HeaderRevocation, HeaderRevocationPubkey, HeaderRevocationSignature, HeaderRevocationSignMode}

// readRevocation checks the request's revocation: a well-formed doc for a flops address,
// signed (raw or ADR-036) by that address's key, for a time no later than now (give or
// take MaxClockSkew). It returns the owner and the time.
func readRevocation(r *http.Request, now time.Time) (owner string, before int64, err error) {
	doc, err := base64.StdEncoding.DecodeString(r.Header.Get(HeaderRevocation))
	if err != nil || len(doc) == 0 {
		return "", 0, unauthorized("%s: must be base64 of a %s doc", HeaderRevocation, RevocationDomain)
	}
	lines := strings.Split(string(doc), "\n")
	if len(lines) != 3 || lines[0] != RevocationDomain {
		return "", 0, unauthorized("%s: not a %s doc", HeaderRevocation, RevocationDomain)
	}
	owner, okOwner := strings.CutPrefix(lines[1], "owner: ")
	beforeText, okBefore := strings.CutPrefix(lines[2], "before: ")
	before, err = strconv.ParseInt(beforeText, 10, 64)
	if !okOwner || !okBefore || err != nil {
		return "", 0, unauthorized("%s: its lines must be owner: <address> and before: <unix seconds>", HeaderRevocation)
	}
	hrp, addr, err := bech32.DecodeAndConvert(owner)
	if err != nil || hrp != chain.Bech32Prefix {
		return "", 0, unauthorized("%s: owner %q is not a %s bech32 address", HeaderRevocation, owner, chain.Bech32Prefix)
	}
	if ahead := time.Unix(before, 0).Sub(now); ahead > MaxClockSkew {
		return "", 0, unauthorized("%s: before %d is %s after the server's clock; at most %s is accepted", HeaderRevocation, before, ahead.Round(time.Second), MaxClockSkew)
	}
	if err := verifyOwnerSigned(r, doc, HeaderRevocationPubkey, HeaderRevocationSignature, HeaderRevocationSignMode, owner, addr); err != nil {
		return "", 0, err
	}
	return owner, before, nil
}

// serveRevocation keeps a revocation signed by the owner of the task in its path, a task
// this machine holds something of, and answers {"owner": ..., "revoked_before": "<unix
// seconds>"}: the time before which the owner's delegations are refused here from now on.
func (h *handler) serveRevocation(w http.ResponseWriter, r *http.Request) {
	taskID, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "task id %q: must be a decimal number", r.PathValue("id"))
		return
	}
	now := h.now()
	owner, before, err := readRevocation(r, now)
	if err != nil {
		writeAuthError(w, err)
		return
	}
	if !h.holds(taskID) {
		writeError(w, http.StatusNotFound, "task %d has no outputs or logs on this machine", taskID)
		return
	}
	taskOwner, err := h.owner(r.Context(), taskID)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		writeError(w, http.StatusNotFound, "task %d not found", taskID)
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "cannot look up the owner of task %d: %v", taskID, err)
		return
	case taskOwner != owner:
		writeError(w, http.StatusForbidden, "%s is not the owner of task %d", owner, taskID)
		return
	}
	kept, err := h.revocations.revoke(owner, before, now)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"owner": owner, "revoked_before": strconv.FormatInt(kept, 10)})
}
