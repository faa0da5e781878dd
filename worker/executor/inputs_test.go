package executor

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// inputServer serves fixed contents and counts the requests per path.
type inputServer struct {
	*httptest.Server
	mu    sync.Mutex
	hits  map[string]int
	flaky int // requests to /flaky that fail with 503 before one succeeds
}

func newInputServer(t *testing.T, files map[string][]byte) *inputServer {
	s := &inputServer{hits: map[string]int{}, flaky: 1}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		fail := r.URL.Path == "/flaky" && s.flaky > 0
		if fail {
			s.flaky--
		}
		s.mu.Unlock()
		if fail {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *inputServer) count(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[p]
}

// Inputs are fetched over http and through the IPFS gateway into the working directory
// at their paths, verified, and cached by digest: a second task fetches nothing.
func TestInputsFetchedVerifiedAndCached(t *testing.T) {
	a, b := []byte("alpha\n"), []byte("beta\n")
	// A script shipped as an input runs by its path.
	script := []byte("#!/bin/sh\ncat a.txt sub/dir/b.bin > \"$FLOPS_OUTPUT_DIR/joined\"\n")
	srv := newInputServer(t, map[string][]byte{"/data/a.txt": a, "/ipfs/bafybeigdyrzt5/b.bin": b, "/run.sh": script})
	e := newTestExecutor(t, func(o *Options) { o.IPFSGateway = srv.URL + "/" })
	inputs := []markettypes.Input{
		{Uri: srv.URL + "/data/a.txt?token=secret", Sha256: sha256Hex(a), Path: "a.txt"},
		{Uri: "ipfs://bafybeigdyrzt5/b.bin", Sha256: sha256Hex(b), Path: "sub/dir/b.bin"},
	}
	for task := uint64(50); task < 52; task++ {
		spec := Spec{TaskID: task, Runtime: markettypes.RUNTIME_PROCESS, Command: []string{"./bin/run.sh", "arg"}}
		spec.Inputs = append(inputs, markettypes.Input{Uri: srv.URL + "/run.sh", Sha256: sha256Hex(script), Path: "bin/run.sh"})
		res, err := e.Run(context.Background(), spec, Hooks{})
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(res.OutputDir, "joined"))
		require.NoError(t, err)
		require.Equal(t, "alpha\nbeta\n", string(got))
	}
	require.Equal(t, 1, srv.count("/data/a.txt"), "the second task reads the cache")
	require.Equal(t, 1, srv.count("/ipfs/bafybeigdyrzt5/b.bin"))

	// A cached copy that a task damaged is detected and fetched again.
	cached := e.cachePath("", sha256Hex(a))
	require.NoError(t, os.Chmod(cached, 0o644))
	require.NoError(t, os.WriteFile(cached, []byte("tampered"), 0o644))
	spec := shellSpec(52, `cat a.txt > "$FLOPS_OUTPUT_DIR/a"`)
	spec.Inputs = inputs[:1]
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(res.OutputDir, "a"))
	require.NoError(t, err)
	require.Equal(t, a, got)
	require.Equal(t, 2, srv.count("/data/a.txt"))
}

// A job names another client's input by its digest, which the other job's spec shows on
// chain, with a URI of its own that serves nothing: the input cache, shared by every job,
// handed it the other client's dataset, never fetched (the other's URI may have expired
// since, as a presigned URL does); and so it would a checkpoint this machine had resumed
// from, named as an input. The cache is kept per owner: the other client's tasks still
// take it from the cache, the stranger's fetches its own URI and fails.
func TestAttackJobTakesAnotherClientsInputFromTheCache(t *testing.T) {
	data, state := []byte("the other client's dataset\n"), []byte("its model's weights at epoch 3\n")
	srv := newInputServer(t, map[string][]byte{"/private/data.bin": data, "/ckpt/epoch3.bin": state})
	e := newTestExecutor(t, nil)
	const owner, stranger = "flops1owner", "flops1stranger"
	input := markettypes.Input{Uri: srv.URL + "/private/data.bin", Sha256: sha256Hex(data), Path: "data.bin"}
	spec := shellSpec(90, `cat data.bin "$FLOPS_CHECKPOINT_DIR"/* > "$FLOPS_OUTPUT_DIR/read" 2>/dev/null; true`)
	spec.Owner, spec.Inputs = owner, []markettypes.Input{input}
	spec.Resume = &Checkpoint{SHA256: sha256Hex(state), URI: srv.URL + "/ckpt/epoch3.bin"}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(res.OutputDir, "read"))
	require.NoError(t, err)
	require.Equal(t, string(data)+string(state), string(got))
	require.Equal(t, 1, srv.count("/private/data.bin"))

	for i, digest := range []string{sha256Hex(data), sha256Hex(state)} {
		spec := shellSpec(uint64(91+i), `cat stolen > "$FLOPS_OUTPUT_DIR/stolen"`)
		spec.Owner = stranger
		spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/nothing-here", Sha256: digest, Path: "stolen"}}
		res, err := e.Run(context.Background(), spec, Hooks{})
		require.ErrorIs(t, err, ErrInputFetch, "fetched from its own URI, which serves nothing")
		_, statErr := os.Stat(filepath.Join(res.OutputDir, "stolen"))
		require.True(t, os.IsNotExist(statErr), "nothing of the other client's reached the task")
	}

	// the owner's next task still takes its input from the cache
	spec = shellSpec(93, `cat data.bin > "$FLOPS_OUTPUT_DIR/read"`)
	spec.Owner, spec.Inputs = owner, []markettypes.Input{input}
	res, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	got, err = os.ReadFile(filepath.Join(res.OutputDir, "read"))
	require.NoError(t, err)
	require.Equal(t, data, got)
}

// An input whose content does not match its digest fails the task with a clear error
// and is not cached; an unreachable input fails it too; a 503 is retried.
func TestInputFailures(t *testing.T) {
	srv := newInputServer(t, map[string][]byte{"/data/a.txt": []byte("alpha\n"), "/flaky": []byte("eventually")})
	e := newTestExecutor(t, nil)
	wrong := sha256Hex([]byte("not alpha"))

	spec := shellSpec(60, "true")
	spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/data/a.txt?sig=topsecret", Sha256: wrong, Path: "a.txt"}}
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputDigest)
	require.ErrorContains(t, err, wrong)
	require.ErrorContains(t, err, sha256Hex([]byte("alpha\n")))
	require.NotContains(t, err.Error(), "topsecret", "a URL's query may hold credentials")
	_, statErr := os.Stat(e.cachePath("", wrong))
	require.True(t, os.IsNotExist(statErr))
	require.Equal(t, 1, srv.count("/data/a.txt"), "a digest mismatch is not retried")

	spec = shellSpec(61, "true")
	spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/missing", Sha256: wrong, Path: "m"}}
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputFetch)
	require.ErrorContains(t, err, "404")

	spec = shellSpec(62, `cat flaky > "$FLOPS_OUTPUT_DIR/f"`)
	spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/flaky", Sha256: sha256Hex([]byte("eventually")), Path: "flaky"}}
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	require.Equal(t, 2, srv.count("/flaky"))

	spec = shellSpec(63, "true")
	spec.Inputs = []markettypes.Input{{Uri: "ipfs://bafybeigdyrzt5/b.bin", Sha256: wrong, Path: "b"}}
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputFetch)
	require.ErrorContains(t, err, "no IPFS gateway")

	small := newTestExecutor(t, func(o *Options) { o.MaxInputBytes = 3 })
	spec = shellSpec(64, "true")
	spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/data/a.txt", Sha256: sha256Hex([]byte("alpha\n")), Path: "a"}}
	_, err = small.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputFetch)
	require.ErrorContains(t, err, "limit")
}

// ipfs URIs map onto the gateway; http(s) URIs are fetched as they are.
func TestResolve(t *testing.T) {
	e := newTestExecutor(t, func(o *Options) { o.IPFSGateway = "https://gw.example/" })
	cases := map[string]string{
		"ipfs://bafyabc":              "https://gw.example/ipfs/bafyabc",
		"ipfs://bafyabc/dir/file.bin": "https://gw.example/ipfs/bafyabc/dir/file.bin",
		"ipfs:bafyabc/x":              "https://gw.example/ipfs/bafyabc/x",
		"https://h.example/a?b=c":     "https://h.example/a?b=c",
	}
	for in, want := range cases {
		got, err := e.resolve(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"ftp://h/x", "ipfs://", "https:///nohost"} {
		_, err := e.resolve(in)
		require.Error(t, err, in)
	}
	require.Equal(t, "https://h.example/a?<redacted>", redact("https://user:pw@h.example/a?X-Amz-Signature=abc"))
}

// An input without a path (a pool unit's) is placed at "input", or "input-<i>" among
// several.
func TestInputWithoutPath(t *testing.T) {
	a := []byte("unit payload")
	srv := newInputServer(t, map[string][]byte{"/u": a})
	e := newTestExecutor(t, nil)
	in := markettypes.Input{Uri: srv.URL + "/u", Sha256: sha256Hex(a)}
	spec := shellSpec(65, `cat input > "$FLOPS_OUTPUT_DIR/got"`)
	spec.Inputs = []markettypes.Input{in}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(res.OutputDir, "got"))
	require.NoError(t, err)
	require.Equal(t, a, got)

	spec = shellSpec(66, `cat input-0 input-1 > "$FLOPS_OUTPUT_DIR/got"`)
	spec.Inputs = []markettypes.Input{in, in}
	res, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	got, err = os.ReadFile(filepath.Join(res.OutputDir, "got"))
	require.NoError(t, err)
	require.Equal(t, append(append([]byte(nil), a...), a...), got)
}

// A job that names an input on the provider's own network (here its loopback, standing
// for a metadata service or a local database) gets nothing from it with the worker's
// input client, and the server sees no request; a provider that allows private inputs,
// or lists its gateway, gets it.
func TestAttackInputFromThePrivateNetwork(t *testing.T) {
	secret := []byte("metadata: credentials\n")
	srv := newInputServer(t, map[string][]byte{"/latest/meta-data": secret})
	spec := Spec{TaskID: 700, Runtime: markettypes.RUNTIME_BUILTIN, Image: markettypes.BuiltinChecksum,
		Builtin: markettypes.BuiltinArgs{ChecksumBytes: 1},
		Inputs:  []markettypes.Input{{Uri: srv.URL + "/latest/meta-data", Sha256: sha256Hex(secret), Path: "meta"}}}

	e := newTestExecutor(t, func(o *Options) { o.HTTPClient = InputClient(false) })
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputFetch)
	require.ErrorContains(t, err, "not public")
	require.Zero(t, srv.count("/latest/meta-data"), "no request reached the private address")

	for name, c := range map[string]*http.Client{"private_inputs": InputClient(true), "gateway": InputClient(false, srv.Listener.Addr().String())} {
		e = newTestExecutor(t, func(o *Options) { o.HTTPClient = c })
		_, err = e.Run(context.Background(), spec, Hooks{})
		require.NoError(t, err, name)
	}

	for addr, public := range map[string]bool{"8.8.8.8": true, "2606:4700::1111": true, "127.0.0.1": false, "10.1.2.3": false,
		"172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false, "100.64.0.1": false, "::1": false,
		"fe80::1": false, "fd00::1": false, "0.0.0.0": false, "::ffff:127.0.0.1": false, "224.0.0.1": false} {
		require.Equal(t, public, PublicAddr(netip.MustParseAddr(addr)), addr)
	}
}

// A job names inputs larger than its task's disk: each input could be as large as the
// worker's MaxInputBytes (1 TiB by default) and was downloaded whole into the input
// cache, outside the directories the disk bound watches. The inputs, in their order, now
// come to at most the task's disk: a download is cut off past what is left of it, a
// cached input that does not fit is not used, both with ErrInputTooLarge (the same on
// every machine: a verification run answers with it), and nothing is kept of the cut
// download.
func TestAttackJobInputsFillTheDisk(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	half := strings.Repeat("y", 3<<19)
	var halfRequests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/half" {
			halfRequests.Add(1)
		}
		_, _ = io.WriteString(w, map[string]string{"/big": big, "/half": half, "/half2": half + "z"}[r.URL.Path])
	}))
	defer srv.Close()
	e := newTestExecutor(t, nil)

	spec := shellSpec(70, "true")
	spec.MaxDiskBytes = 2 << 20
	spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/big", Sha256: sha256Hex([]byte(big)), Path: "big"}}
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputTooLarge)
	require.ErrorIs(t, err, ErrInputFetch)
	_, statErr := os.Stat(e.cachePath("", sha256Hex([]byte(big))))
	require.True(t, os.IsNotExist(statErr), "nothing kept of the cut download")
	entries, err := os.ReadDir(filepath.Join(e.opts.WorkDir, "cache", "tmp"))
	require.NoError(t, err)
	require.Empty(t, entries)

	// two inputs of 1.5 MiB each: the second passes what the first left
	spec = shellSpec(71, "true")
	spec.MaxDiskBytes = 2 << 20
	spec.Inputs = []markettypes.Input{
		{Uri: srv.URL + "/half", Sha256: sha256Hex([]byte(half)), Path: "a"},
		{Uri: srv.URL + "/half2", Sha256: sha256Hex([]byte(half + "z")), Path: "b"},
	}
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputTooLarge)
	require.ErrorContains(t, err, "input 1")

	// the first input is cached now: under a smaller disk it is not used either
	first := spec.Inputs[:1]
	spec = shellSpec(72, "true")
	spec.MaxDiskBytes = 1 << 20
	spec.Inputs = first
	before := halfRequests.Load()
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrInputTooLarge)
	require.ErrorContains(t, err, "more than the task's disk")
	require.Equal(t, before, halfRequests.Load(), "taken from the cache, not downloaded")

	// within the disk, or with no disk bound, they run
	spec.TaskID, spec.MaxDiskBytes = 73, 2<<20
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	spec = shellSpec(74, "true")
	spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/big", Sha256: sha256Hex([]byte(big)), Path: "big"}}
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
}

// Jobs name a new input each: the cache kept every input any job named, for good, and
// filled the provider's disk however small each task's inputs. Once a task ends, the
// cache is pruned to its budget, least recently used first, sparing any input used within
// the last hour; an input used again is kept over older ones.
func TestAttackJobsFillTheInputCache(t *testing.T) {
	body := func(n string) string { return strings.Repeat(n, 1<<20) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body(strings.TrimPrefix(r.URL.Path, "/")))
	}))
	defer srv.Close()
	e := newTestExecutor(t, func(o *Options) { o.InputCacheBytes = 2 << 20 })
	cached := func(n string) bool {
		_, err := os.Stat(e.cachePath("", sha256Hex([]byte(body(n)))))
		return err == nil
	}
	// ages the cache: every file as if last used d earlier
	age := func(d time.Duration) {
		entries, err := os.ReadDir(filepath.Join(e.opts.WorkDir, "cache", "sha256"))
		require.NoError(t, err)
		for _, de := range entries {
			info, err := de.Info()
			require.NoError(t, err)
			when := info.ModTime().Add(-d)
			require.NoError(t, os.Chtimes(filepath.Join(e.opts.WorkDir, "cache", "sha256", de.Name()), when, when))
		}
	}
	id := uint64(80)
	run := func(n string) {
		id++
		spec := shellSpec(id, "true")
		spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/" + n, Sha256: sha256Hex([]byte(body(n))), Path: "in"}}
		_, err := e.Run(context.Background(), spec, Hooks{})
		require.NoError(t, err)
	}
	run("a")
	age(3 * time.Hour)
	run("b")
	age(2 * time.Hour)
	run("c")
	require.False(t, cached("a"), "3 MiB over a budget of 2: the least recently used goes")
	require.True(t, cached("b") && cached("c"))

	age(2 * time.Hour)
	run("b") // used again: now the most recent
	run("d")
	require.False(t, cached("c"), "c, not b, was the least recently used")
	require.True(t, cached("b") && cached("d"))

	// inputs used within the hour stay, over the budget for a while
	run("e")
	require.True(t, cached("b") && cached("d") && cached("e"))
	age(2 * time.Hour)
	run("e")
	require.True(t, cached("b") != cached("d"), "once an hour old, one of the two goes: back within the budget")
	require.True(t, cached("e"))

	// without a budget nothing is removed
	unbounded := newTestExecutor(t, nil)
	for _, n := range []string{"f", "g", "h"} {
		id++
		spec := shellSpec(id, "true")
		spec.Inputs = []markettypes.Input{{Uri: srv.URL + "/" + n, Sha256: sha256Hex([]byte(body(n))), Path: "in"}}
		_, err := unbounded.Run(context.Background(), spec, Hooks{})
		require.NoError(t, err)
		_, err = os.Stat(unbounded.cachePath("", sha256Hex([]byte(body(n)))))
		require.NoError(t, err)
	}
}
