package outputs

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmos/cosmos-sdk/crypto/keys/ed25519"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/internal/chain"
	"github.com/flopsnet/flops/worker/executor"
)

func addrOf(t *testing.T, k cryptotypes.PrivKey) string {
	a, err := bech32.ConvertAndEncode(chain.Bech32Prefix, k.PubKey().Address())
	require.NoError(t, err)
	return a
}

// fixture is a store holding the outputs of task 7 (owned by owner) behind the
// handler, with a clock the test sets.
type fixture struct {
	store  *Store
	srv    *httptest.Server
	owner  *secp256k1.PrivKey
	other  *secp256k1.PrivKey
	result executor.Result
	mu     sync.Mutex
	now    time.Time
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

var outputsOfTask7 = map[string]string{
	"model.bin":        "\x00\x01weights\xff",
	"metrics/loss.csv": "epoch,loss\n1,0.5\n",
	"a b/c%d.txt":      "odd names are escaped",
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	out := t.TempDir()
	for p, c := range outputsOfTask7 {
		full := filepath.Join(out, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(out, executor.LogDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, executor.LogDir, "stdout.log"), []byte("training...\n"), 0o644))
	files, logs, err := executor.HashOutputs(context.Background(), out, nil)
	require.NoError(t, err)
	root, err := executor.ManifestRoot(files)
	require.NoError(t, err)
	res := executor.Result{Root: root, OutputDir: out, Files: files, Logs: logs}

	store, err := Open(t.TempDir())
	require.NoError(t, err)
	_, err = store.Put(context.Background(), 7, res)
	require.NoError(t, err)

	f := &fixture{store: store, owner: secp256k1.GenPrivKey(), other: secp256k1.GenPrivKey(), result: res, now: time.Now()}
	owners := map[uint64]string{7: addrOf(t, f.owner), 8: addrOf(t, f.owner)}
	ownerOf := func(_ context.Context, id uint64) (string, error) {
		if id == 99 {
			return "", fmt.Errorf("node unreachable")
		}
		o, ok := owners[id]
		if !ok {
			return "", fmt.Errorf("task %d: %w", id, ErrTaskNotFound)
		}
		return o, nil
	}
	f.srv = httptest.NewServer(Handler(store, ownerOf, f.clock, opts...))
	t.Cleanup(f.srv.Close)
	return f
}

// do sends a GET of path signed by key at time at, after mutate edits the request.
func (f *fixture) do(t *testing.T, path string, key cryptotypes.PrivKey, at time.Time, mutate func(*http.Request)) (int, string) {
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	require.NoError(t, err)
	if key != nil {
		require.NoError(t, SignRequest(req, key, at))
	}
	if mutate != nil {
		mutate(req)
	}
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The owner fetches the whole task, every file verified, and the roots match the result.
func TestOwnerFetches(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	fetched, err := Fetch(context.Background(), f.srv.Client(), f.srv.URL, 7, f.owner, dir, Committed{ResultRoot: f.result.Root[:]})
	require.NoError(t, err)
	require.Equal(t, f.result.Files, fetched.Files)
	for p, c := range outputsOfTask7 {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		require.NoError(t, err, p)
		require.Equal(t, c, string(b), p)
	}
	b, err := os.ReadFile(filepath.Join(dir, executor.LogDir, "stdout.log"))
	require.NoError(t, err)
	require.Equal(t, "training...\n", string(b))

	m, err := FetchManifest(context.Background(), f.srv.Client(), f.srv.URL, 7, f.owner)
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(f.result.Root[:]), m.ResultRoot)
	require.Equal(t, m.Root, m.ResultRoot)
	require.Equal(t, f.result.Files, m.Files)

	// A file alone, with its digest in the headers and ranges served.
	status, body := f.do(t, "/v1/tasks/7/outputs/metrics/loss.csv", f.owner, f.clock(), func(r *http.Request) { r.Header.Set("Range", "bytes=0-4") })
	require.Equal(t, http.StatusPartialContent, status)
	require.Equal(t, "epoch", body)
}

// Refusals, each with its status and a message that says why.
func TestRefusals(t *testing.T) {
	f := newFixture(t)
	now := f.clock()
	// outputs held here of a task the chain does not know, and of one whose owner cannot
	// be looked up
	for _, id := range []uint64{12, 99} {
		_, err := f.store.Put(context.Background(), id, f.result)
		require.NoError(t, err)
	}
	cases := []struct {
		name   string
		path   string
		key    cryptotypes.PrivKey
		at     time.Time
		mutate func(*http.Request)
		status int
		msg    string
	}{
		{"unsigned", "/v1/tasks/7/outputs", nil, now, nil, http.StatusUnauthorized, "needs the headers"},
		{"another key", "/v1/tasks/7/outputs", f.other, now, nil, http.StatusForbidden, "is not the owner of task 7"},
		{"another key, a file", "/v1/tasks/7/outputs/model.bin", f.other, now, nil, http.StatusForbidden, "not the owner"},
		{"stale timestamp", "/v1/tasks/7/outputs", f.owner, now.Add(-MaxClockSkew - time.Second), nil, http.StatusUnauthorized, "from the server's clock"},
		{"future timestamp", "/v1/tasks/7/outputs", f.owner, now.Add(MaxClockSkew + time.Minute), nil, http.StatusUnauthorized, "from the server's clock"},
		{"tampered signature", "/v1/tasks/7/outputs", f.owner, now, func(r *http.Request) {
			sig, _ := base64.StdEncoding.DecodeString(r.Header.Get(HeaderSignature))
			sig[10] ^= 0x40
			r.Header.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
		}, http.StatusUnauthorized, "does not verify"},
		{"signature for another path", "/v1/tasks/7/outputs/model.bin", f.owner, now, func(r *http.Request) {
			r.URL.Path = "/v1/tasks/7/outputs/metrics/loss.csv"
		}, http.StatusUnauthorized, "does not verify"},
		{"replayed timestamp with a new time header", "/v1/tasks/7/outputs", f.owner, now.Add(-time.Hour), func(r *http.Request) {
			r.Header.Set(HeaderTimestamp, fmt.Sprint(now.Unix()))
		}, http.StatusUnauthorized, "does not verify"},
		{"pubkey of someone else", "/v1/tasks/7/outputs", f.other, now, func(r *http.Request) {
			r.Header.Set(HeaderAddress, addrOf(t, f.owner))
		}, http.StatusUnauthorized, "does not belong to"},
		{"not a flops address", "/v1/tasks/7/outputs", f.owner, now, func(r *http.Request) {
			a, _ := bech32.ConvertAndEncode("cosmos", f.owner.PubKey().Address())
			r.Header.Set(HeaderAddress, a)
		}, http.StatusUnauthorized, "bech32 address"},
		{"unknown task", "/v1/tasks/12/outputs", f.owner, now, nil, http.StatusNotFound, "task 12 not found"},
		{"nothing here", "/v1/tasks/8/outputs", f.owner, now, nil, http.StatusNotFound, "task 8 has no outputs or logs on this machine"},
		{"nothing here, a stranger", "/v1/tasks/8/outputs", f.other, now, nil, http.StatusNotFound, "task 8 has no outputs or logs on this machine"},
		{"unlisted file", "/v1/tasks/7/outputs/secret.txt", f.owner, now, nil, http.StatusNotFound, `no output "secret.txt"`},
		{"owner lookup down", "/v1/tasks/99/outputs", f.owner, now, nil, http.StatusServiceUnavailable, "cannot look up"},
		{"bad id", "/v1/tasks/seven/outputs", f.owner, now, nil, http.StatusBadRequest, "decimal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.do(t, tc.path, tc.key, tc.at, tc.mutate)
			require.Equal(t, tc.status, status, body)
			var e struct{ Error string }
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Contains(t, e.Error, tc.msg)
		})
	}
	// A client with a key that is not secp256k1 cannot sign at all.
	req := httptest.NewRequest(http.MethodGet, "/v1/tasks/7/outputs", nil)
	require.Error(t, SignRequest(req, ed25519.GenPrivKey(), now))
}

// Path traversal reaches nothing outside the task's manifest, whatever the encoding.
func TestPathTraversal(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.store.dir, "tasks", "7.json")
	require.FileExists(t, secret)
	for p, want := range map[string]int{
		// The mux cleans the path and redirects; the cleaned path matches no route.
		"/v1/tasks/7/outputs/../../../etc/passwd": http.StatusNotFound,
		// Encoded separators and dots reach the handler's own check.
		"/v1/tasks/7/outputs/..%2f..%2ftasks%2f7.json":                  http.StatusBadRequest,
		"/v1/tasks/7/outputs/metrics/%2e%2e/%2e%2e/%2e%2e/tasks/7.json": http.StatusBadRequest,
		"/v1/tasks/7/outputs/%2fetc%2fpasswd":                           http.StatusBadRequest,
		"/v1/tasks/7/outputs/metrics\\..\\..\\tasks\\7.json":            http.StatusBadRequest,
	} {
		status, body := f.do(t, p, f.owner, f.clock(), nil)
		require.Equal(t, want, status, "%s: %s", p, body)
		require.NotContains(t, body, "result_root", p)
	}
	for _, p := range []string{"../x", "a/../x", "/x", "a//b", "./a", "a/.", "", "a\\..\\b"} {
		require.False(t, validOutputPath(p), p)
	}
	require.True(t, validOutputPath("a b/c%d.txt"))

	// The signed path is what the handler sees: a raw request to the handler with a
	// traversing path is refused with 400 once authenticated.
	h := Handler(f.store, func(context.Context, uint64) (string, error) { return addrOf(t, f.owner), nil }, f.clock)
	req := httptest.NewRequest(http.MethodGet, "/v1/tasks/7/outputs/metrics/..%5C..%5Csecret", nil)
	require.NoError(t, SignRequest(req, f.owner, f.clock()))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
}

// Fetch refuses a server whose files or manifest do not check out.
func TestFetchVerifies(t *testing.T) {
	owner := secp256k1.GenPrivKey()
	good := executor.OutputFile{Path: "out.txt", Size: 5, SHA256: hex.EncodeToString(sha(t, "hello"))}
	root, err := executor.ManifestRoot([]executor.OutputFile{good})
	require.NoError(t, err)
	manifest := func(files []executor.OutputFile, rootHex string) Manifest {
		return Manifest{TaskID: 1, Root: rootHex, ResultRoot: rootHex, Files: files, Logs: []executor.OutputFile{}}
	}
	cases := []struct {
		name string
		m    Manifest
		body string
		msg  string
	}{
		{"tampered content", manifest([]executor.OutputFile{good}, hex.EncodeToString(root[:])), "HELLO", "sha256"},
		{"truncated content", manifest([]executor.OutputFile{good}, hex.EncodeToString(root[:])), "hell", "4 bytes"},
		{"root not of the files", manifest([]executor.OutputFile{good}, strings.Repeat("00", 32)), "hello", "manifest root"},
		{"traversing path", manifest([]executor.OutputFile{{Path: "../evil", Size: 5, SHA256: good.SHA256}}, hex.EncodeToString(root[:])), "hello", "clean relative path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/outputs") {
					_ = json.NewEncoder(w).Encode(tc.m)
					return
				}
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			dir := t.TempDir()
			_, err := Fetch(context.Background(), srv.Client(), srv.URL, 1, owner, dir, Committed{ResultRoot: root[:]})
			require.ErrorContains(t, err, tc.msg)
			_, statErr := os.Stat(filepath.Join(dir, "out.txt"))
			require.True(t, os.IsNotExist(statErr), "a file that does not verify is not kept")
			_, statErr = os.Stat(filepath.Join(filepath.Dir(dir), "evil"))
			require.True(t, os.IsNotExist(statErr))
		})
	}
}

func sha(t *testing.T, s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// The store keeps each content once, refuses outputs that changed since the run, and
// GC reclaims what no manifest lists.
func TestStore(t *testing.T) {
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "a"), []byte("same"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "b"), []byte("same"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "c"), []byte("only in 1"), 0o644))
	files, _, err := executor.HashOutputs(context.Background(), out, nil)
	require.NoError(t, err)
	root, err := executor.ManifestRoot(files)
	require.NoError(t, err)
	s, err := Open(t.TempDir())
	require.NoError(t, err)
	_, err = s.Put(context.Background(), 1, executor.Result{Root: root, OutputDir: out, Files: files})
	require.NoError(t, err)
	_, err = s.Put(context.Background(), 2, executor.Result{Root: root, OutputDir: out, Files: files[:2]})
	require.NoError(t, err)
	blobs := func() int {
		n := 0
		_ = filepath.WalkDir(filepath.Join(s.dir, "blobs"), func(_ string, de os.DirEntry, _ error) error {
			if de != nil && !de.IsDir() {
				n++
			}
			return nil
		})
		return n
	}
	require.Equal(t, 2, blobs(), "equal contents are stored once")

	fh, entry, err := s.OpenFile(1, "c")
	require.NoError(t, err)
	b, err := io.ReadAll(fh)
	fh.Close()
	require.NoError(t, err)
	require.Equal(t, "only in 1", string(b))
	require.Equal(t, files[2], entry)
	_, _, err = s.OpenFile(2, "c")
	require.ErrorIs(t, err, ErrNotFound)

	require.NoError(t, s.Remove(1))
	_, err = s.Manifest(1)
	require.ErrorIs(t, err, ErrNotFound)
	n, err := s.GC(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, blobs())

	// An output modified after the run is refused.
	require.NoError(t, os.WriteFile(filepath.Join(out, "c"), []byte("changed"), 0o644))
	_, err = s.Put(context.Background(), 3, executor.Result{Root: root, OutputDir: out, Files: files})
	require.ErrorContains(t, err, "changed since the task ran")
	_, err = s.Manifest(3)
	require.ErrorIs(t, err, ErrNotFound)
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The owner follows a running task's stdout: lines appear as the task writes them, and
// the copy ends once the task no longer runs, with every byte written. Nobody else is
// served, and a task that runs no more is read from its stored logs.
func TestLogsFollowARunningTask(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "stdout.log")
	require.NoError(t, os.WriteFile(logFile, []byte("line 1\n"), 0o644))
	var mu sync.Mutex
	running := true
	live := func(id uint64) (string, bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		if id != 8 {
			return "", false, false
		}
		return dir, running, true
	}
	owners := func(_ context.Context, id uint64) (string, error) {
		if id == 7 || id == 8 {
			return addrOf(t, f.owner), nil
		}
		return "", ErrTaskNotFound
	}
	srv := httptest.NewServer(Handler(f.store, owners, f.clock, WithLiveLogs(live)))
	t.Cleanup(srv.Close)

	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- CopyLog(context.Background(), srv.Client(), srv.URL, 8, "stdout", f.owner, true, 10*time.Millisecond, &out)
	}()
	require.Eventually(t, func() bool { return out.String() == "line 1\n" }, 5*time.Second, 5*time.Millisecond)
	lf, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = lf.WriteString("line 2\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return out.String() == "line 1\nline 2\n" }, 5*time.Second, 5*time.Millisecond, "shown while it runs")
	_, err = lf.WriteString("last line\n")
	require.NoError(t, err)
	require.NoError(t, lf.Close())
	mu.Lock()
	running = false
	mu.Unlock()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("--follow did not end after the task")
	}
	require.Equal(t, "line 1\nline 2\nlast line\n", out.String())

	// refused to anyone but the owner
	for _, key := range []cryptotypes.PrivKey{f.other, nil} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/tasks/8/logs/stdout", nil)
		require.NoError(t, err)
		if key != nil {
			require.NoError(t, SignRequest(req, key, f.clock()))
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Contains(t, []int{http.StatusForbidden, http.StatusUnauthorized}, resp.StatusCode)
	}
	err = CopyLog(context.Background(), srv.Client(), srv.URL, 8, "stdout", f.other, false, time.Millisecond, io.Discard)
	require.ErrorContains(t, err, "403")

	// a task that does not run here: its stored log, from an offset
	var stored strings.Builder
	require.NoError(t, CopyLog(context.Background(), srv.Client(), srv.URL, 7, "stdout", f.owner, true, time.Millisecond, &stored))
	require.Equal(t, "training...\n", stored.String())
	status, body := f.do(t, "/v1/tasks/7/logs/stdout?offset=9", f.owner, f.clock(), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "..\n", body)
	status, _ = f.do(t, "/v1/tasks/7/logs/secrets", f.owner, f.clock(), nil)
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = f.do(t, "/v1/tasks/7/logs/stdout?offset=-1", f.owner, f.clock(), nil)
	require.Equal(t, http.StatusBadRequest, status)
}

// A job that replaces its log with a link to one of the worker's files (its key) is not
// served that file: neither a symbolic link (of the log or of its directory) nor a hard
// link is followed.
func TestAttackJobLinksItsLogToTheWorkerKey(t *testing.T) {
	f := newFixture(t)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "key")
	require.NoError(t, os.WriteFile(secret, []byte("-----BEGIN KEY-----\nworker secret\n"), 0o600))
	work := t.TempDir()
	symLinkDir := filepath.Join(work, "symlink")
	hardLinkDir := filepath.Join(work, "hardlink")
	require.NoError(t, os.MkdirAll(symLinkDir, 0o755))
	require.NoError(t, os.MkdirAll(hardLinkDir, 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(symLinkDir, "stdout.log")))
	hard := os.Link(secret, filepath.Join(hardLinkDir, "stdout.log")) == nil
	require.NoError(t, os.WriteFile(filepath.Join(secretDir, "stdout.log"), []byte("worker secret\n"), 0o600))
	dirLink := filepath.Join(work, "dirlink")
	require.NoError(t, os.Symlink(secretDir, dirLink))
	dirs := map[uint64]string{10: symLinkDir, 11: hardLinkDir, 12: dirLink}
	live := func(id uint64) (string, bool, bool) { d, ok := dirs[id]; return d, true, ok }
	owners := func(context.Context, uint64) (string, error) { return addrOf(t, f.owner), nil }
	srv := httptest.NewServer(Handler(f.store, owners, f.clock, WithLiveLogs(live)))
	t.Cleanup(srv.Close)
	for id := range dirs {
		if id == 11 && !hard {
			continue // a hard link needs one file system
		}
		var out strings.Builder
		err := CopyLog(context.Background(), srv.Client(), srv.URL, id, "stdout", f.owner, false, time.Millisecond, &out)
		require.Error(t, err, "task %d", id)
		require.NotContains(t, out.String()+err.Error(), "worker secret", "task %d", id)
	}
}

// A relay (or the provider that received it) that captured an owner's signed request
// cannot use it again: not on the same server (the nonce is spent), not on another
// provider (the host is signed), not for another log offset (the query is signed).
func TestAttackReplayedOutputRequestIsRefused(t *testing.T) {
	f := newFixture(t)
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/tasks/7/outputs", nil)
	require.NoError(t, err)
	require.NoError(t, SignRequest(req, f.owner, f.clock()))
	send := func(h http.Handler, r *http.Request) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	owner := func(context.Context, uint64) (string, error) { return addrOf(t, f.owner), nil }
	srvHost := strings.TrimPrefix(f.srv.URL, "http://")
	h := Handler(f.store, owner, f.clock, WithHosts(srvHost))
	captured := req.Clone(context.Background())
	status, body := send(h, req)
	require.Equal(t, http.StatusOK, status, body)
	status, body = send(h, captured)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body, "used before")

	// the same request, never used, replayed to another provider
	fresh, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/tasks/7/outputs", nil)
	require.NoError(t, err)
	require.NoError(t, SignRequest(fresh, f.owner, f.clock()))
	other := Handler(f.store, owner, f.clock, WithHosts("other-provider.example:8470"))
	status, body = send(other, fresh.Clone(context.Background()))
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body, "not this server")
	moved := fresh.Clone(context.Background())
	moved.Host = "other-provider.example:8470" // the relay rewrites the Host header
	status, body = send(other, moved)
	require.Equal(t, http.StatusUnauthorized, status, "the host is signed")
	require.Contains(t, body, "does not verify")

	// a signed log request cannot be moved to another offset
	logReq, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/tasks/7/logs/stdout?offset=0", nil)
	require.NoError(t, err)
	require.NoError(t, SignRequest(logReq, f.owner, f.clock()))
	logReq.URL.RawQuery = "offset=5"
	status, body = send(h, logReq)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body, "does not verify")

	// a request without a nonce, as the previous protocol sent, is refused
	status, _ = f.do(t, "/v1/tasks/7/outputs", f.owner, f.clock(), func(r *http.Request) { r.Header.Del(HeaderNonce) })
	require.Equal(t, http.StatusUnauthorized, status)
}

// ADR036SignDoc is byte for byte the sign doc CosmJS's amino signers and Keplr's
// signArbitrary sign (this golden string is CosmJS 0.39's serializeSignDoc of the same
// doc), so a browser wallet's signature verifies here.
func TestADR036SignDocMatchesCosmJS(t *testing.T) {
	msg := SignedMessage("GET", "h:1", "/v1/tasks/7/outputs", "", 1700000000, "00112233445566778899aabbccddeeff")
	want := `{"account_number":"0","chain_id":"","fee":{"amount":[],"gas":"0"},"memo":"","msgs":[{"type":"sign/MsgSignData","value":{"data":"ZmxvcHMtb3V0cHV0LXYyCkdFVApoOjEKL3YxL3Rhc2tzLzcvb3V0cHV0cwoKMTcwMDAwMDAwMAowMDExMjIzMzQ0NTU2Njc3ODg5OWFhYmJjY2RkZWVmZg==","signer":"flops19rl4cm2hmr8afy4kldpxz3fka4jguq0a05jktw"}}],"sequence":"0"}`
	require.Equal(t, want, string(ADR036SignDoc("flops19rl4cm2hmr8afy4kldpxz3fka4jguq0a05jktw", msg)))
}

// A browser wallet signs the request as ADR-036 data: accepted with the sign mode header;
// the same signature without it, a raw signature claiming ADR-036, or an unknown mode is
// refused.
func TestBrowserWalletSignsADR036(t *testing.T) {
	f := newFixture(t)
	adr036 := func(key bool) func(*http.Request) {
		return func(r *http.Request) {
			ts, err := strconv.ParseInt(r.Header.Get(HeaderTimestamp), 10, 64)
			require.NoError(t, err)
			msg := SignedMessage(r.Method, r.URL.Host, r.URL.EscapedPath(), r.URL.RawQuery, ts, r.Header.Get(HeaderNonce))
			if key {
				sig, err := f.owner.Sign(ADR036SignDoc(r.Header.Get(HeaderAddress), msg))
				require.NoError(t, err)
				r.Header.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
			}
			r.Header.Set(HeaderSignMode, SignModeADR036)
		}
	}
	status, body := f.do(t, "/v1/tasks/7/outputs", f.owner, f.clock(), adr036(true))
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"result_root"`)

	status, body = f.do(t, "/v1/tasks/7/outputs", f.owner, f.clock(), adr036(false))
	require.Equal(t, http.StatusUnauthorized, status, "a raw signature is not an ADR-036 one")
	require.Contains(t, body, "does not verify")

	status, body = f.do(t, "/v1/tasks/7/outputs", f.owner, f.clock(), func(r *http.Request) {
		adr036(true)(r)
		r.Header.Del(HeaderSignMode)
	})
	require.Equal(t, http.StatusUnauthorized, status, "an ADR-036 signature is not a raw one")
	require.Contains(t, body, "does not verify")

	status, body = f.do(t, "/v1/tasks/7/outputs", f.owner, f.clock(), func(r *http.Request) { r.Header.Set(HeaderSignMode, "eip191") })
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body, `eip191`)
	require.Contains(t, body, "must be raw or adr036")
}

// A page on another origin may read outputs and logs: the preflight is answered unsigned
// and the answer exposes the log headers; the request itself still needs the owner's
// signature.
func TestCORSForTheDashboard(t *testing.T) {
	f := newFixture(t)
	req, err := http.NewRequest(http.MethodOptions, f.srv.URL+"/v1/tasks/7/logs/stdout", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "http://127.0.0.1:8800")
	req.Header.Set("Access-Control-Request-Method", "GET")
	req.Header.Set("Access-Control-Request-Headers", "x-flops-signature, x-flops-sign-mode")
	resp, err := f.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), HeaderSignMode)
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), HeaderSignature)

	status, _ := f.do(t, "/v1/tasks/7/logs/stdout", f.owner, f.clock(), func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:8800") })
	require.Equal(t, http.StatusOK, status)
	got, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/tasks/7/logs/stdout", nil)
	require.NoError(t, err)
	require.NoError(t, SignRequest(got, f.owner, f.clock()))
	got.Header.Set("Origin", "http://127.0.0.1:8800")
	resp, err = f.srv.Client().Do(got)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), HeaderLogOffset)

	// unsigned, from the page: still refused
	status, _ = f.do(t, "/v1/tasks/7/outputs", nil, f.clock(), func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:8800") })
	require.Equal(t, http.StatusUnauthorized, status)
}

// Strangers sign requests for an owner's task with keys of their own, and one owner
// floods the server with its own: the nonces of strangers' requests were spent before the
// owner check, so enough of them filled the server's nonce store and every owner was
// refused (503) for the clock-skew window. A nonce is now spent only by the task's owner,
// and one signer holds at most maxNoncesPerSigner of them: the flooding owner is refused
// (429), the others are served.
func TestAttackStrangersFillTheNonceStore(t *testing.T) {
	saved, savedPer := maxNonces, maxNoncesPerSigner
	maxNonces, maxNoncesPerSigner = 8, 4
	t.Cleanup(func() { maxNonces, maxNoncesPerSigner = saved, savedPer })
	f := newFixture(t)
	other := secp256k1.GenPrivKey() // the owner of task 8
	owners := map[uint64]string{7: addrOf(t, f.owner), 8: addrOf(t, other)}
	h := Handler(f.store, func(_ context.Context, id uint64) (string, error) { return owners[id], nil }, f.clock)
	send := func(key cryptotypes.PrivKey, task uint64) (int, string) {
		req, err := http.NewRequest(http.MethodGet, f.srv.URL+"/v1/tasks/"+strconv.FormatUint(task, 10)+"/outputs", nil)
		require.NoError(t, err)
		require.NoError(t, SignRequest(req, key, f.clock()))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for range 50 {
		status, _ := send(secp256k1.GenPrivKey(), 7)
		require.Equal(t, http.StatusForbidden, status)
	}
	status, body := send(f.owner, 7)
	require.Equal(t, http.StatusOK, status, "strangers spent no nonce: %s", body)

	// the owner of task 7 floods its own task
	for range 3 {
		status, body = send(f.owner, 7)
		require.Equal(t, http.StatusOK, status, body)
	}
	status, body = send(f.owner, 7)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Contains(t, body, "sent more than 4 signed requests")
	// another owner is served meanwhile
	_, err := f.store.Put(context.Background(), 8, f.result)
	require.NoError(t, err)
	status, body = send(other, 8)
	require.Equal(t, http.StatusOK, status, body)
	// once the window has passed, the flooding owner is served again
	f.mu.Lock()
	f.now = f.now.Add(2*MaxClockSkew + time.Second)
	f.mu.Unlock()
	status, body = send(f.owner, 7)
	require.Equal(t, http.StatusOK, status, body)
}

// Strangers sign requests with keys of their own, each for another task id, or all for a
// task whose outputs are here: each request had cost the server two queries to its chain
// node (the task, then its job) before the signer was found not to be the owner, so a
// stranger's flood of cheap requests became a flood of queries on the provider's node.
// The server now asks the chain only about a task it holds something of, and once: the
// 1,000 requests for tasks not here are answered 404 with no query, the 100 for task 7
// cost one, and the owner is then served without another.
func TestAttackStrangersMakeTheServerQueryTheChain(t *testing.T) {
	f := newFixture(t)
	var lookups atomic.Int32
	h := Handler(f.store, func(_ context.Context, id uint64) (string, error) {
		lookups.Add(1)
		if id == 7 {
			return addrOf(t, f.owner), nil
		}
		return "", fmt.Errorf("task %d: %w", id, ErrTaskNotFound)
	}, f.clock)
	send := func(key cryptotypes.PrivKey, task uint64) int {
		req := httptest.NewRequest(http.MethodGet, "/v1/tasks/"+strconv.FormatUint(task, 10)+"/outputs", nil)
		require.NoError(t, SignRequest(req, key, f.clock()))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	stranger := secp256k1.GenPrivKey()
	for i := range uint64(1000) {
		require.Equal(t, http.StatusNotFound, send(stranger, 1000+i))
	}
	require.Zero(t, lookups.Load(), "no query for a task with nothing here")
	for range 100 {
		require.Equal(t, http.StatusForbidden, send(secp256k1.GenPrivKey(), 7))
	}
	require.Equal(t, int32(1), lookups.Load(), "task 7's owner looked up once")
	require.Equal(t, http.StatusOK, send(f.owner, 7))
	require.Equal(t, int32(1), lookups.Load())
}

// blockedWriter is a response whose body is not read: its first Write says so on
// blocked, and every Write waits for release.
type blockedWriter struct {
	*httptest.ResponseRecorder
	blocked chan<- struct{}
	release <-chan struct{}
	once    sync.Once
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	b.once.Do(func() { b.blocked <- struct{}{} })
	<-b.release
	return b.ResponseRecorder.Write(p)
}

// An owner opens many downloads at once and reads none of them: each held a place on the
// server (and, with large outputs, a share of the provider's uplink) for as long as the
// owner liked, as many as its nonce quota (65,536) allowed, taking the provider from its
// other clients. One owner has at most MaxInFlightPerSigner requests served at once: the
// next is refused (429) while another owner is served, and the owner is served again once
// one of its requests ends.
func TestAttackOwnerHoldsAThousandDownloadsOpen(t *testing.T) {
	f := newFixture(t)
	other := secp256k1.GenPrivKey() // the owner of task 8
	_, err := f.store.Put(context.Background(), 8, f.result)
	require.NoError(t, err)
	owners := map[uint64]string{7: addrOf(t, f.owner), 8: addrOf(t, other)}
	h := Handler(f.store, func(_ context.Context, id uint64) (string, error) { return owners[id], nil }, f.clock)
	request := func(key cryptotypes.PrivKey, task uint64) *http.Request {
		req := httptest.NewRequest(http.MethodGet, "/v1/tasks/"+strconv.FormatUint(task, 10)+"/outputs", nil)
		require.NoError(t, SignRequest(req, key, f.clock()))
		return req
	}
	blocked, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	held := make([]*blockedWriter, MaxInFlightPerSigner)
	for i := range held {
		held[i] = &blockedWriter{ResponseRecorder: httptest.NewRecorder(), blocked: blocked, release: release}
		req := request(f.owner, 7)
		wg.Go(func() { h.ServeHTTP(held[i], req) })
	}
	for range held {
		<-blocked
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request(f.owner, 7))
	require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), fmt.Sprintf("has %d requests being served here", MaxInFlightPerSigner))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request(other, 8))
	require.Equal(t, http.StatusOK, rec.Code, "another owner is served meanwhile: %s", rec.Body.String())

	close(release)
	wg.Wait()
	for _, w := range held {
		require.Equal(t, http.StatusOK, w.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request(f.owner, 7))
	require.Equal(t, http.StatusOK, rec.Code, "served again once its requests ended: %s", rec.Body.String())
}

// The store kept every task's outputs for good: a node's disk filled with what its
// clients had long fetched or never would. Prune forgets the tasks stored before a cutoff
// and reclaims their contents, keeping the contents a newer task also lists.
func TestAttackStoredOutputsFillTheDisk(t *testing.T) {
	f := newFixture(t)                                       // task 7
	_, err := f.store.Put(context.Background(), 8, f.result) // the same contents, later
	require.NoError(t, err)
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, os.Chtimes(f.store.manifestPath(7), old, old))

	n, err := f.store.Prune(context.Background(), time.Now().Add(-24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = f.store.Manifest(7)
	require.ErrorIs(t, err, ErrNotFound)
	file, _, err := f.store.OpenFile(8, "model.bin")
	require.NoError(t, err, "task 8 lists the same contents: they stay")
	require.NoError(t, file.Close())

	require.NoError(t, os.Chtimes(f.store.manifestPath(8), old, old))
	n, err = f.store.Prune(context.Background(), time.Now().Add(-24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	blobs := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(f.store.dir, "blobs"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			blobs++
		}
		return err
	}))
	require.Zero(t, blobs, "no task lists them: reclaimed")
}

// The tasks that published a checkpoint are listed once each, the newest
// maxCheckpointTasks of them, and nothing is recorded for what is not a digest.
func TestRecordCheckpoint(t *testing.T) {
	dir := t.TempDir()
	sha := strings.Repeat("ab", 32)
	require.Empty(t, CheckpointTasks(dir, sha))
	require.NoError(t, RecordCheckpoint(dir, sha, 5))
	require.NoError(t, RecordCheckpoint(dir, sha, 5))
	require.NoError(t, RecordCheckpoint(dir, sha, 9))
	require.Equal(t, []uint64{5, 9}, CheckpointTasks(dir, sha))
	for id := range uint64(maxCheckpointTasks + 6) {
		require.NoError(t, RecordCheckpoint(dir, sha, 100+id))
	}
	tasks := CheckpointTasks(dir, sha)
	require.Len(t, tasks, maxCheckpointTasks)
	require.Equal(t, uint64(100+maxCheckpointTasks+5), tasks[len(tasks)-1])
	require.Error(t, RecordCheckpoint(dir, "../escape", 1))
	require.Empty(t, CheckpointTasks(dir, "../escape"))
}

// Tasks of a multi-GPU machine publish at once, replicas often the same content: each
// is listed, none dropped by another's write of the list (18 of 32 were kept, and some
// publications failed on the other's rename, before recordMu and WriteFileAtomic).
func TestRecordCheckpointConcurrentTasksAllListed(t *testing.T) {
	dir := t.TempDir()
	sha := strings.Repeat("cd", 32)
	const n = 32
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for id := range uint64(n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- RecordCheckpoint(dir, sha, id+1)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, CheckpointTasks(dir, sha), n)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}

// A session key the owner delegated its requests to signs them in its place: the owner
// signs once (a browser wallet prompts once), not for every file and every read of a
// followed log. A delegation is good only for the owner's own tasks, at the host it
// names, until it expires (at most MaxDelegation ahead), signed by the owner's own key for
// that very session key: each of those taken away is refused.
func TestDelegatedSessionSignsForTheOwner(t *testing.T) {
	f := newFixture(t)
	now := f.clock()
	host := strings.TrimPrefix(f.srv.URL, "http://")
	owner := addrOf(t, f.owner)
	session := secp256k1.GenPrivKey()
	send := func(key cryptotypes.PrivKey, d Delegation, edit func(*http.Request)) (int, string) {
		return f.do(t, "/v1/tasks/7/outputs", nil, now, func(req *http.Request) {
			require.NoError(t, SignDelegated(req, key, owner, d, now))
			if edit != nil {
				edit(req)
			}
		})
	}
	delegate := func(by, to cryptotypes.PrivKey, host string, expires time.Time) Delegation {
		d, err := Delegate(by, to, owner, host, now, expires)
		require.NoError(t, err)
		return d
	}
	good := delegate(f.owner, session, host, now.Add(8*time.Hour))
	status, body := send(session, good, nil)
	require.Equal(t, http.StatusOK, status, body)
	// as a browser wallet signs it (ADR-036)
	adr := good
	adr.SignMode = SignModeADR036
	sig, err := f.owner.Sign(ADR036SignDoc(owner, good.Doc))
	require.NoError(t, err)
	adr.Signature = sig
	status, body = send(session, adr, nil)
	require.Equal(t, http.StatusOK, status, body)

	for _, c := range []struct {
		name string
		key  cryptotypes.PrivKey
		d    Delegation
		edit func(*http.Request)
		msg  string
	}{
		{"no delegation", session, good, func(r *http.Request) { r.Header.Del(HeaderDelegation) }, "does not belong to"},
		{"another host", session, delegate(f.owner, session, "elsewhere.example:443", now.Add(time.Hour)), nil, "it is for host"},
		{"expired", session, delegate(f.owner, session, host, now.Add(-time.Second)), nil, "expired at"},
		{"too long", session, delegate(f.owner, session, host, now.Add(MaxDelegation+time.Minute)), nil, "lasts more than 24h0m0s from its issue"},
		{"an issue time that wraps its lifetime around", session, func() Delegation {
			// expires - issued overflows to a negative lifetime: a delegation for ever
			doc := DelegationDoc(owner, base64.StdEncoding.EncodeToString(session.PubKey().Bytes()), host, math.MinInt64+1, now.Add(100*365*24*time.Hour).Unix())
			sig, err := f.owner.Sign(doc)
			require.NoError(t, err)
			return Delegation{Doc: doc, OwnerPubkey: f.owner.PubKey().Bytes(), Signature: sig}
		}(), nil, "lasts more than 24h0m0s from its issue"},
		{"issued ahead of the clock", session, func() Delegation {
			d, err := Delegate(f.owner, session, owner, host, now.Add(MaxClockSkew+time.Minute), now.Add(2*time.Hour))
			require.NoError(t, err)
			return d
		}(), nil, "after the server's clock"},
		{"a v1 delegation (no issue time: it could not be revoked)", session, func() Delegation {
			doc := []byte(strings.Join([]string{"flops-output-delegation-v1", "owner: " + owner, "key: " + base64.StdEncoding.EncodeToString(session.PubKey().Bytes()),
				"host: " + host, "expires: " + strconv.FormatInt(now.Add(time.Hour).Unix(), 10)}, "\n"))
			sig, err := f.owner.Sign(doc)
			require.NoError(t, err)
			return Delegation{Doc: doc, OwnerPubkey: f.owner.PubKey().Bytes(), Signature: sig}
		}(), nil, "not a flops-output-delegation-v2 delegation"},
		{"another session key", secp256k1.GenPrivKey(), good, nil, "delegates to another key"},
		{"signed by another key", session, delegate(f.other, session, host, now.Add(time.Hour)), nil, "does not belong to"},
		{"the owner's key swapped in", session, func() Delegation {
			d := delegate(f.other, session, host, now.Add(time.Hour))
			d.OwnerPubkey = f.owner.PubKey().Bytes()
			return d
		}(), nil, "does not verify"},
		{"the doc edited", session, func() Delegation {
			d := good // another expiry under the same signature
			d.Doc = DelegationDoc(owner, base64.StdEncoding.EncodeToString(session.PubKey().Bytes()), host, now.Unix(), now.Add(9*time.Hour).Unix())
			return d
		}(), nil, "does not verify"},
		{"the request signed ADR-036 by the session", session, good, func(r *http.Request) { r.Header.Set(HeaderSignMode, SignModeADR036) }, "a session key signs raw"},
	} {
		status, body := send(c.key, c.d, c.edit)
		require.Equal(t, http.StatusUnauthorized, status, "%s: %s", c.name, body)
		require.Contains(t, body, c.msg, c.name)
	}

	// a stranger's own delegation makes it no owner
	strangerAddr := addrOf(t, f.other)
	d, err := Delegate(f.other, session, strangerAddr, host, now, now.Add(time.Hour))
	require.NoError(t, err)
	status, body = f.do(t, "/v1/tasks/7/outputs", nil, now, func(req *http.Request) {
		require.NoError(t, SignDelegated(req, session, strangerAddr, d, now))
	})
	require.Equal(t, http.StatusForbidden, status, body)
}
