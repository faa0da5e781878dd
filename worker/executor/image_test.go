package executor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/testutil/testimage"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// manifestRegistry serves image manifests over the registry API, and the blobs put in
// it: a manifest may list layers of any size without their bytes, as a manifest is all
// the check reads of an image that it lists larger than the task's disk. The first
// failFirst manifest requests are answered 503.
type manifestRegistry struct {
	mu        sync.Mutex
	manifests map[string][]byte // digest -> manifest
	blobs     map[string][]byte // digest -> the bytes served for it
	hits      atomic.Int32      // manifest requests
	blobHits  atomic.Int32
	login     string // "user:password" the registry asks for; "": none
	// privateRepo, with login: only this repository (and the /v2/ ping) asks for the
	// login, the others are served to anyone as well ("": every path asks)
	privateRepo string
	authed      atomic.Int32 // requests that came with the login
	failFirst   int32
	srv         *httptest.Server
}

func newManifestRegistry(t *testing.T) *manifestRegistry {
	r := &manifestRegistry{manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		login, private := r.login, r.privateRepo
		r.mu.Unlock()
		u, p, _ := req.BasicAuth()
		authed := login != "" && u+":"+p == login
		if authed {
			r.authed.Add(1)
		}
		asks := login != "" && (private == "" || req.URL.Path == "/v2/" || strings.HasPrefix(req.URL.Path, "/v2/"+private+"/"))
		if asks && !authed {
			w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"login required"}]}`)
			return
		}
		if req.URL.Path == "/v2/" {
			return
		}
		if _, digest, ok := strings.Cut(req.URL.Path, "/blobs/"); ok {
			r.blobHits.Add(1)
			r.mu.Lock()
			b, found := r.blobs[digest]
			r.mu.Unlock()
			if !found {
				http.NotFound(w, req)
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			if req.Method != http.MethodHead {
				_, _ = w.Write(b)
			}
			return
		}
		_, ref, ok := strings.Cut(req.URL.Path, "/manifests/")
		if !ok {
			http.NotFound(w, req)
			return
		}
		if n := r.hits.Add(1); n <= r.failFirst {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		r.mu.Lock()
		m, found := r.manifests[ref]
		r.mu.Unlock()
		if !found {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
			return
		}
		var mt struct {
			MediaType string `json:"mediaType"`
		}
		_ = json.Unmarshal(m, &mt)
		w.Header().Set("Content-Type", mt.MediaType)
		w.Header().Set("Docker-Content-Digest", ref)
		w.Header().Set("Content-Length", fmt.Sprint(len(m)))
		if req.Method != http.MethodHead {
			_, _ = w.Write(m)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// put stores a manifest and returns its pinned reference under repo.
func (r *manifestRegistry) put(t *testing.T, repo string, m any) string {
	bz, err := json.Marshal(m)
	require.NoError(t, err)
	sum := sha256.Sum256(bz)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	r.mu.Lock()
	r.manifests[digest] = bz
	r.mu.Unlock()
	return strings.TrimPrefix(r.srv.URL, "http://") + "/" + repo + "@" + digest
}

// image is a manifest of the layers given, each served as a blob of its bytes, with a
// 400-byte config.
func (r *manifestRegistry) image(layers ...[]byte) v1.Manifest {
	m := imageOf()
	for _, b := range layers {
		sum := sha256.Sum256(b)
		d := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
		r.serve(d, b)
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: types.OCILayer, Size: int64(len(b)), Digest: d})
	}
	return m
}

// serve answers requests for the blob d with b, whatever d's own bytes.
func (r *manifestRegistry) serve(d v1.Hash, b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blobs[d.String()] = b
}

func fakeDigest(s string) v1.Hash {
	sum := sha256.Sum256([]byte(s))
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
}

// imageOf is a manifest of layers of the sizes given, with a 400-byte config.
func imageOf(layers ...int64) v1.Manifest {
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Config: v1.Descriptor{MediaType: types.OCIConfigJSON, Size: 400, Digest: fakeDigest("config")}}
	for i, size := range layers {
		m.Layers = append(m.Layers, v1.Descriptor{MediaType: types.OCILayer, Size: size, Digest: fakeDigest(fmt.Sprint("layer", i))})
	}
	return m
}

// A job names an image that fills its provider's disk: a pinned image whose layers come
// to 3 GiB where the task may fill 1 GiB. The runtime would have pulled it whole into its
// own storage, outside the task's directories the disk bound watches, and kept it after
// the task. The executor reads the image's manifest first and refuses it with
// ErrImageTooLarge, without running the runtime, as it does an image of more layers than
// any runtime stacks; an image index is judged by this machine's platform's image.
func TestAttackJobImageFillsTheDisk(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	huge := reg.put(t, "flops/huge", imageOf(1<<30, 1<<30, 1<<30))

	spec := containerSpec(300)
	spec.Image, spec.MaxDiskBytes = huge, 1<<30
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImageTooLarge)
	require.ErrorContains(t, err, fmt.Sprintf("image %s is %d bytes as its registry lists it, the task's disk %d bytes", huge, 3<<30+400, 1<<30))
	_, statErr := os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr), "the runtime was never asked to pull or run it")

	// more layers than any runtime stacks: refused from the manifest, none read
	layers := make([]int64, maxImageLayers+1)
	for i := range layers {
		layers[i] = 1
	}
	reg.blobHits.Store(0)
	spec.TaskID, spec.Image = 303, reg.put(t, "flops/deep", imageOf(layers...))
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImageTooLarge)
	require.ErrorContains(t, err, fmt.Sprintf("more than %d layers, which no runtime stacks (%d)", maxImageLayers, maxImageLayers+1))
	require.Zero(t, reg.blobHits.Load())
	_, statErr = os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr))

	// an index: this platform's image is the huge one, another platform's is small
	small := reg.image(make([]byte, 1<<20))
	index := func(mine v1.Manifest) v1.IndexManifest {
		other := "arm64"
		if runtime.GOARCH == "arm64" {
			other = "amd64"
		}
		desc := func(m v1.Manifest, arch string) v1.Descriptor {
			ref := reg.put(t, "flops/multi", m)
			_, digest, _ := strings.Cut(ref, "@")
			h, err := v1.NewHash(digest)
			require.NoError(t, err)
			bz, _ := json.Marshal(m)
			return v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: int64(len(bz)), Digest: h, Platform: &v1.Platform{OS: "linux", Architecture: arch}}
		}
		return v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex,
			Manifests: []v1.Descriptor{desc(small, other), desc(mine, runtime.GOARCH)}}
	}
	spec.TaskID, spec.Image = 301, reg.put(t, "flops/multi", index(imageOf(1<<30, 1<<30)))
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImageTooLarge)
	_, statErr = os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr))

	// this platform's image within the disk: the runtime runs it
	spec.TaskID, spec.Image = 302, reg.put(t, "flops/multi", index(small))
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	args := recordedArgs(t, rec, "run")
	require.Equal(t, spec.Image, args[len(args)-3])
}

// runImage runs a CONTAINER task of image under a disk bound on e, with the fake
// runtime that records its arguments in rec (its run.args removed first).
func runImage(e *Executor, rec string, id uint64, image string, disk uint64) error {
	_ = os.Remove(filepath.Join(rec, "run.args"))
	spec := containerSpec(id)
	spec.Image, spec.MaxDiskBytes = image, disk
	_, err := e.Run(context.Background(), spec, Hooks{})
	return err
}

// tarOfZeros is a layer: a tar stream of one file of n zero bytes, compressed with
// compression ("gzip", "zstd" or "none").
func tarOfZeros(t *testing.T, n int64, compression string) []byte {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch compression {
	case "gzip":
		w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	case "zstd":
		z, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		require.NoError(t, err)
		w = z
	default:
		w = nopWriteCloser{&buf}
	}
	tw := tar.NewWriter(w)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: n, Typeflag: tar.TypeReg}))
	_, err := io.CopyN(tw, zeros{}, n)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	require.NoError(t, w.Close())
	return buf.Bytes()
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A job names an image whose layers are small but unpack to far more than the task's
// disk: 64 MiB of zeros in a 64 KiB gzip layer, or in a 2 KiB zstd layer
// that its manifest calls gzip, where the task may fill 16 MiB; or three layers that each
// fit and together do not; or ten thousand one-byte files, a tar stream of 10 MiB that
// takes 40 MiB of disk blocks. The runtime unpacks a pull into its own storage, outside the
// task's directories the disk bound watches: with the size the registry lists as the
// only check, a layer of megabytes could fill the provider's disk with terabytes, failing
// every task on it. The executor unpacks the layers first, stops once they pass the
// bound, and refuses the image with ErrImageTooLarge without running the runtime; an
// image whose files take exactly the task's disk, in whole 4 KiB blocks, runs.
func TestAttackJobImageUnpacksPastTheDisk(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	const disk = 16 << 20
	run := func(id uint64, image string, disk uint64) error { return runImage(e, rec, id, image, disk) }

	gz, zst := tarOfZeros(t, 64<<20, "gzip"), tarOfZeros(t, 64<<20, "zstd")
	require.Less(t, len(gz), 1<<20)
	require.Less(t, len(zst), 64<<10)
	eighth := tarOfZeros(t, 8<<20, "gzip")
	for i, layers := range [][][]byte{{gz}, {zst}, {eighth, eighth, eighth}} {
		image := reg.put(t, "flops/bomb", reg.image(layers...))
		err := run(uint64(340+i), image, disk)
		require.ErrorIs(t, err, ErrImageTooLarge, "layers %d", i)
		require.ErrorContains(t, err, fmt.Sprintf("unpacks to more than the task's disk, %d bytes", disk))
		_, statErr := os.Stat(filepath.Join(rec, "run.args"))
		require.True(t, os.IsNotExist(statErr), "the runtime was never asked to pull or run it")
	}

	// a layer of ten thousand one-byte files: 10 MiB of tar stream, 40 MiB of disk blocks
	var tiny bytes.Buffer
	zw := gzip.NewWriter(&tiny)
	tw := tar.NewWriter(zw)
	for i := range 10_000 {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("f%05d", i), Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte{'x'})
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	err := run(345, reg.put(t, "flops/tiny", reg.image(tiny.Bytes())), disk)
	require.ErrorIs(t, err, ErrImageTooLarge)
	require.ErrorContains(t, err, "unpacks to more than the task's disk")

	// the bound is the config and the layers' files in whole 4 KiB blocks, exactly
	layer := tarOfZeros(t, 1<<20+1, "gzip")
	unpacked := uint64(400 + 1<<20 + 4096)
	image := reg.put(t, "flops/fits", reg.image(layer))
	require.ErrorIs(t, run(350, image, unpacked-1), ErrImageTooLarge)
	require.NoError(t, run(351, image, unpacked))
	args := recordedArgs(t, rec, "run")
	require.Equal(t, image, args[len(args)-3])
}

// A job names an image whose zstd layer asks for a 256 MiB window: zstd's decoders take
// up to 512 MiB by default, so the check would have held that much for each layer it
// reads, three at once, on the provider's machine. A window past zstd's own default
// limit (128 MiB, what the zstd tool takes without --long) is refused with ErrImage
// before anything is allocated for it, and the runtime is never asked to pull it.
func TestAttackImageLayerAsksForAHugeZstdWindow(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	var wide bytes.Buffer
	zw, err := zstd.NewWriter(&wide, zstd.WithWindowSize(1<<28), zstd.WithSingleSegment(false))
	require.NoError(t, err)
	_, err = zw.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	err = runImage(e, rec, 365, reg.put(t, "flops/wide", reg.image(wide.Bytes())), 1<<30)
	require.ErrorIs(t, err, ErrImage)
	require.False(t, errors.Is(err, ErrImageTooLarge), "%v", err)
	require.ErrorContains(t, err, "window size exceeded")
	_, statErr := os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr))
}

// A job names an image index with two images for this machine's architecture: a small
// one first, with no variant, and one that unpacks past the task's disk with the variant
// a runtime prefers on a CPU that has it (amd64 v3, arm64 v8). The check had resolved the
// index as go-containerregistry does, to the first match, and passed the small one, while
// podman or docker, choosing by variant, would pull the large one. Every image of the
// index the runtime might choose is checked now; an index with none for this machine,
// or with an index inside it, is refused.
func TestAttackImageIndexHidesTheImageTheRuntimePulls(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	variant := map[string]string{"arm64": "v8"}[runtime.GOARCH]
	if variant == "" {
		variant = "v3"
	}
	entry := func(m any, mt types.MediaType, p *v1.Platform) v1.Descriptor {
		ref := reg.put(t, "flops/index", m)
		_, digest, _ := strings.Cut(ref, "@")
		h, err := v1.NewHash(digest)
		require.NoError(t, err)
		bz, _ := json.Marshal(m)
		return v1.Descriptor{MediaType: mt, Size: int64(len(bz)), Digest: h, Platform: p}
	}
	index := func(entries ...v1.Descriptor) string {
		return reg.put(t, "flops/index", v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: entries})
	}
	small := entry(reg.image(make([]byte, 1<<20)), types.OCIManifestSchema1, &v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	bomb := entry(reg.image(tarOfZeros(t, 64<<20, "zstd")), types.OCIManifestSchema1, &v1.Platform{OS: "linux", Architecture: runtime.GOARCH, Variant: variant})
	run := func(id uint64, image string) error { return runImage(e, rec, id, image, 16<<20) }

	err := run(370, index(small, bomb))
	require.ErrorIs(t, err, ErrImageTooLarge)
	require.ErrorContains(t, err, "unpacks to more than the task's disk")
	_, statErr := os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr), "the runtime was never asked to pull or run it")

	// an entry that names no platform may be chosen too
	bare := bomb
	bare.Platform = nil
	require.ErrorIs(t, run(371, index(small, bare)), ErrImageTooLarge)

	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	elsewhere := entry(reg.image(make([]byte, 1<<10)), types.OCIManifestSchema1, &v1.Platform{OS: "linux", Architecture: other})
	err = run(372, index(elsewhere))
	require.ErrorIs(t, err, ErrImage)
	require.ErrorContains(t, err, "has no image for linux/"+runtime.GOARCH)
	nested := entry(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{small}}, types.OCIImageIndex, &v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	err = run(373, index(nested))
	require.ErrorIs(t, err, ErrImage)
	require.ErrorContains(t, err, "holds another index")
	_, statErr = os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr))

	// the small image and one for another architecture: the small one is pulled and runs
	require.NoError(t, run(374, index(elsewhere, small)))
}

// A job names by digest a private image that only the provider's login reaches (its own
// registry's, a digest seen on chain in the provider's own jobs): the check had read it
// with the provider's docker login and passed it to the runtime, which pulls with the same
// logins, so the job ran, and could copy out, the provider's private image. A job's image
// is read anonymously now, and at the registries the operator lists (RegistryLogins,
// e.g. docker.io for its rate limits) with the login only once the registry has shown it
// serves the image without one (a HEAD request): the private image is refused as its
// registry's refusal either way, listed or not, and a public image of a listed registry
// is read with the login.
func TestAttackJobPullsAPrivateImageWithTheProvidersLogin(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	private := reg.put(t, "provider/private", reg.image(tarOfZeros(t, 1<<10, "gzip")))
	public := reg.put(t, "library/public", reg.image(tarOfZeros(t, 2<<10, "gzip")))
	host := strings.TrimPrefix(reg.srv.URL, "http://")
	reg.mu.Lock()
	reg.login = "provider:secret" // the provider's login, which reaches its private repository
	reg.privateRepo = "provider/private"
	reg.mu.Unlock()
	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("provider:secret"))
	require.NoError(t, os.WriteFile(filepath.Join(docker, "config.json"), []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)), 0o600))
	t.Setenv("DOCKER_CONFIG", docker)

	e := newTestExecutor(t, nil)
	err := runImage(e, rec, 395, private, 1<<30)
	require.ErrorIs(t, err, ErrImage)
	require.False(t, errors.Is(err, ErrImageTooLarge))
	require.ErrorContains(t, err, "its registry does not serve it")
	_, statErr := os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr), "the runtime was never asked to pull it")

	listed := newTestExecutor(t, func(o *Options) { o.RegistryLogins = []string{host} })
	err = runImage(listed, rec, 396, private, 1<<30)
	require.ErrorIs(t, err, ErrImage, "its registry listed: the login still does not pass a private image")
	require.ErrorContains(t, err, "its registry does not serve it without a login")
	_, statErr = os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr), "the runtime was never asked to pull it")

	// a public image of the listed registry is read with the login (its rate limits)
	before := reg.authed.Load()
	require.NoError(t, runImage(listed, rec, 397, public, 1<<30))
	require.Greater(t, reg.authed.Load(), before, "read with the login")
	require.NoError(t, runImage(newTestExecutor(t, nil), rec, 398, public, 1<<30), "and anonymously where it is not listed")
}

// A job names an image the provider's runtime holds under that very name without the
// worker having pulled it for a task: the operator's own build (localhost/...) or a
// private image it pulled for itself, whose digest a job of its own put on chain. The
// image ran with no registry read at all, and the job could copy it out. Without
// executor.local_images such an image runs only if the worker pulled it for a task, or if
// its registry serves it without a login (asked afresh); the runtime is never asked to
// run the others.
func TestAttackJobRunsAnImageTheProviderHolds(t *testing.T) {
	rec := installFakeRuntime(t, "podman") // holds every image under its own name
	reg := newManifestRegistry(t)
	private := reg.put(t, "provider/private", reg.image(tarOfZeros(t, 1<<10, "gzip")))
	public := reg.put(t, "library/public", reg.image(tarOfZeros(t, 2<<10, "gzip")))
	reg.mu.Lock()
	reg.login, reg.privateRepo = "provider:secret", "provider/private"
	reg.mu.Unlock()
	build := "localhost/provider-build@sha256:" + strings.Repeat("ab", 32)

	e := newTestExecutor(t, func(o *Options) { o.LocalImages = false })
	for i, c := range []struct{ image, why string }{
		{build, "an image of the provider's own machine runs only where executor.local_images is set"},
		{private, "held here, but its registry does not serve it without a login"},
	} {
		err := runImage(e, rec, uint64(420+i), c.image, 1<<30)
		require.ErrorIs(t, err, ErrImage)
		require.False(t, errors.Is(err, ErrImageTooLarge))
		require.ErrorContains(t, err, c.why)
		_, statErr := os.Stat(filepath.Join(rec, "run.args"))
		require.True(t, os.IsNotExist(statErr), "%s: the runtime was never asked to run it", c.image)
	}
	require.NoError(t, runImage(e, rec, 422, public, 1<<30), "its registry serves it to anyone")

	// one the worker pulled for a task: its check read it then
	require.NoError(t, e.images.save([]cachedImage{{Ref: private, Bytes: 1 << 10, LastUsed: time.Now()}}))
	require.NoError(t, runImage(e, rec, 423, private, 1<<30))

	// executor.local_images: every held image runs, as before
	local := newTestExecutor(t, func(o *Options) { o.LocalImages = true })
	require.NoError(t, runImage(local, rec, 424, build, 1<<30))
}

// A registry sends a provider a gzip bomb in place of a small layer of the pinned image
// (the manifest's digest and size; another provider, or a verification run, gets the
// real layer). Had the check believed the bytes it unpacked, the provider would report
// the image too large to fit, an answer another machine refutes. A layer is read to its
// end whatever it unpacks to, and checked against its digest and size: the image is
// refused with ErrImage, which is not ErrImageTooLarge (it may be this machine's
// network) and which no verification run answers with. So is a layer compressed with
// xz (which docker cannot pull), rather than unpacked with the memory its header asks.
func TestAttackRegistrySendsABombInPlaceOfALayer(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	bomb := tarOfZeros(t, 64<<20, "gzip")
	honest := fakeDigest("the image's own layer")
	reg.serve(honest, bomb)
	m := imageOf()
	m.Layers = []v1.Descriptor{{MediaType: types.OCILayer, Size: int64(len(bomb)), Digest: honest}}
	xz := append([]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, make([]byte, 100)...)
	for i, c := range []struct {
		image string
		why   string
	}{
		{reg.put(t, "flops/swapped", m), "sha256"},
		{reg.put(t, "flops/xz", reg.image(xz)), "compressed with xz"},
	} {
		spec := containerSpec(uint64(360 + i))
		spec.Image, spec.MaxDiskBytes = c.image, 16<<20
		_, err := e.Run(context.Background(), spec, Hooks{})
		require.ErrorIs(t, err, ErrImage)
		require.False(t, errors.Is(err, ErrImageTooLarge), "%v", err)
		require.ErrorContains(t, err, "its registry does not serve it")
		require.ErrorContains(t, err, c.why)
		_, statErr := os.Stat(filepath.Join(rec, "run.args"))
		require.True(t, os.IsNotExist(statErr))
	}

	// a registry that sends more bytes than the manifest lists is not read on
	m.Layers[0].Size = 1000
	spec := containerSpec(362)
	spec.Image, spec.MaxDiskBytes = reg.put(t, "flops/longer", m), 16<<20
	_, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImage)
	require.False(t, errors.Is(err, ErrImageTooLarge), "%v", err)
}

// The image check reads the registry only for an image the runtime does not hold, and
// only under a disk bound; it asks a busy registry again, refuses a manifest the registry
// does not have (ErrImage, not ErrImageTooLarge: it may be this machine's network) and,
// through the inputs' transport, an image on the provider's own network.
func TestImageCheck(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	fits := reg.put(t, "flops/fits", reg.image(make([]byte, 4<<20)))
	run := func(id uint64, image string, disk uint64) error { return runImage(e, rec, id, image, disk) }

	// held by the runtime already: nothing is read
	require.NoError(t, run(310, fits, 1<<20))
	require.Zero(t, reg.hits.Load())
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	// no disk bound: nothing is read
	require.NoError(t, run(311, fits, 0))
	require.Zero(t, reg.hits.Load())
	// within the bound
	require.NoError(t, run(312, fits, 8<<20))
	require.Equal(t, int32(1), reg.hits.Load())
	// a registry busy twice, then answering
	busy := reg.put(t, "flops/busy", reg.image(make([]byte, 3<<20)))
	reg.hits.Store(0)
	reg.failFirst = 2
	require.NoError(t, run(313, busy, 8<<20))
	require.Equal(t, int32(3), reg.hits.Load())
	// a manifest the registry does not have: refused at once
	reg.hits.Store(0)
	reg.failFirst = 0
	_, digest, _ := strings.Cut(fits, "@")
	missing := strings.Replace(fits, digest, "sha256:"+strings.Repeat("ab", 32), 1)
	err := run(314, missing, 8<<20)
	require.ErrorIs(t, err, ErrImage)
	require.False(t, errors.Is(err, ErrImageTooLarge))
	require.ErrorContains(t, err, "its registry does not serve it")
	require.Equal(t, int32(1), reg.hits.Load())
	_, statErr := os.Stat(filepath.Join(rec, "run.args"))
	require.True(t, os.IsNotExist(statErr))

	// the inputs' transport, which keeps jobs off the provider's own network
	reg.hits.Store(0)
	guarded := newTestExecutor(t, func(o *Options) { o.RegistryTransport = InputClient(false).Transport })
	spec := containerSpec(315)
	spec.Image, spec.MaxDiskBytes = fits, 8<<20
	_, err = guarded.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImage)
	require.ErrorContains(t, err, "is not public")
	require.Zero(t, reg.hits.Load())
}

// An image the check measured is not downloaded again for the next task that pulls it
// (the image cache removed it meanwhile), by this executor or the next on the same work
// directory: its digest fixes what it unpacks to. A refusal is remembered as what the
// count had reached: a larger bound measures the image again.
func TestImageCheckRemembersWhatItMeasured(t *testing.T) {
	rec := installFakeRuntime(t, "podman")
	t.Setenv("FAKE_RUNTIME_IMAGE_ABSENT", "1")
	reg := newManifestRegistry(t)
	e := newTestExecutor(t, nil)
	run := func(e *Executor, id uint64, image string, disk uint64) error {
		return runImage(e, rec, id, image, disk)
	}
	fits := reg.put(t, "flops/fits", reg.image(tarOfZeros(t, 1<<20, "gzip")))
	require.NoError(t, run(e, 380, fits, 8<<20))
	reads := reg.hits.Load() + reg.blobHits.Load()
	require.Positive(t, reg.blobHits.Load())
	require.NoError(t, run(e, 381, fits, 8<<20))
	require.NoError(t, run(e, 382, fits, 2<<20), "a smaller bound it fits")
	again := newTestExecutor(t, func(o *Options) { o.WorkDir = e.opts.WorkDir })
	require.NoError(t, run(again, 383, fits, 8<<20))
	require.Equal(t, reads, reg.hits.Load()+reg.blobHits.Load(), "nothing read again")
	require.ErrorIs(t, run(again, 384, fits, 1<<20), ErrImageTooLarge, "a bound it does not fit")
	require.Equal(t, reads, reg.hits.Load()+reg.blobHits.Load())

	bomb := reg.put(t, "flops/bomb", reg.image(tarOfZeros(t, 64<<20, "gzip")))
	require.ErrorIs(t, run(e, 385, bomb, 16<<20), ErrImageTooLarge)
	reads = reg.hits.Load() + reg.blobHits.Load()
	require.ErrorIs(t, run(e, 386, bomb, 16<<20), ErrImageTooLarge)
	require.Equal(t, reads, reg.hits.Load()+reg.blobHits.Load(), "the refusal remembered")
	require.NoError(t, run(e, 387, bomb, 1<<30), "measured again under a bound past what the count reached")
	require.Greater(t, reg.hits.Load()+reg.blobHits.Load(), reads)
	reads = reg.hits.Load() + reg.blobHits.Load()
	require.NoError(t, run(e, 388, bomb, 1<<30))
	require.Equal(t, reads, reg.hits.Load()+reg.blobHits.Load())
}

// On real podman: an image too large for the task's disk, as its registry lists it or as
// its layers unpack, is refused before podman pulls it (podman holds no trace of it
// after), and an image within it is pulled from its registry and runs; the pulled image
// is removed after its task, or kept within the image cache.
func TestImageCheckOnPodman(t *testing.T) {
	local := testimage.Busybox(t)
	// the test image, pushed to a registry of its own (plain HTTP on 127.0.0.1)
	tarPath := filepath.Join(t.TempDir(), "busybox.tar")
	out, err := osexec.Command("podman", "save", "--format", "docker-archive", "-o", tarPath, local).CombinedOutput()
	require.NoError(t, err, "%s", out)
	base, err := tarball.ImageFromPath(tarPath, nil)
	require.NoError(t, err)
	// an image of its own (a label no other has), so that podman holds nothing of it
	// before the pull, and removing it after touches no other test's image
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	cfg, err := base.ConfigFile()
	require.NoError(t, err)
	cfg.Config.Labels = map[string]string{"flops.test": hex.EncodeToString(nonce[:])}
	img, err := mutate.ConfigFile(base, cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	tag, err := name.ParseReference(host + "/flops/busybox:test")
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, img))
	digest, err := img.Digest()
	require.NoError(t, err)
	pinned := host + "/flops/busybox@" + digest.String()
	conf := filepath.Join(t.TempDir(), "registries.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf("[[registry]]\nlocation = %q\ninsecure = true\n", host)), 0o644))
	t.Setenv("CONTAINERS_REGISTRIES_CONF", conf)
	id, err := img.ConfigName()
	require.NoError(t, err)
	t.Cleanup(func() { _ = osexec.Command("podman", "rmi", "-f", id.Hex).Run() })

	m, err := img.Manifest()
	require.NoError(t, err)
	size, unpacked := uint64(m.Config.Size), uint64(m.Config.Size)
	for _, l := range m.Layers {
		size += uint64(l.Size)
	}
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		require.NoError(t, layerDiskBytes(rc, func(n uint64) error { unpacked += n; return nil }))
		rc.Close()
	}
	require.Greater(t, unpacked, size, "busybox's layers are compressed")
	e := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = "podman" })
	spec := Spec{TaskID: 320, JobID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: pinned, MaxDiskBytes: size - 1,
		Command: []string{"/bin/sh", "-c", `echo pulled > "$FLOPS_OUTPUT_DIR/ok"`}}
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImageTooLarge)
	require.ErrorContains(t, err, fmt.Sprintf("is %d bytes as its registry lists it", size))
	require.Error(t, osexec.Command("podman", "image", "exists", pinned).Run(), "podman did not pull it")

	spec.TaskID, spec.MaxDiskBytes = 323, unpacked-1
	_, err = e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImageTooLarge)
	require.ErrorContains(t, err, "unpacks to more than the task's disk")
	require.Error(t, osexec.Command("podman", "image", "exists", pinned).Run(), "podman did not pull it")

	spec.TaskID, spec.MaxDiskBytes = 321, unpacked
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(res.OutputDir, "ok"))
	require.NoError(t, err)
	require.Equal(t, "pulled\n", string(b))
	require.Error(t, osexec.Command("podman", "image", "exists", pinned).Run(), "an image cache of 0 keeps no pulled image")

	// with room in the cache it stays for the next task, which does not pull it again
	cached := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = "podman"; o.ImageCacheBytes = 1 << 30 })
	spec.TaskID = 322
	_, err = cached.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	require.NoError(t, osexec.Command("podman", "image", "exists", pinned).Run())
	recs, err := cached.images.load()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, pinned, recs[0].Ref)
	require.Positive(t, recs[0].Bytes, "its size in podman's storage")
}

// A job names the digest of an image the provider holds, under a repository of the
// job's choosing: podman takes repo@digest for any image it holds with that digest, so
// the job ran the provider's own image (a private build) with no registry serving it under
// that name. Such an image is read from the job's registry and pulled (--pull=always):
// where the registry does not serve it the task fails with ErrImage and the provider's
// image never runs, and the provider's image stays (the image cache removes only what the
// worker pulled fresh).
func TestAttackJobRunsTheProvidersPrivateImage(t *testing.T) {
	local := testimage.Busybox(t) // the provider's "private" image
	_, digest, _ := strings.Cut(local, "@")
	reg := newManifestRegistry(t) // serves nothing
	host := strings.TrimPrefix(reg.srv.URL, "http://")
	conf := filepath.Join(t.TempDir(), "registries.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf("[[registry]]\nlocation = %q\ninsecure = true\n", host)), 0o644))
	t.Setenv("CONTAINERS_REGISTRIES_CONF", conf)
	borrowed := host + "/someone/anything@" + digest
	require.NoError(t, osexec.Command("podman", "image", "inspect", borrowed).Run(), "podman takes the borrowed name for the provider's image")

	e := newTestExecutor(t, func(o *Options) { o.ContainerRuntime = "podman" })
	spec := Spec{TaskID: 330, JobID: 1, Runtime: markettypes.RUNTIME_CONTAINER, Image: borrowed, MaxDiskBytes: 1 << 30,
		Command: []string{"/bin/sh", "-c", `echo ran > "$FLOPS_OUTPUT_DIR/ran"`}}
	res, err := e.Run(context.Background(), spec, Hooks{})
	require.ErrorIs(t, err, ErrImage)
	require.ErrorContains(t, err, "its registry does not serve it")
	_, statErr := os.Stat(filepath.Join(res.OutputDir, "ran"))
	require.True(t, os.IsNotExist(statErr), "the provider's image did not run")

	// without a disk bound nothing is read first: the runtime must pull it, and cannot
	spec.TaskID, spec.MaxDiskBytes = 331, 0
	res, err = e.Run(context.Background(), spec, Hooks{})
	var exit *ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, 125, exit.Code, "the pull fails")
	_, statErr = os.Stat(filepath.Join(res.OutputDir, "ran"))
	require.True(t, os.IsNotExist(statErr), "the provider's image did not run")
	require.NoError(t, osexec.Command("podman", "image", "exists", local).Run(), "the provider's image stays")

	// under its own name the image is the provider's to run, from what it holds
	spec.TaskID, spec.Image = 332, local
	res, err = e.Run(context.Background(), spec, Hooks{})
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(res.OutputDir, "ran"))
	require.NoError(t, osexec.Command("podman", "image", "exists", local).Run())
}

// Image names are read as docker and podman read them: a short name on docker.io, a
// first component with a '.' or ':' the registry; "localhost/..." names the provider's
// own machine and is not read from any registry.
func TestRegistryRef(t *testing.T) {
	const d = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		"busybox" + d:                     "index.docker.io/library/busybox" + d,
		"pytorch/pytorch" + d:             "index.docker.io/pytorch/pytorch" + d,
		"ghcr.io/flopsnet/train" + d:      "ghcr.io/flopsnet/train" + d,
		"registry.example:5000/a/b/c" + d: "registry.example:5000/a/b/c" + d,
	} {
		r, err := registryRef(in)
		require.NoError(t, err, in)
		require.Equal(t, want, r.Name(), in)
	}
	_, err := registryRef("localhost/flops-test-busybox" + d)
	require.ErrorIs(t, err, errOwnMachine)
}
