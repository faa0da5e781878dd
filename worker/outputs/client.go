package outputs

import (
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
	"strconv"
	"strings"
	"time"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"

	"github.com/flopsnet/flops/worker/executor"
)

// maxManifestBytes bounds a manifest a client reads.
const maxManifestBytes = 256 << 20

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

// FetchManifest downloads and checks a task's manifest (Manifest.Verify). Compare its
// ResultRoot with the task's result root on chain to know it is the committed result.
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

// Fetch downloads all outputs and logs of a task into dir, signed by the owner's key
// priv: the manifest is checked (paths, and its root recomputed from the files), then
// every file is written at its path under dir only once its size and sha256 match the
// manifest. A file that does not match is an error and is not kept.
func Fetch(ctx context.Context, client *http.Client, baseURL string, taskID uint64, priv cryptotypes.PrivKey, dir string) error {
	m, err := FetchManifest(ctx, client, baseURL, taskID, priv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, list := range [][]executor.OutputFile{m.Files, m.Logs} {
		for _, f := range list {
			if err := fetchFile(ctx, client, baseURL, taskID, priv, dir, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func fetchFile(ctx context.Context, client *http.Client, baseURL string, taskID uint64, priv cryptotypes.PrivKey, dir string, f executor.OutputFile) error {
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
