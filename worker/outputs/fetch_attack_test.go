package outputs

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/executor"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// servedOutputs is what a provider's output server serves: a manifest of files and the
// files' contents, each consistent with the other.
type servedOutputs struct {
	manifest Manifest
	contents map[string]string
}

// outputsOf builds a well-formed manifest of contents for task id, whose result root is
// resultRoot (nil: the root of the files, as an honest server of any workload but gemm
// has it).
func outputsOf(t *testing.T, id uint64, contents map[string]string, resultRoot []byte) servedOutputs {
	files := make([]executor.OutputFile, 0, len(contents))
	for p, c := range contents {
		files = append(files, executor.OutputFile{Path: p, Size: int64(len(c)), SHA256: hex.EncodeToString(sha(t, c))})
	}
	sort.Slice(files, func(a, b int) bool { return files[a].Path < files[b].Path })
	root, err := executor.ManifestRoot(files)
	require.NoError(t, err)
	if resultRoot == nil {
		resultRoot = root[:]
	}
	return servedOutputs{
		manifest: Manifest{TaskID: id, Root: hex.EncodeToString(root[:]), ResultRoot: hex.EncodeToString(resultRoot), Files: files, Logs: []executor.OutputFile{}},
		contents: contents,
	}
}

// providerServer is a provider's output server that answers the n-th manifest request
// with serve(n) (n from 1) and each file request with that path's content in any of the
// outputs it serves. It counts the manifest requests.
func providerServer(t *testing.T, manifests *atomic.Int32, serve func(n int32) servedOutputs, all ...servedOutputs) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/outputs") {
			_ = json.NewEncoder(w).Encode(serve(manifests.Add(1)).manifest)
			return
		}
		_, p, _ := strings.Cut(r.URL.Path, "/outputs/")
		for _, o := range all {
			if c, ok := o.contents[p]; ok {
				_, _ = io.WriteString(w, c)
				return
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// requireEmpty checks nothing was kept under dir.
func requireEmpty(t *testing.T, dir string) {
	t.Helper()
	var kept []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			kept = append(kept, p)
		}
		return err
	}))
	require.Empty(t, kept, "nothing the chain did not commit is kept")
}

// A provider revealed the right result (its replicas agreed with it) and serves its
// owner other files: a well-formed manifest of them, with the chain's result root copied
// into its result_root field. `flops-worker fetch` compared only that field with the
// chain, so it downloaded the other files and said they were the committed result. The
// manifest's root of its files must be the chain's, and nothing is downloaded otherwise.
func TestAttackProviderServesOtherFilesUnderTheChainsRoot(t *testing.T) {
	owner := secp256k1.GenPrivKey()
	honest := outputsOf(t, 3, map[string]string{"model.bin": "trained weights", "loss.csv": "1,0.5\n"}, nil)
	chainRoot, err := hex.DecodeString(honest.manifest.Root)
	require.NoError(t, err)
	fake := outputsOf(t, 3, map[string]string{"model.bin": "random weights", "loss.csv": "1,9.9\n"}, chainRoot)

	var manifests atomic.Int32
	srv := providerServer(t, &manifests, func(int32) servedOutputs { return fake }, fake)

	// The check the CLI made: the manifest is well formed and names the chain's root.
	m, err := FetchManifest(context.Background(), srv.Client(), srv.URL, 3, owner)
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(chainRoot), m.ResultRoot)

	dir := t.TempDir()
	_, err = Fetch(context.Background(), srv.Client(), srv.URL, 3, owner, dir, Committed{ResultRoot: chainRoot})
	require.ErrorContains(t, err, "the server's files have the root "+fake.manifest.Root+", not the result root revealed on chain "+honest.manifest.Root)
	requireEmpty(t, dir)

	// The honest server's files are fetched.
	honestSrv := providerServer(t, &manifests, func(int32) servedOutputs { return honest }, honest)
	_, err = Fetch(context.Background(), honestSrv.Client(), honestSrv.URL, 3, owner, dir, Committed{ResultRoot: chainRoot})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "model.bin"))
	require.NoError(t, err)
	require.Equal(t, "trained weights", string(b))
}

// A provider serves the committed manifest to the first read and another to every later
// one. The CLI read the manifest twice, checked the first and downloaded what the second
// listed. Fetch reads it once and downloads what it checked.
func TestAttackProviderSwapsTheManifestAfterItIsChecked(t *testing.T) {
	owner := secp256k1.GenPrivKey()
	honest := outputsOf(t, 4, map[string]string{"out.txt": "the answer"}, nil)
	chainRoot, err := hex.DecodeString(honest.manifest.Root)
	require.NoError(t, err)
	other := outputsOf(t, 4, map[string]string{"out.txt": "another answer", "extra.sh": "#!/bin/sh\n"}, chainRoot)
	other.manifest.Root = honest.manifest.Root // as the first read said; the files do not give it
	var manifests atomic.Int32
	srv := providerServer(t, &manifests, func(n int32) servedOutputs {
		if n == 1 {
			return honest
		}
		return other
	}, honest, other)

	dir := t.TempDir()
	m, err := Fetch(context.Background(), srv.Client(), srv.URL, 4, owner, dir, Committed{ResultRoot: chainRoot})
	require.NoError(t, err)
	require.Equal(t, int32(1), manifests.Load(), "the manifest is read once")
	require.Equal(t, honest.manifest.Files, m.Files)
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "the answer", string(b))
	_, err = os.Stat(filepath.Join(dir, "extra.sh"))
	require.True(t, os.IsNotExist(err))
}

// A BUILTIN gemm task's result root is the PoCP root of its product, not the root of its
// files, so a provider could list any product under the chain's result root. The
// product's root is rebuilt from the bytes and the product not kept when it differs; a
// manifest without the product is refused before any download.
func TestAttackProviderServesAnotherProductUnderTheChainsRoot(t *testing.T) {
	const n = 256
	owner := secp256k1.GenPrivKey()
	product := func(seed int32) string {
		s := make([]int32, n*n)
		for i := range s {
			s[i] = seed * int32(i%997-498)
		}
		return string(executor.ProductBytes(s))
	}
	right := product(3)
	prod, err := executor.ParseProduct([]byte(right), n)
	require.NoError(t, err)
	tree := gflpocp.BuildTree(prod, n, 1).Root()
	chainRoot := tree[:]

	honest := outputsOf(t, 5, map[string]string{executor.ProductFile: right}, chainRoot)
	wrong := outputsOf(t, 5, map[string]string{executor.ProductFile: product(5)}, chainRoot)
	none := outputsOf(t, 5, map[string]string{"readme.txt": "the product is elsewhere"}, chainRoot)
	want := Committed{ResultRoot: chainRoot, GemmN: n}
	var manifests atomic.Int32

	dir := t.TempDir()
	srv := providerServer(t, &manifests, func(int32) servedOutputs { return wrong }, wrong)
	_, err = Fetch(context.Background(), srv.Client(), srv.URL, 5, owner, dir, want)
	require.ErrorContains(t, err, "the product's Merkle root")
	require.ErrorContains(t, err, "is not the result root on chain "+hex.EncodeToString(chainRoot))
	requireEmpty(t, dir)

	srv = providerServer(t, &manifests, func(int32) servedOutputs { return none }, none)
	_, err = Fetch(context.Background(), srv.Client(), srv.URL, 5, owner, dir, want)
	require.ErrorContains(t, err, "lists no "+executor.ProductFile)
	requireEmpty(t, dir)

	srv = providerServer(t, &manifests, func(int32) servedOutputs { return honest }, honest)
	_, err = Fetch(context.Background(), srv.Client(), srv.URL, 5, owner, dir, want)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, executor.ProductFile))
	require.NoError(t, err)
	require.Equal(t, right, string(b))
}

// A server whose manifest names another result root than the chain's is refused before
// any download, whatever its files.
func TestFetchRefusesAnotherResultRoot(t *testing.T) {
	owner := secp256k1.GenPrivKey()
	mine := outputsOf(t, 6, map[string]string{"a.txt": "a"}, nil)
	var manifests atomic.Int32
	srv := providerServer(t, &manifests, func(int32) servedOutputs { return mine }, mine)
	dir := t.TempDir()
	other := sha(t, "another result")
	_, err := Fetch(context.Background(), srv.Client(), srv.URL, 6, owner, dir, Committed{ResultRoot: other})
	require.ErrorContains(t, err, "the server's result root "+mine.manifest.ResultRoot+" is not the one revealed on chain "+hex.EncodeToString(other))
	requireEmpty(t, dir)
}

// A verification task whose run of the job failed answered the failed-run root, which
// binds no file: what its run left is fetched and checked against the manifest alone, and
// a file that does not match it is still not kept.
func TestFetchAFailedRunChecksTheManifestOnly(t *testing.T) {
	owner := secp256k1.GenPrivKey()
	left := outputsOf(t, 9, map[string]string{"partial.txt": "half done"}, nil)
	left.manifest.Logs = []executor.OutputFile{{Path: executor.LogDir + "/stderr.log", Size: 4, SHA256: hex.EncodeToString(sha(t, "oom\n"))}}
	left.contents[executor.LogDir+"/stderr.log"] = "oom\n"
	failed := markettypes.FailedRoot()
	var manifests atomic.Int32
	srv := providerServer(t, &manifests, func(int32) servedOutputs { return left }, left)

	dir := t.TempDir()
	_, err := Fetch(context.Background(), srv.Client(), srv.URL, 9, owner, dir, Committed{ResultRoot: failed})
	require.ErrorContains(t, err, "is not the one revealed on chain "+hex.EncodeToString(failed), "without FailedRun the failed root is a result root like any")
	requireEmpty(t, dir)

	_, err = Fetch(context.Background(), srv.Client(), srv.URL, 9, owner, dir, Committed{ResultRoot: failed, FailedRun: true})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, executor.LogDir, "stderr.log"))
	require.NoError(t, err)
	require.Equal(t, "oom\n", string(b))

	left.contents["partial.txt"] = "tampered"
	dir = t.TempDir()
	_, err = Fetch(context.Background(), srv.Client(), srv.URL, 9, owner, dir, Committed{ResultRoot: failed, FailedRun: true})
	require.ErrorContains(t, err, `output "partial.txt"`)
	requireEmpty(t, dir)
}

// A provider accepts the owner's connection and never answers: http.DefaultClient, which
// flops-worker fetch and logs used, waited for ever. NewClient gives up once the server
// has not begun its answer within the timeout.
func TestAttackSilentProviderHoldsTheOwnersFetch(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Fetch(ctx, NewClient(100*time.Millisecond), srv.URL, 1, secp256k1.GenPrivKey(), t.TempDir(), Committed{ResultRoot: make([]byte, 32)})
	require.ErrorContains(t, err, "timeout awaiting response headers")
	require.NoError(t, ctx.Err(), "the client gave up, not the test's deadline")
}
