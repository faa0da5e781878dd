package outputs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flopsnet/flops/worker/executor"
)

// ErrNotFound is a task with no stored outputs, or a path its manifest does not list.
var ErrNotFound = errors.New("not found")

// Manifest lists a task's outputs.
type Manifest struct {
	TaskID uint64 `json:"task_id,string"`
	// Root is executor.ManifestRoot(Files), 64 hex characters.
	Root string `json:"root"`
	// ResultRoot is the root the provider committed on chain, 64 hex characters: Root
	// for every workload but BUILTIN gemm, whose result root is the pocp root of its
	// product (the file executor.ProductFile).
	ResultRoot string `json:"result_root"`
	// Files are the outputs Root covers, sorted by path.
	Files []executor.OutputFile `json:"files"`
	// Logs are the captured logs (under executor.LogDir), outside the root.
	Logs []executor.OutputFile `json:"logs"`
}

// Verify checks that the manifest is well formed: every path clean, relative and
// listed once, every digest 64 lowercase hex characters, the logs under
// executor.LogDir, the roots 32 bytes in hex, and Root the manifest root of Files.
func (m Manifest) Verify() error {
	root, err := executor.ManifestRoot(m.Files)
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(root[:]); got != m.Root {
		return fmt.Errorf("manifest root %q: the files give %s", m.Root, got)
	}
	if b, err := hex.DecodeString(m.ResultRoot); err != nil || len(b) != sha256.Size {
		return fmt.Errorf("manifest result_root %q: must be 64 hex characters", m.ResultRoot)
	}
	if _, err := executor.ManifestRoot(m.Logs); err != nil {
		return fmt.Errorf("manifest logs: %w", err)
	}
	seen := make(map[string]bool, len(m.Files)+len(m.Logs))
	for _, f := range m.Files {
		seen[f.Path] = true
	}
	for _, f := range m.Logs {
		if !strings.HasPrefix(f.Path, executor.LogDir+"/") {
			return fmt.Errorf("manifest log %q: not under %s/", f.Path, executor.LogDir)
		}
		if seen[f.Path] {
			return fmt.Errorf("manifest path %q: listed twice", f.Path)
		}
	}
	for _, f := range append(append([]executor.OutputFile(nil), m.Files...), m.Logs...) {
		if f.Size < 0 {
			return fmt.Errorf("manifest path %q: negative size", f.Path)
		}
	}
	return nil
}

// Lookup finds a file or a log by path.
func (m Manifest) Lookup(p string) (executor.OutputFile, bool) {
	for _, list := range [][]executor.OutputFile{m.Files, m.Logs} {
		for _, f := range list {
			if f.Path == p {
				return f, true
			}
		}
	}
	return executor.OutputFile{}, false
}

// Store keeps task outputs under a directory:
//
//	blobs/sha256/<first two hex digits>/<sha256>   contents, each stored once, read-only
//	tasks/<task id>.json                           a task's manifest
//
// It is safe for concurrent use; GC excludes the other operations while it runs.
type Store struct {
	dir string
	mu  sync.RWMutex
}

// Open opens (creating it if needed) a store in dir.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("outputs store %q: %w", dir, err)
	}
	for _, d := range []string{filepath.Join(abs, "blobs", "sha256"), filepath.Join(abs, "tasks"), filepath.Join(abs, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("outputs store: %w", err)
		}
	}
	return &Store{dir: abs}, nil
}

func (s *Store) blobPath(digest string) string {
	return filepath.Join(s.dir, "blobs", "sha256", digest[:2], digest)
}

func (s *Store) manifestPath(taskID uint64) string {
	return filepath.Join(s.dir, "tasks", strconv.FormatUint(taskID, 10)+".json")
}

// Put stores the outputs and logs of a finished task from its output directory,
// checking each file against the digest the executor computed (a file changed since
// is an error), and writes its manifest, replacing any earlier one.
func (s *Store) Put(ctx context.Context, taskID uint64, res executor.Result) (Manifest, error) {
	root, err := executor.ManifestRoot(res.Files)
	if err != nil {
		return Manifest{}, fmt.Errorf("store outputs of task %d: %w", taskID, err)
	}
	m := Manifest{
		TaskID:     taskID,
		Root:       hex.EncodeToString(root[:]),
		ResultRoot: hex.EncodeToString(res.Root[:]),
		Files:      nonNil(res.Files),
		Logs:       nonNil(res.Logs),
	}
	if err := m.Verify(); err != nil {
		return Manifest{}, fmt.Errorf("store outputs of task %d: %w", taskID, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, list := range [][]executor.OutputFile{m.Files, m.Logs} {
		for _, f := range list {
			if err := s.putBlob(ctx, filepath.Join(res.OutputDir, filepath.FromSlash(f.Path)), f); err != nil {
				return Manifest{}, fmt.Errorf("store outputs of task %d: %w", taskID, err)
			}
		}
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, err
	}
	if err := s.writeAtomic(s.manifestPath(taskID), b, 0o644); err != nil {
		return Manifest{}, fmt.Errorf("store outputs of task %d: %w", taskID, err)
	}
	return m, nil
}

func nonNil(l []executor.OutputFile) []executor.OutputFile {
	if l == nil {
		return []executor.OutputFile{}
	}
	return l
}

// putBlob copies one file into the blobs, unless its content is there already.
func (s *Store) putBlob(ctx context.Context, src string, f executor.OutputFile) error {
	dst := s.blobPath(f.SHA256)
	if st, err := os.Stat(dst); err == nil && st.Size() == f.Size {
		return nil
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("output %q: %w", f.Path, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, in})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("output %q: %w", f.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 || n != f.Size {
		return fmt.Errorf("output %q changed since the task ran: %d bytes with sha256 %s, the result lists %d bytes with %s", f.Path, n, got, f.Size, f.SHA256)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o444); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

func (s *Store) writeAtomic(dst string, b []byte, mode os.FileMode) error {
	return writeAtomic(filepath.Join(s.dir, "tmp"), "manifest-*", dst, b, mode)
}

// writeAtomic writes dst whole or not at all, with mode, through a temporary file of its
// own made in tmpDir (on dst's filesystem) after pattern: a reader or a second writer of
// dst never sees a part.
func writeAtomic(tmpDir, pattern, dst string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(tmpDir, pattern)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// Manifest is a task's manifest; ErrNotFound when none is stored.
func (s *Store) Manifest(taskID uint64) (Manifest, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.manifest(taskID)
}

func (s *Store) manifest(taskID uint64) (Manifest, error) {
	b, err := os.ReadFile(s.manifestPath(taskID))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("outputs of task %d: %w", taskID, ErrNotFound)
	}
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("manifest of task %d: %w", taskID, err)
	}
	return m, nil
}

// Has says whether a task's outputs are stored.
func (s *Store) Has(taskID uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, err := os.Stat(s.manifestPath(taskID))
	return err == nil
}

// OpenFile opens one output (or log) of a task by its manifest path; ErrNotFound when
// the manifest does not list it. The caller closes the file.
func (s *Store) OpenFile(taskID uint64, p string) (*os.File, executor.OutputFile, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, err := s.manifest(taskID)
	if err != nil {
		return nil, executor.OutputFile{}, err
	}
	f, ok := m.Lookup(p)
	if !ok {
		return nil, executor.OutputFile{}, fmt.Errorf("task %d has no output %q: %w", taskID, p, ErrNotFound)
	}
	file, err := os.Open(s.blobPath(f.SHA256))
	if err != nil {
		return nil, executor.OutputFile{}, fmt.Errorf("output %q of task %d: %w", p, taskID, err)
	}
	return file, f, nil
}

// Remove forgets a task's outputs; GC then reclaims the contents no other task lists.
func (s *Store) Remove(taskID uint64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := os.Remove(s.manifestPath(taskID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// manifestFiles are the stored tasks' manifest files, by task id.
func (s *Store) manifestFiles() (map[uint64]os.DirEntry, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "tasks"))
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]os.DirEntry, len(entries))
	for _, de := range entries {
		id, ok := strings.CutSuffix(de.Name(), ".json")
		if !ok {
			continue
		}
		if taskID, err := strconv.ParseUint(id, 10, 64); err == nil {
			out[taskID] = de
		}
	}
	return out, nil
}

// Prune forgets the outputs of every task stored before cutoff (its manifest's time)
// and reclaims the contents no remaining task lists; it returns how many tasks it forgot.
// The store kept every task's outputs for good, so a node's disk filled with what its
// clients had long fetched or never would.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	tasks, err := s.manifestFiles()
	if err != nil {
		return 0, err
	}
	forgot := 0
	for taskID, de := range tasks {
		info, err := de.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := s.Remove(taskID); err != nil {
			return forgot, err
		}
		forgot++
	}
	if forgot > 0 {
		if _, err := s.GC(ctx); err != nil {
			return forgot, err
		}
	}
	return forgot, nil
}

// GC deletes the contents that no manifest lists and returns how many it deleted.
func (s *Store) GC(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	live := map[string]bool{}
	tasks, err := s.manifestFiles()
	if err != nil {
		return 0, err
	}
	for taskID := range tasks {
		m, err := s.manifest(taskID)
		if err != nil {
			return 0, err
		}
		for _, f := range append(m.Files, m.Logs...) {
			live[f.SHA256] = true
		}
	}
	removed := 0
	err = filepath.WalkDir(filepath.Join(s.dir, "blobs", "sha256"), func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !live[path.Base(filepath.ToSlash(p))] {
			if err := os.Remove(p); err != nil {
				return err
			}
			removed++
		}
		return nil
	})
	return removed, err
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
