package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Input downloads: at most fetchAttempts tries, fetchBackoff doubling between them, for
// the errors that may pass (a network failure, HTTP 5xx or 429). A wrong digest, a 4xx or
// an oversized body fails at once.
const (
	fetchAttempts = 3
	fetchBackoff  = 500 * time.Millisecond
)

// inputMode is the mode of cached and placed inputs: read-only, and executable so that
// a job can ship a program or a script as an input and run it by its path.
const inputMode = 0o555

// transientError marks a download failure worth another try.
type transientError struct{ err error }

func (t transientError) Error() string { return t.err.Error() }
func (t transientError) Unwrap() error { return t.err }

// fetchInputs puts every input at its path in the working directory, fetched (or taken
// from the cache) and verified against its digest. With a disk bound (maxDisk, the task's
// Spec.MaxDiskBytes; 0: none) the inputs, in their order, may come to that much in all: a
// download is cut off past what is left of it, and a cached input larger than that is
// not used, with ErrInputTooLarge. Before, an input could be as large as MaxInputBytes (1
// TiB by default), each of them, and was downloaded whole into the cache, outside the
// directories the disk bound watches.
func (e *Executor) fetchInputs(ctx context.Context, log *slog.Logger, owner string, inputs []markettypes.Input, work string, maxDisk uint64) error {
	var used uint64
	for i, in := range inputs {
		limit, bounded := e.downloadLimit(maxDisk, used)
		cached, err := e.cached(ctx, log, owner, in.Uri, in.Sha256, limit, bounded, nil)
		if err != nil {
			return fmt.Errorf("input %d (%s, for %s): %w", i, redact(in.Uri), inputPath(inputs, i), err)
		}
		st, err := os.Stat(cached)
		if err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
		if bounded && st.Size() > limit {
			return fmt.Errorf("input %d (%s, for %s): %d bytes, and the inputs before it %d: more than the task's disk of %d bytes: %w",
				i, redact(in.Uri), inputPath(inputs, i), st.Size(), used, maxDisk, ErrInputTooLarge)
		}
		used += uint64(st.Size())
		dst := filepath.Join(work, filepath.FromSlash(inputPath(inputs, i)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("input %d: %w", i, err)
		}
		// A hard link costs nothing; a task that writes through it damages the cached
		// copy, which is why a cache hit is hashed again before use.
		if err := os.Link(cached, dst); err != nil {
			if err := copyFile(ctx, cached, dst, inputMode); err != nil {
				return fmt.Errorf("input %d: %w", i, err)
			}
		}
	}
	return nil
}

// downloadLimit is the most one download may bring when used bytes of the task's disk
// (maxDisk; 0: no bound) are taken: what is left of the disk, and then bounded says the
// disk sets it, or the worker's own MaxInputBytes.
func (e *Executor) downloadLimit(maxDisk, used uint64) (limit int64, bounded bool) {
	limit = e.opts.MaxInputBytes
	if maxDisk > 0 {
		if left := int64(min(maxDisk-min(used, maxDisk), math.MaxInt64)); left < limit {
			return left, true
		}
	}
	return limit, false
}

// inputPath is where input i goes in the working directory: its path, or, for an input
// without one (a pool unit's), "input" when it is the only input and "input-<i>"
// otherwise.
func inputPath(inputs []markettypes.Input, i int) string {
	switch {
	case inputs[i].Path != "":
		return inputs[i].Path
	case len(inputs) == 1:
		return "input"
	default:
		return "input-" + strconv.Itoa(i)
	}
}

// cachePath is where content of the given digest is cached for owner (a job's or pool's
// owner; "" for none). The cache is kept per owner: a digest is no secret (a job's inputs
// and a task's checkpoints are on chain with theirs), so a cache shared by every job let
// a job name another client's digest with any URI and be handed that client's input, or a
// checkpoint this machine had resumed from (a model's weights midway, which the output
// server keeps from strangers), out of the cache, without ever fetching it. An owner's
// tasks share theirs, and another owner's content comes only from its own fetch.
func (e *Executor) cachePath(owner, digest string) string {
	name := digest
	if owner != "" {
		name += "-" + ownerTag(owner)
	}
	return filepath.Join(e.opts.WorkDir, "cache", "sha256", name)
}

var plainOwner = regexp.MustCompile(`^[a-z0-9]{1,90}$`)

// ownerTag is owner as a file name's part: a bech32 address as it is, anything else by
// its sha256.
func ownerTag(owner string) string {
	if plainOwner.MatchString(owner) {
		return owner
	}
	sum := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(sum[:16])
}

// cached returns the cache file holding the content of digest, downloading it from uri
// when it is not cached or the cached copy no longer matches.
//
// A download is cut off past max bytes: with ErrInputTooLarge when max is the task's disk
// (diskBound), else with ErrInputFetch (the worker's own MaxInputBytes).
func (e *Executor) cached(ctx context.Context, log *slog.Logger, owner, uri, digest string, max int64, diskBound bool, sign func(*http.Request) error) (string, error) {
	if err := markettypes.ValidateSHA256Hex(digest); err != nil {
		return "", fmt.Errorf("sha256: %w: %w", err, ErrInvalidSpec)
	}
	dst := e.cachePath(owner, digest)
	if _, err := os.Stat(dst); err == nil {
		got, err := hashFile(ctx, dst)
		if err != nil {
			return "", err
		}
		if got == digest {
			log.Debug("input cached", "sha256", digest)
			touchCached(dst, time.Now())
			return dst, nil
		}
		log.Warn("cached input was modified; fetching it again", "sha256", digest, "now", got)
		if err := os.Remove(dst); err != nil {
			return "", fmt.Errorf("input cache: %w", err)
		}
	}
	src, err := e.resolve(uri)
	if err != nil {
		return "", err
	}
	transient := func(err error) bool {
		var tr transientError
		return errors.As(err, &tr)
	}
	if err := retry(ctx, log, "input fetch", transient, func() error { return e.download(ctx, src, dst, digest, max, diskBound, sign) },
		"uri", redact(uri)); err != nil {
		return "", err
	}
	log.Info("input fetched", "uri", redact(uri), "sha256", digest)
	return dst, nil
}

// retry calls try up to fetchAttempts times, fetchBackoff doubling between tries, while
// it fails with an error that transient says may pass and ctx lasts, and returns its
// last error (nil once it succeeds).
func retry(ctx context.Context, log *slog.Logger, what string, transient func(error) bool, try func() error, attrs ...any) error {
	backoff := fetchBackoff
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !transient(err) || attempt == fetchAttempts || ctx.Err() != nil {
			return err
		}
		log.Warn(what+" failed; retrying", append(attrs, "attempt", attempt, "err", err)...)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 2
	}
}

// resolve maps an input URI to the URL fetched: http and https as they are, ipfs://CID/p
// through the gateway.
func (e *Executor) resolve(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("uri %q: %w: %w", redact(uri), err, ErrInvalidSpec)
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return "", fmt.Errorf("uri %q: no host: %w", redact(uri), ErrInvalidSpec)
		}
		return uri, nil
	case "ipfs":
		if e.opts.IPFSGateway == "" {
			return "", fmt.Errorf("uri %q: no IPFS gateway is configured: %w", uri, ErrInputFetch)
		}
		cid, rest := u.Host, u.EscapedPath()
		if cid == "" { // ipfs:CID/p
			cid, rest, _ = strings.Cut(u.Opaque, "/")
			if rest != "" {
				rest = "/" + rest
			}
		}
		if cid == "" || strings.ContainsAny(cid, "/?#") {
			return "", fmt.Errorf("uri %q: no content identifier: %w", uri, ErrInvalidSpec)
		}
		return strings.TrimRight(e.opts.IPFSGateway, "/") + "/ipfs/" + url.PathEscape(cid) + rest, nil
	default:
		return "", fmt.Errorf("uri %q: scheme must be https, http or ipfs: %w", redact(uri), ErrInvalidSpec)
	}
}

// download fetches src into dst through a temporary file, checking the digest before
// the file takes its place. sign, if not nil, signs the request (each try anew).
func (e *Executor) download(ctx context.Context, src, dst, digest string, max int64, diskBound bool, sign func(*http.Request) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrInputFetch)
	}
	if sign != nil {
		if err := sign(req); err != nil {
			return fmt.Errorf("signing the request: %w: %w", err, ErrInputFetch)
		}
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// A *url.Error names the URL, which may carry credentials in its query.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return transientError{fmt.Errorf("GET %s: %w: %w", redact(src), err, ErrInputFetch)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("GET %s: HTTP %s: %w", redact(src), resp.Status, ErrInputFetch)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return transientError{err}
		}
		return err
	}
	tooLarge := ErrInputFetch
	if diskBound {
		tooLarge = ErrInputTooLarge // the task's disk: the same on every machine
	}
	if resp.ContentLength > max {
		return fmt.Errorf("GET %s: %d bytes, more than the limit of %d: %w", redact(src), resp.ContentLength, max, tooLarge)
	}
	tmp, err := os.CreateTemp(filepath.Join(e.opts.WorkDir, "cache", "tmp"), "fetch-*")
	if err != nil {
		return fmt.Errorf("input cache: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, max+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil:
		return transientError{fmt.Errorf("GET %s: reading the body after %d bytes: %w: %w", redact(src), n, err, ErrInputFetch)}
	case n > max:
		return fmt.Errorf("GET %s: more than the limit of %d bytes: %w", redact(src), max, tooLarge)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("GET %s: content of %d bytes has sha256 %s, the job names %s: %w", redact(src), n, got, digest, ErrInputDigest)
	}
	if err := os.Chmod(tmp.Name(), inputMode); err != nil {
		return fmt.Errorf("input cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("input cache: %w", err)
	}
	return nil
}

// redact is a URI without its user information and query, which may hold credentials
// (pre-signed URLs), for logs and errors.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "<malformed uri>"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "<redacted>"
	}
	u.Fragment = ""
	return u.String()
}

// stageCheckpoint puts the checkpoint to resume from into the cache (from its local path
// when that file still matches, else from its URI, cut off past maxDisk bytes, the task's
// disk; 0: the worker's MaxInputBytes) and returns the cache file.
func (e *Executor) stageCheckpoint(ctx context.Context, log *slog.Logger, owner string, cp Checkpoint, maxDisk uint64) (string, error) {
	dst := e.cachePath(owner, cp.SHA256)
	if cp.Path != "" {
		if got, err := hashFile(ctx, cp.Path); err == nil && got == cp.SHA256 {
			if _, err := os.Stat(dst); err == nil {
				if got, err := hashFile(ctx, dst); err == nil && got == cp.SHA256 {
					touchCached(dst, time.Now())
					return dst, nil
				}
			}
			tmp := dst + ".stage"
			if err := copyFile(ctx, cp.Path, tmp, inputMode); err != nil {
				return "", fmt.Errorf("resume checkpoint: %w", err)
			}
			if err := os.Rename(tmp, dst); err != nil {
				return "", fmt.Errorf("resume checkpoint: %w", err)
			}
			return dst, nil
		} else if err != nil && ctx.Err() != nil {
			return "", err
		}
		log.Info("local checkpoint missing or changed; fetching it", "path", cp.Path, "sha256", cp.SHA256)
	}
	if cp.URI == "" {
		return "", fmt.Errorf("resume checkpoint %s: no file at %q and no URI: %w", cp.SHA256, cp.Path, ErrInputFetch)
	}
	limit, bounded := e.downloadLimit(maxDisk, 0)
	p, err := e.cached(ctx, log, owner, cp.URI, cp.SHA256, limit, bounded, e.opts.SignCheckpointFetch)
	if err != nil {
		return "", fmt.Errorf("resume checkpoint (%s): %w", redact(cp.URI), err)
	}
	return p, nil
}

// placeCheckpoint copies a staged checkpoint into the checkpoint directory under the
// name it had (the base of its path, else the last segment of its URI, else
// "checkpoint"), writable by the task.
func placeCheckpoint(ctx context.Context, staged string, cp Checkpoint, dir string) (Checkpoint, error) {
	name := checkpointName(cp)
	dst := filepath.Join(dir, name)
	if err := copyFile(ctx, staged, dst, 0o644); err != nil {
		return Checkpoint{}, fmt.Errorf("resume checkpoint: %w", err)
	}
	return Checkpoint{SHA256: cp.SHA256, URI: cp.URI, Path: dst}, nil
}

func checkpointName(cp Checkpoint) string {
	var name string
	if cp.Path != "" {
		name = filepath.Base(cp.Path)
	} else if u, err := url.Parse(cp.URI); err == nil {
		name = path.Base(u.Path)
	}
	if name == "" || name == "." || name == ".." || name == "/" || !localPath(name) || strings.HasPrefix(name, ".") {
		return "checkpoint"
	}
	return name
}

// hashFile is the hex sha256 of a file, reading it under ctx.
func hashFile(ctx context.Context, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	return hashOpen(ctx, p, f)
}

// hashTaskFile is hashFile of a file the task wrote, opened with OpenTaskFile.
func hashTaskFile(ctx context.Context, p string) (string, error) {
	f, err := OpenTaskFile(p)
	if err != nil {
		return "", err
	}
	return hashOpen(ctx, p, f)
}

func hashOpen(ctx context.Context, p string, f *os.File) (string, error) {
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile copies src to dst (replaced if present) with the given mode.
func copyFile(ctx context.Context, src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	_ = os.Remove(dst)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, ctxReader{ctx, in})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst, mode)
	}
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("copy %s: %w", filepath.Base(src), err)
	}
	return nil
}

// ctxReader stops a long read when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// InputClient is the HTTP client that fetches a job's inputs and checkpoints. A job names
// its own URLs, so by default it may only name public addresses: a connection (a redirect
// included) to a loopback, private, link-local, CGNAT, multicast or unspecified address
// is refused, so that a job cannot make the provider's machine read its own network (a
// cloud metadata service, a router, a database on localhost) and hand the answer back
// as an input. private lets it; allow lists host:port addresses that stay reachable
// (the provider's own IPFS gateway).
func InputClient(private bool, allow ...string) *http.Client {
	if private {
		return &http.Client{}
	}
	allowed := map[string]bool{}
	for _, a := range allow {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		ips, _ := net.LookupIP(host)
		for _, ip := range ips {
			allowed[net.JoinHostPort(ip.String(), port)] = true
		}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			if allowed[address] {
				return nil
			}
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("input address %q: %w", address, err)
			}
			if !PublicAddr(ip) {
				return fmt.Errorf("input address %s is not public (executor.private_inputs allows it): %w", ip, ErrInputFetch)
			}
			return nil
		}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a proxy would connect for the job, past the check
	tr.DialContext = dialer.DialContext
	return &http.Client{Transport: tr}
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// PublicAddr reports whether ip is a public unicast address.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !cgnat.Contains(ip) &&
		!ip.IsLoopback() && !ip.IsLinkLocalUnicast() && !ip.IsMulticast() && !ip.IsUnspecified()
}
