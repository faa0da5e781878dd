package outputs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cosmos/cosmos-sdk/types/bech32"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/flopsnet/flops/worker/executor"
)

// ErrTaskNotFound is what an OwnerOf function wraps for a task the chain does not know;
// the handler answers 404.
var ErrTaskNotFound = errors.New("task not found")

// Handler serves the stored outputs of tasks to their jobs' owners:
//
//	GET /v1/tasks/{id}/outputs          the manifest (JSON)
//	GET /v1/tasks/{id}/outputs/{path}   one file or log (ranges supported)
//	GET /v1/tasks/{id}/logs/{stream}    stdout or stderr from ?offset=N, live while the
//	                                    task runs here (WithLiveLogs), else as stored
//	POST /v1/tasks/{id}/revocation      the owner ends its delegated sessions here
//	                                    (revocation.go)
//
// Every request must be signed (SignRequest) by the account that ownerOf names for the
// task; now is the clock the timestamps are checked against. Refusals are JSON
// {"error": "..."}: 400 a malformed id or path, 401 a missing, stale or bad signature,
// 403 a signer who is not the owner, 404 a task with nothing here (no stored outputs and
// no run's logs on this machine), an unknown task or an unlisted path, 429 an owner past
// its signed requests of the last minutes (maxNoncesPerSigner) or with
// MaxInFlightPerSigner requests being served, 503 when the owner cannot be looked up. A
// request's nonce is spent only once its signer is found to be the owner.
//
// ownerOf (a chain query) is asked only for a task this machine holds something of, and
// its answers are kept (OwnerCacheSize of them; a task's owner never changes): a stranger
// who signs requests with keys of its own, for any task ids, costs the server a signature
// check, not a query to its chain node.
func Handler(store *Store, ownerOf func(ctx context.Context, taskID uint64) (string, error), now func() time.Time, opts ...Option) http.Handler {
	owners, _ := lru.New[uint64, string](OwnerCacheSize)
	memory, _ := OpenRevocations("")
	h := &handler{store: store, ownerOf: ownerOf, owners: owners, now: now, nonces: &nonces{}, inFlight: &inFlight{n: map[string]int{}}, revocations: memory}
	for _, o := range opts {
		o(h)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/tasks/{id}/outputs", h.serveManifest)
	mux.HandleFunc("GET /v1/tasks/{id}/outputs/{path...}", h.serveFile)
	mux.HandleFunc("GET /v1/tasks/{id}/logs/{stream}", h.serveLog)
	mux.HandleFunc("POST /v1/tasks/{id}/revocation", h.serveRevocation)
	if h.checkpoints != "" {
		mux.HandleFunc("GET /v1/checkpoints/{sha256}", h.serveCheckpoint)
	}
	return cors(mux)
}

// cors lets a web page on any origin (the dashboard, wherever it is served) read outputs
// and logs: every request is authorized by its signature headers, never by a cookie or
// anything else the browser adds on its own, so another origin gains nothing a script
// without a browser could not do. A preflight is answered here, unsigned.
func cors(next http.Handler) http.Handler {
	allowHeaders := strings.Join(slices.Concat([]string{HeaderAddress, HeaderPubkey, HeaderTimestamp, HeaderSignature, HeaderNonce, HeaderSignMode, "Range"}, delegationHeaders, revocationHeaders), ", ")
	expose := strings.Join([]string{HeaderLogOffset, HeaderTaskRunning, "Content-Range", "Content-Length", "Accept-Ranges"}, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") == "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
			w.Header().Set("Access-Control-Allow-Headers", allowHeaders)
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Access-Control-Expose-Headers", expose)
		next.ServeHTTP(w, r)
	})
}

// Option configures a Handler.
type Option func(*handler)

// WithLiveLogs lets the log route read a task's logs where its run writes them: live
// returns the directory of its stdout.log and stderr.log, whether the task runs now, and
// ok false when no run of it left logs on this machine (its stored logs are served then).
func WithLiveLogs(live func(taskID uint64) (dir string, running, ok bool)) Option {
	return func(h *handler) { h.live = live }
}

// WithHosts lets only requests signed for one of hosts (host or host:port, as in the
// node's endpoint) through: a request an owner signed for another provider cannot be
// replayed here. Without it any host is accepted (tests).
func WithHosts(hosts ...string) Option {
	return func(h *handler) {
		for _, x := range hosts {
			if x != "" {
				h.hosts = append(h.hosts, strings.ToLower(x))
			}
		}
	}
}

// OwnerCacheSize is how many tasks' owners a Handler keeps.
const OwnerCacheSize = 4096

// MaxInFlightPerSigner bounds the requests of one owner served at once (the TypeScript
// client downloads 4 files at a time, the Go client 1): an owner who opened a thousand
// downloads of a large output at once would have taken the provider's whole uplink from
// its other clients.
const MaxInFlightPerSigner = 8

// inFlight counts each signer's requests being served.
type inFlight struct {
	mu sync.Mutex
	n  map[string]int
}

// enter takes one of signer's MaxInFlightPerSigner places, if one is free, until done.
func (f *inFlight) enter(signer string) (done func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[signer] >= MaxInFlightPerSigner {
		return nil, false
	}
	f.n[signer]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.n[signer]--; f.n[signer] <= 0 {
			delete(f.n, signer)
		}
	}, true
}

type handler struct {
	hosts    []string
	nonces   *nonces
	store    *Store
	ownerOf  func(ctx context.Context, taskID uint64) (string, error)
	owners   *lru.Cache[uint64, string]
	inFlight *inFlight
	// checkpoints (WithCheckpoints)
	checkpoints string
	providerOf  func(ctx context.Context, taskID uint64) (string, error)
	providers   *lru.Cache[uint64, providerAnswer]
	now         func() time.Time
	live        func(taskID uint64) (string, bool, bool)
	revocations *Revocations
}

// The log route's headers and bounds.
const (
	// HeaderLogOffset is the offset after the bytes served: the next request's offset.
	HeaderLogOffset = "X-Flops-Log-Offset"
	// HeaderTaskRunning is "true" while the task runs on this machine (more may come).
	HeaderTaskRunning = "X-Flops-Task-Running"
	// MaxLogChunk bounds the bytes of one log response.
	MaxLogChunk = 1 << 20
)

// serveLog serves a task's stdout or stderr from an offset, at most MaxLogChunk bytes:
// live while the task runs here, else the stored log (the bounded copy kept with the
// outputs; a log cut down at the end of the task reads from its cut copy).
func (h *handler) serveLog(w http.ResponseWriter, r *http.Request) {
	taskID, done, ok := h.authorize(w, r)
	if !ok {
		return
	}
	defer done()
	stream := r.PathValue("stream")
	if stream != "stdout" && stream != "stderr" {
		writeError(w, http.StatusBadRequest, "log stream %q: must be stdout or stderr", stream)
		return
	}
	var offset int64
	if o := r.URL.Query().Get("offset"); o != "" {
		v, err := strconv.ParseInt(o, 10, 64)
		if err != nil || v < 0 {
			writeError(w, http.StatusBadRequest, "offset %q: must be a byte offset, 0 or more", o)
			return
		}
		offset = v
	}
	var f *os.File
	running := false
	if h.live != nil {
		if dir, run, ok := h.live(taskID); ok {
			running = run
			// the task can write here: never follow a link it made (OpenTaskFile)
			lf, err := executor.OpenTaskFile(filepath.Join(dir, stream+".log"))
			switch {
			case err == nil:
				f = lf
			case errors.Is(err, os.ErrNotExist):
				// not created yet (running), or the run left none: the stored log, if any
			default:
				writeError(w, http.StatusForbidden, "log of task %d: not served: %v", taskID, err)
				return
			}
		}
	}
	if f == nil && !running {
		sf, _, err := h.store.OpenFile(taskID, LogPath(stream))
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "task %d has no %s log here (it does not run on this machine and left none)", taskID, stream)
			return
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, "log of task %d: %v", taskID, err)
			return
		}
		f = sf
	}
	var chunk []byte
	if f != nil {
		defer f.Close()
		if st, err := f.Stat(); err == nil && offset > st.Size() {
			offset = st.Size()
		}
		buf := make([]byte, MaxLogChunk)
		n, err := f.ReadAt(buf, offset)
		if err != nil && !errors.Is(err, io.EOF) {
			writeError(w, http.StatusInternalServerError, "log of task %d: %v", taskID, err)
			return
		}
		chunk = buf[:n]
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set(HeaderLogOffset, strconv.FormatInt(offset+int64(len(chunk)), 10))
	w.Header().Set(HeaderTaskRunning, strconv.FormatBool(running))
	_, _ = w.Write(chunk)
}

// LogPath is the output path of a task's captured log stream.
func LogPath(stream string) string { return executor.LogDir + "/" + stream + ".log" }

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}

// authorize answers the request with a refusal and returns false unless it is signed by
// the owner of the task in its path, and the owner has fewer than MaxInFlightPerSigner
// requests being served; done ends the request's share of those.
func (h *handler) authorize(w http.ResponseWriter, r *http.Request) (taskID uint64, done func(), ok bool) {
	taskID, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "task id %q: must be a decimal number", r.PathValue("id"))
		return 0, nil, false
	}
	now := h.now()
	signer, signerText, nonce, err := authenticate(r, now, h.hosts, h.revocations)
	if err != nil {
		writeAuthError(w, err)
		return 0, nil, false
	}
	if !h.holds(taskID) {
		writeError(w, http.StatusNotFound, "task %d has no outputs or logs on this machine", taskID)
		return 0, nil, false
	}
	owner, err := h.owner(r.Context(), taskID)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		writeError(w, http.StatusNotFound, "task %d not found", taskID)
		return 0, nil, false
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "cannot look up the owner of task %d: %v", taskID, err)
		return 0, nil, false
	}
	if !sameAccount(owner, signer) {
		writeError(w, http.StatusForbidden, "%s is not the owner of task %d", signerText, taskID)
		return 0, nil, false
	}
	if done, ok = h.admit(w, signerText, nonce, now); !ok {
		return 0, nil, false
	}
	return taskID, done, true
}

// admit spends the nonce of a request whose signer is entitled to it and takes one of the
// signer's places in flight (done gives it back), or answers the refusal. The nonce is
// spent only now: a request refused before can be sent again and is refused again, and
// strangers' requests fill nothing.
func (h *handler) admit(w http.ResponseWriter, signer, nonce string, now time.Time) (done func(), ok bool) {
	if err := h.nonces.use(signer, nonce, now); err != nil {
		writeAuthError(w, err)
		return nil, false
	}
	if done, ok = h.inFlight.enter(signer); !ok {
		writeError(w, http.StatusTooManyRequests, "%s has %d requests being served here: wait for one to end", signer, MaxInFlightPerSigner)
		return nil, false
	}
	return done, true
}

// owner is a task's owner: kept, or asked of ownerOf and kept.
func (h *handler) owner(ctx context.Context, taskID uint64) (string, error) {
	if owner, ok := h.owners.Get(taskID); ok {
		return owner, nil
	}
	owner, err := h.ownerOf(ctx, taskID)
	if err != nil {
		return "", err
	}
	h.owners.Add(taskID, owner)
	return owner, nil
}

// sameAccount says whether the bech32 address addr is the account signer.
func sameAccount(addr string, signer []byte) bool {
	_, b, err := bech32.DecodeAndConvert(addr)
	return err == nil && bytes.Equal(b, signer)
}

// holds says whether this machine has anything of the task to serve: stored outputs, or
// a run's logs (WithLiveLogs).
func (h *handler) holds(taskID uint64) bool {
	if h.store.Has(taskID) {
		return true
	}
	if h.live != nil {
		if _, _, ok := h.live(taskID); ok {
			return true
		}
	}
	return false
}

func writeAuthError(w http.ResponseWriter, err error) {
	var ae *authError
	if errors.As(err, &ae) {
		w.Header().Set("WWW-Authenticate", `FlopsSignature realm="outputs"`)
		writeError(w, ae.status, "%s", ae.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, "authentication failed")
}

func (h *handler) serveManifest(w http.ResponseWriter, r *http.Request) {
	taskID, done, ok := h.authorize(w, r)
	if !ok {
		return
	}
	defer done()
	m, err := h.store.Manifest(taskID)
	if errors.Is(err, ErrNotFound) {
		writeError(w, http.StatusNotFound, "no outputs are stored for task %d", taskID)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "manifest of task %d: %v", taskID, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(m)
}

// validOutputPath reports whether p can be a manifest path: clean, relative, with no
// "." or ".." segment. The handler serves only paths a manifest lists; this refuses
// traversal attempts before the lookup, with a clearer answer.
func validOutputPath(p string) bool {
	if p == "" || strings.ContainsRune(p, 0) || strings.Contains(p, "\\") || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." || seg == "" {
			return false
		}
	}
	return true
}

func (h *handler) serveFile(w http.ResponseWriter, r *http.Request) {
	taskID, done, ok := h.authorize(w, r)
	if !ok {
		return
	}
	defer done()
	p := r.PathValue("path")
	if !validOutputPath(p) {
		writeError(w, http.StatusBadRequest, "output path %q: must be a clean relative path", p)
		return
	}
	f, entry, err := h.store.OpenFile(taskID, p)
	if errors.Is(err, ErrNotFound) {
		writeError(w, http.StatusNotFound, "task %d has no output %q", taskID, p)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "output %q of task %d: %v", p, taskID, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("ETag", `"sha256:`+entry.SHA256+`"`)
	w.Header().Set("X-Flops-Sha256", entry.SHA256)
	http.ServeContent(w, r, "", time.Time{}, f)
}
