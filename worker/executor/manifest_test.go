package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/x/gfl/pocp"
)

// writeTree writes files (relative path -> content) under dir in the given order.
func writeTree(t *testing.T, dir string, order []string, files map[string]string) {
	t.Helper()
	for _, p := range order {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(files[p]), 0o644))
	}
}

func rootOf(t *testing.T, dir string) [32]byte {
	t.Helper()
	files, _, err := HashOutputs(context.Background(), dir, nil)
	require.NoError(t, err)
	root, err := ManifestRoot(files)
	require.NoError(t, err)
	return root
}

// The manifest root depends on the paths and contents only: not on the order files were
// written, nor on the logs, symlinks or empty directories; any change to a path or a
// byte changes it.
func TestManifestRootDeterminismAndSensitivity(t *testing.T) {
	files := map[string]string{"model.bin": "weights", "metrics/loss.csv": "1,0.5\n", "metrics/acc.csv": "1,0.9\n", "z": ""}
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, []string{"model.bin", "metrics/loss.csv", "metrics/acc.csv", "z"}, files)
	writeTree(t, b, []string{"z", "metrics/acc.csv", "model.bin", "metrics/loss.csv"}, files)
	// Neither logs, a symlink (never followed) nor an empty directory is part of the result.
	writeTree(t, b, []string{LogDir + "/stdout.log"}, map[string]string{LogDir + "/stdout.log": "12:00:01 started"})
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(b, "leak")))
	require.NoError(t, os.MkdirAll(filepath.Join(b, "empty"), 0o755))
	base := rootOf(t, a)
	require.Equal(t, base, rootOf(t, b))

	_, logs, err := HashOutputs(context.Background(), b, nil)
	require.NoError(t, err)
	require.Equal(t, []OutputFile{{Path: LogDir + "/stdout.log", Size: 16, SHA256: sha256Hex([]byte("12:00:01 started"))}}, logs)

	changes := map[string]func(dir string){
		"a byte":       func(d string) { writeTree(t, d, []string{"model.bin"}, map[string]string{"model.bin": "weightS"}) },
		"a rename":     func(d string) { require.NoError(t, os.Rename(filepath.Join(d, "z"), filepath.Join(d, "y"))) },
		"a move":       func(d string) { require.NoError(t, os.Rename(filepath.Join(d, "z"), filepath.Join(d, "metrics", "z"))) },
		"another file": func(d string) { writeTree(t, d, []string{"extra"}, map[string]string{"extra": ""}) },
		"a removal":    func(d string) { require.NoError(t, os.Remove(filepath.Join(d, "z"))) },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			writeTree(t, d, []string{"model.bin", "metrics/loss.csv", "metrics/acc.csv", "z"}, files)
			change(d)
			require.NotEqual(t, base, rootOf(t, d))
		})
	}
}

// The root is written out in docs/workloads.md section 8: check it by hand for small
// cases, and the tree shape against pocp's RFC 6962 tree.
func TestManifestRootDefinition(t *testing.T) {
	empty, err := ManifestRoot(nil)
	require.NoError(t, err)
	require.Equal(t, sha256.Sum256(nil), empty)

	leaf := func(p, content string) [32]byte {
		d := sha256.Sum256([]byte(content))
		return sha256.Sum256(append([]byte{0x00}, append(append([]byte(p), 0x00), d[:]...)...))
	}
	node := func(l, r [32]byte) [32]byte {
		return sha256.Sum256(append(append([]byte{0x01}, l[:]...), r[:]...))
	}
	f := func(p, content string) OutputFile {
		return OutputFile{Path: p, Size: int64(len(content)), SHA256: sha256Hex([]byte(content))}
	}
	one, err := ManifestRoot([]OutputFile{f("a", "1")})
	require.NoError(t, err)
	require.Equal(t, leaf("a", "1"), one)
	// Three leaves, given out of order: MTH = node(node(a, b), c).
	three, err := ManifestRoot([]OutputFile{f("c", "3"), f("a", "1"), f("b", "2")})
	require.NoError(t, err)
	require.Equal(t, node(node(leaf("a", "1"), leaf("b", "2")), leaf("c", "3")), three)

	// The same RFC 6962 tree as pocp's over any number of leaves.
	for _, n := range []uint32{256, 512, 768} {
		s := make([]int32, int(n)*int(n))
		for x := range s {
			s[x] = int32(x*7919) ^ int32(n)
		}
		tree := pocp.BuildTree(s, n, 1)
		leaves := make([][32]byte, tree.LeafCount())
		for c := range leaves {
			leaves[c] = pocp.LeafHash(pocp.EncodeChunk(s, n, uint64(c)))
		}
		require.Equal(t, tree.Root(), merkleRoot(leaves), "n = %d", n)
	}

	for _, bad := range [][]OutputFile{
		{f("a", "1"), f("a", "2")},
		{f("../a", "1")},
		{f("/a", "1")},
		{f("a//b", "1")},
		{{Path: "a", SHA256: "ABCD"}},
		{{Path: "a", SHA256: hex.EncodeToString(make([]byte, 31))}},
	} {
		_, err := ManifestRoot(bad)
		require.Error(t, err, "%v", bad)
	}
}
