package outputs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"

	"github.com/flopsnet/flops/worker/executor"
	gflpocp "github.com/flopsnet/flops/x/gfl/pocp"
)

// maxManifestBytes bounds a manifest a client reads.
const maxManifestBytes = 256 << 20

// ProviderHeaderTimeout is how long an owner's client waits for a provider's output
// server to begin its answer (NewClient).
const ProviderHeaderTimeout = time.Minute

// NewClient is the HTTP client an owner reaches a provider's output server with: a
// server that does not begin to answer within headerTimeout is given up on, where
// http.DefaultClient would have waited for ever on a provider that accepts the
// connection and says nothing.
func NewClient(headerTimeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = headerTimeout
	return &http.Client{Transport: tr}
}

// manifestURL and fileURL are the routes of Handler under baseURL (scheme and host;
// a path prefix is not supported, since the signature covers the path).
func manifestURL(baseURL string, taskID uint64) string {
	return strings.TrimRight(baseURL, "/") + "/v1/tasks/" + strconv.FormatUint(taskID, 10) + "/outputs"
}

func fileURL(baseURL string, taskID uint64, p string) string {
	segs := strings.Split(p, "/")
	for x, s := range segs {
		segs[x] = url.PathEscape(s)
	}
	return manifestURL(baseURL, taskID) + "/" + strings.Join(segs, "/")
}

// get sends a GET signed by priv and returns the response of a 200; any other status
// is an error carrying the server's message.
func get(ctx context.Context, client *http.Client, u string, priv cryptotypes.PrivKey) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if err := SignRequest(req, priv, time.Now()); err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var body struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &body) == nil && body.Error != "" {
			msg = body.Error
		}
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, msg)
	}
	return resp, nil
}

// FetchManifest downloads and checks a task's manifest (Manifest.Verify): well formed
// and its root the root of its files. That is not yet the committed result: a provider
// can copy the chain's result root into a manifest of other files. Fetch holds it to
// the chain.
func FetchManifest(ctx context.Context, client *http.Client, baseURL string, taskID uint64, priv cryptotypes.PrivKey) (Manifest, error) {
	resp, err := get(ctx, client, manifestURL(baseURL, taskID), priv)
	if err != nil {
		return Manifest{}, err
	}
	defer resp.Body.Close()
	var m Manifest
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxManifestBytes))
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("manifest of task %d: %w", taskID, err)
	}
	if m.TaskID != taskID {
		return Manifest{}, fmt.Errorf("manifest of task %d names task %d", taskID, m.TaskID)
	}
	if err := m.Verify(); err != nil {
		return Manifest{}, fmt.Errorf("manifest of task %d: %w", taskID, err)
	}
	return m, nil
}

// Committed is what the chain holds of a task's result, which the files fetched from its
// provider must be: the result root the provider revealed and, for a BUILTIN gemm task,
// the order of its product (0 for every other workload). FailedRun is a verification
// task that answered the failed-run root (x/market's FailedRoot): that root binds no file,
// so what its run left (logs, partial outputs) can only be checked against the manifest.
type Committed struct {
	ResultRoot []byte
	GemmN      uint32
	FailedRun  bool
}

// Fetch downloads a task's outputs and logs into dir, signed by the owner's key priv,
// and holds them to the result on chain. It reads the manifest once (FetchManifest) and
// requires it to be that result before it downloads anything: its result root the
// chain's and, for every workload but BUILTIN gemm, the root of its files the chain's
// too, so that each file, kept only once its size and sha256 match the manifest, is the
// committed output. A BUILTIN gemm task's result root is the PoCP root of its product,
// so its product (executor.ProductFile) must be listed, and is kept only once the root
// rebuilt from its bytes is the chain's; its other files, if any, are bound only by the
// manifest. Logs are never part of a result root: they are checked against the
// manifest alone, as every file of a FailedRun is. On an error, the files already kept are the committed ones and the
// one that failed is not kept. It returns the manifest it fetched.
func Fetch(ctx context.Context, client *http.Client, baseURL string, taskID uint64, priv cryptotypes.PrivKey, dir string, want Committed) (Manifest, error) {
	m, err := FetchManifest(ctx, client, baseURL, taskID, priv)
	if err != nil {
		return Manifest{}, err
	}
	chainRoot := hex.EncodeToString(want.ResultRoot)
	switch {
	case want.FailedRun:
		// nothing on chain to hold the files to: each is checked against the manifest
	case m.ResultRoot != chainRoot:
		return Manifest{}, fmt.Errorf("task %d: the server's result root %s is not the one revealed on chain %s", taskID, m.ResultRoot, chainRoot)
	case want.GemmN == 0 && m.Root != chainRoot:
		return Manifest{}, fmt.Errorf("task %d: the server's files have the root %s, not the result root revealed on chain %s", taskID, m.Root, chainRoot)
	case want.GemmN > 0 && !slices.ContainsFunc(m.Files, func(f executor.OutputFile) bool { return f.Path == executor.ProductFile }):
		return Manifest{}, fmt.Errorf("task %d: the server's manifest lists no %s, the product whose root is on chain", taskID, executor.ProductFile)
	}
	var check func(executor.OutputFile, string) error
	if want.GemmN > 0 && !want.FailedRun {
		check = func(f executor.OutputFile, tmp string) error {
			if f.Path != executor.ProductFile {
				return nil
			}
			return CheckProduct(tmp, want.GemmN, want.ResultRoot)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Manifest{}, err
	}
	for _, f := range m.Files {
		if err := fetchFile(ctx, client, baseURL, taskID, priv, dir, f, check); err != nil {
			return Manifest{}, err
		}
	}
	for _, f := range m.Logs {
		if err := fetchFile(ctx, client, baseURL, taskID, priv, dir, f, nil); err != nil {
			return Manifest{}, err
		}
	}
	return m, nil
}

// CheckProduct checks that the file at path is a BUILTIN gemm product of order n whose
// PoCP Merkle root is root.
func CheckProduct(path string, n uint32, root []byte) error {
	bz, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	prod, err := executor.ParseProduct(bz, n)
	if err != nil {
		return err
	}
	got := gflpocp.BuildTree(prod, n, runtime.NumCPU()).Root()
	if !bytes.Equal(got[:], root) {
		return fmt.Errorf("the product's Merkle root %x is not the result root on chain %x", got, root)
	}
	return nil
}

// fetchFile downloads f to its path under dir once its size and sha256 match, and check,
// if not nil, accepts the downloaded file.
func fetchFile(ctx context.Context, client *http.Client, baseURL string, taskID uint64, priv cryptotypes.PrivKey, dir string, f executor.OutputFile, check func(executor.OutputFile, string) error) error {
	// Verify has checked the path is clean and relative; check again where it lands.
	dst := filepath.Join(dir, filepath.FromSlash(f.Path))
	if !validOutputPath(f.Path) || !filepath.IsLocal(filepath.FromSlash(f.Path)) {
		return fmt.Errorf("output %q: not a path inside %s", f.Path, dir)
	}
	resp, err := get(ctx, client, fileURL(baseURL, taskID, f.Path), priv)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".fetch-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, f.Size+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("output %q: %w", f.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != f.Size || got != f.SHA256 {
		return fmt.Errorf("output %q: received %d bytes with sha256 %s, the manifest lists %d bytes with %s", f.Path, n, got, f.Size, f.SHA256)
	}
	if check != nil {
		if err := check(f, tmp.Name()); err != nil {
			return fmt.Errorf("output %q: %w", f.Path, err)
		}
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// logURL is the log route of Handler.
func logURL(baseURL string, taskID uint64, stream string, offset int64) string {
	return strings.TrimRight(baseURL, "/") + "/v1/tasks/" + strconv.FormatUint(taskID, 10) + "/logs/" + url.PathEscape(stream) +
		"?offset=" + strconv.FormatInt(offset, 10)
}

// CopyLog writes a task's log stream ("stdout" or "stderr") to w from its start, signed
// by the owner's key. With follow, it keeps polling every poll while the server says the
// task runs on its machine, and returns once it has written the end of the log of a task
// that no longer runs there (or ctx ends).
func CopyLog(ctx context.Context, client *http.Client, baseURL string, taskID uint64, stream string, priv cryptotypes.PrivKey, follow bool, poll time.Duration, w io.Writer) error {
	var offset int64
	for {
		resp, err := get(ctx, client, logURL(baseURL, taskID, stream, offset), priv)
		if err != nil {
			return err
		}
		n, err := io.Copy(w, io.LimitReader(resp.Body, MaxLogChunk))
		resp.Body.Close()
		if err != nil {
			return err
		}
		next, perr := strconv.ParseInt(resp.Header.Get(HeaderLogOffset), 10, 64)
		if perr != nil || next < offset {
			next = offset + n
		}
		offset = next
		running := resp.Header.Get(HeaderTaskRunning) == "true"
		switch {
		case n == MaxLogChunk:
			continue // more is there now
		case !follow || !running:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
