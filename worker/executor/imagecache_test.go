package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// statefulRuntime is a podman stand-in that holds images: "run" pulls its image when it
// does not hold it (a file of $FAKE_IMAGE_SIZE bytes' record, its ref appended to
// pulls), "image inspect" answers for a held image (its size for a {{.Size}} format),
// "rmi" removes one (its ref appended to removed) unless a container uses it (a .busy
// file).
const statefulRuntime = `#!/bin/sh
d="$FAKE_RUNTIME_DIR"; mkdir -p "$d/images"
key() { printf '%s' "$1" | sha256sum | cut -c1-16; }
case "$1" in
run)
  for a in "$@"; do case "$a" in *@sha256:*) ref="$a" ;; esac; done
  k=$(key "$ref")
  if [ ! -f "$d/images/$k" ]; then echo "$ref" >> "$d/pulls"; echo "${FAKE_IMAGE_SIZE:-1000}" > "$d/images/$k"; fi
  exit 0 ;;
image)
  k=$(key "$5"); [ -f "$d/images/$k" ] || exit 1
  case "$4" in *Size*) cat "$d/images/$k" ;; *) echo "[\"$5\"]" ;; esac
  exit 0 ;;
rmi)
  k=$(key "$2")
  if [ -f "$d/images/$k.busy" ]; then echo "image is in use by a container" >&2; exit 2; fi
  [ -f "$d/images/$k" ] || { echo "image not known" >&2; exit 1; }
  rm "$d/images/$k"; echo "$2" >> "$d/removed"; exit 0 ;;
esac
exit 0
`

type fakeImages struct{ dir string }

func installStatefulRuntime(t *testing.T) fakeImages {
	bin, rec := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "podman"), []byte(statefulRuntime), 0o755))
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("FAKE_RUNTIME_DIR", rec)
	t.Setenv("FAKE_IMAGE_SIZE", "1000")
	return fakeImages{rec}
}

func (f fakeImages) key(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(f.dir, "images", hex.EncodeToString(sum[:])[:16])
}

func (f fakeImages) list(t *testing.T, name string) []string {
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

func (f fakeImages) held(ref string) bool {
	_, err := os.Stat(f.key(ref))
	return err == nil
}

func img(n string) string {
	sum := sha256.Sum256([]byte(n))
	return "registry.example/flops/" + n + "@sha256:" + hex.EncodeToString(sum[:])
}

// A job names a new image each time: the runtime kept every image it pulled, so a
// stream of jobs filled the provider's disk however small each image. The images the
// worker pulled are kept within the cache's budget, the least recently used removed first
// once a task ends; the operator's own images are never removed, nor one a container
// still uses; the records survive a restart.
func TestAttackJobsFillTheDiskWithImages(t *testing.T) {
	f := installStatefulRuntime(t)
	work := t.TempDir()
	e := newTestExecutor(t, func(o *Options) { o.WorkDir = work; o.ContainerRuntime = "podman"; o.ImageCacheBytes = 2500 })
	id := uint64(400)
	run := func(e *Executor, image string) {
		id++
		spec := containerSpec(id)
		spec.Image = image
		_, err := e.Run(context.Background(), spec, Hooks{})
		require.NoError(t, err)
	}
	// the operator's own image, held before any task
	require.NoError(t, os.MkdirAll(filepath.Dir(f.key(img("own"))), 0o755))
	require.NoError(t, os.WriteFile(f.key(img("own")), []byte("5000\n"), 0o644))

	run(e, img("a"))
	run(e, img("b"))
	require.Empty(t, f.list(t, "removed"), "2,000 bytes fit 2,500")
	run(e, img("c"))
	require.Equal(t, []string{img("a")}, f.list(t, "removed"), "the least recently used goes")
	run(e, img("b")) // b used again: c is now the least recently used
	require.Equal(t, []string{img("a"), img("b"), img("c")}, f.list(t, "pulls"), "b was not pulled again")
	run(e, img("own"))
	run(e, img("d"))
	require.Equal(t, []string{img("a"), img("c")}, f.list(t, "removed"))
	require.True(t, f.held(img("own")), "the operator's image stays")

	// a container still uses b (a task adopted after a restart): it stays until it no
	// longer does; the records survive the restart
	require.NoError(t, os.WriteFile(f.key(img("b"))+".busy", nil, 0o644))
	restarted := newTestExecutor(t, func(o *Options) { o.WorkDir = work; o.ContainerRuntime = "podman"; o.ImageCacheBytes = 2500 })
	run(restarted, img("e"))
	require.Equal(t, []string{img("a"), img("c"), img("d")}, f.list(t, "removed"), "b is used: d goes in its place")
	require.True(t, f.held(img("b")) && f.held(img("e")))
	require.NoError(t, os.Remove(f.key(img("b"))+".busy"))
	t.Setenv("FAKE_IMAGE_SIZE", "2000")
	run(restarted, img("f"))
	require.Equal(t, []string{img("a"), img("c"), img("d"), img("b"), img("e")}, f.list(t, "removed"), "b no longer used: it goes, then e")
	require.True(t, f.held(img("f")) && f.held(img("own")))

	// a cache of 0 keeps no pulled image past its task
	none := newTestExecutor(t, func(o *Options) { o.WorkDir = t.TempDir(); o.ContainerRuntime = "podman" })
	run(none, img("i"))
	require.False(t, f.held(img("i")))
	run(none, img("own"))
	require.True(t, f.held(img("own")))
}
