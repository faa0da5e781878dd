package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/flopsnet/flops/x/gfl/pocp"
)

// MaxOutputFiles bounds the files of one output directory.
const MaxOutputFiles = 1 << 20

// ManifestRoot is the result root of a set of output files (docs/workloads.md section
// 8): the RFC 6962 Merkle tree hash, with x/gfl/pocp's leaf and node hashes, of the
// leaves path || 0x00 || sha256(content) taken in increasing byte order of path. An
// empty set has root sha256(""). It fails on a duplicate path, a path that is not clean
// and relative, or a digest that is not 64 lowercase hex characters.
func ManifestRoot(files []OutputFile) ([32]byte, error) {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b OutputFile) int { return strings.Compare(a.Path, b.Path) })
	leaves := make([][32]byte, len(sorted))
	for x, f := range sorted {
		if !localPath(f.Path) || !utf8.ValidString(f.Path) {
			return [32]byte{}, fmt.Errorf("manifest path %q: must be a clean relative path", f.Path)
		}
		if x > 0 && sorted[x-1].Path == f.Path {
			return [32]byte{}, fmt.Errorf("manifest path %q: duplicate", f.Path)
		}
		digest, err := hex.DecodeString(f.SHA256)
		if err != nil || len(digest) != sha256.Size || strings.ToLower(f.SHA256) != f.SHA256 {
			return [32]byte{}, fmt.Errorf("manifest path %q: sha256 %q: must be 64 lowercase hex characters", f.Path, f.SHA256)
		}
		leaves[x] = pocp.LeafHash(ManifestLeaf(f.Path, digest))
	}
	return merkleRoot(leaves), nil
}

// ManifestLeaf is the leaf data of one output file: path || 0x00 || sha256 (32 bytes).
// A path holds no NUL byte, so the encoding is unambiguous.
func ManifestLeaf(path string, digest []byte) []byte {
	out := make([]byte, 0, len(path)+1+len(digest))
	out = append(out, path...)
	out = append(out, 0)
	return append(out, digest...)
}

// merkleRoot is RFC 6962's MTH over leaf hashes: the node of the trees over the first k
// leaves (k the largest power of two below the count) and over the rest; sha256("") for
// no leaf. Depth is at most 64.
func merkleRoot(leaves [][32]byte) [32]byte {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return leaves[0]
	}
	k := 1
	for 2*k < len(leaves) {
		k *= 2
	}
	return pocp.NodeHash(merkleRoot(leaves[:k]), merkleRoot(leaves[k:]))
}

// HashOutputs lists and hashes the regular files under dir: files, sorted by path, are
// what the result root covers; logs are the files under LogDir, which it does not.
// Symbolic links (never followed), devices, sockets, pipes and paths that are not valid
// UTF-8 are skipped with a warning: they are not part of a result. log may be nil.
func HashOutputs(ctx context.Context, dir string, log *slog.Logger) (files, logs []OutputFile, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	count := 0
	err = filepath.WalkDir(dir, func(p string, de fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if de.IsDir() {
			return nil
		}
		if !de.Type().IsRegular() {
			log.Warn("output skipped: not a regular file", "path", rel, "type", de.Type().String())
			return nil
		}
		if !utf8.ValidString(rel) || !localPath(rel) {
			log.Warn("output skipped: path is not valid UTF-8", "path", fmt.Sprintf("%q", rel))
			return nil
		}
		if count++; count > MaxOutputFiles {
			return fmt.Errorf("more than %d output files", MaxOutputFiles)
		}
		f, err := hashOutput(ctx, p, rel)
		if err != nil {
			return err
		}
		if rel == LogDir || strings.HasPrefix(rel, LogDir+"/") {
			logs = append(logs, f)
		} else {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("outputs: %w", err)
	}
	byPath := func(a, b OutputFile) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(files, byPath)
	slices.SortFunc(logs, byPath)
	return files, logs, nil
}

// hashOutput hashes one output file without following a link that replaced it since
// the directory was read.
func hashOutput(ctx context.Context, p, rel string) (OutputFile, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return OutputFile{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return OutputFile{}, err
	}
	if !st.Mode().IsRegular() {
		return OutputFile{}, fmt.Errorf("output %q is no longer a regular file", rel)
	}
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return OutputFile{}, fmt.Errorf("hash output %q: %w", rel, err)
	}
	return OutputFile{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
