package executor

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// ErrImage: a CONTAINER task's image is refused before the runtime pulls it: its
// registry does not serve it, or the image, as its manifest lists it or as its layers
// unpack, is larger than the task's disk (Spec.MaxDiskBytes). Either is the job's, as a
// pull that fails is: every worker reads the same manifest and layers (the image is
// pinned by digest) against the same bound (the chain's disk per GPU), so another
// operator's run of the task fails alike.
var ErrImage = errors.New("container image refused")

// ErrImageTooLarge is the ErrImage of an image larger than the task's disk: the same on
// every machine of the same architecture, so a verification run may answer with it (an
// unreadable registry may be this machine's network).
var ErrImageTooLarge = fmt.Errorf("%w: larger than the task's disk", ErrImage)

// imageCheckTimeout bounds one read of an image's manifest from its registry.
const imageCheckTimeout = 2 * time.Minute

// imageLayerReads is how many of an image's layers imageSize reads at once.
const imageLayerReads = 3

// maxZstdWindow is the largest zstd window a layer may need to be unpacked: zstd's own
// default limit (2^27 bytes, what the zstd tool decompresses without --long), so that a
// layer cannot make the worker hold the 512 MiB a window may reach.
const maxZstdWindow = 1 << 27

// errUnpackedTooLarge stops the layers' reads once they unpack past the bound.
var errUnpackedTooLarge = errors.New("unpacks past the bound")

// imageSize reads an image from its registry as the runtime's pull would, for this
// machine's platform (linux and the worker's architecture; for an image index, every
// image the runtime might choose, platformManifests, the largest counting), and says
// whether it fits bound. listed is its size as its manifest lists it: its config and
// layers, compressed, as a pull downloads them. If that fits, every layer is downloaded
// and unpacked as the runtime unpacks it into its storage (gzip, zstd, bzip2 or none,
// told by the layer's first bytes as the runtime tells it, not by the media type the
// manifest claims), and unpacked is the config's size and what the layers' entries take
// unpacked, in disk blocks (entryDiskBytes); the reads stop once that passes bound
// (tooLarge). A layer is read to its end, compressed, whatever it unpacks to: its bytes
// are checked against its digest and its listed size, so that a registry that sends one
// machine other bytes than the image's cannot make it refuse an image another machine
// runs.
//
// Registries are reached as the runtime reaches them for a pull: the default registry
// (docker.io) for a short name, plain HTTP only for localhost and private addresses; with
// the credentials of the docker and podman login files (authn.DefaultKeychain) only for a
// registry of logins (whose images checkImage first asks for without a login,
// imagePublic), anonymously elsewhere.
func imageSize(ctx context.Context, ref string, tr http.RoundTripper, logins []string, bound uint64) (listed, unpacked uint64, tooLarge bool, err error) {
	r, err := registryRef(ref)
	if err != nil {
		return 0, 0, false, err
	}
	opts := []remote.Option{remote.WithAuth(authn.Anonymous)}
	if loginAllowed(r, logins) {
		opts = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	}
	if tr != nil {
		opts = append(opts, remote.WithTransport(tr))
	}
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return 0, 0, false, err
	}
	mctx, cancel := context.WithTimeout(ctx, imageCheckTimeout)
	defer cancel()
	manifests, err := platformManifests(mctx, puller, r)
	if err != nil {
		return 0, 0, false, err
	}
	for _, m := range manifests {
		l, u, over, err := measureImage(ctx, puller, r, m, bound)
		if err != nil || over {
			return l, u, over, err
		}
		listed, unpacked = max(listed, l), max(unpacked, u)
	}
	return listed, unpacked, false, nil
}

// imagePublic asks ref's registry for its manifest without a login (a HEAD request, which
// Docker Hub does not count against its pull limits): an error when it serves it only to
// a login.
func imagePublic(ctx context.Context, ref string, tr http.RoundTripper) error {
	r, err := registryRef(ref)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithAuth(authn.Anonymous)}
	if tr != nil {
		opts = append(opts, remote.WithTransport(tr))
	}
	hctx, cancel := context.WithTimeout(ctx, imageCheckTimeout)
	defer cancel()
	_, err = remote.Head(r, append(opts, remote.WithContext(hctx))...)
	return err
}

// loginAllowed says whether r's registry is one of logins (Options.RegistryLogins).
func loginAllowed(r name.Reference, logins []string) bool {
	for _, l := range logins {
		if reg, err := name.NewRegistry(l); err == nil && reg.RegistryStr() == r.Context().RegistryStr() {
			return true
		}
	}
	return false
}

// maxPlatformManifests bounds the manifests of one image index that platformManifests
// takes for this machine's platform.
const maxPlatformManifests = 16

// platformManifests are the image manifests ref may stand for on this machine: its own,
// or, in an image index, every one for linux and the worker's architecture, whatever its
// variant or OS version, and every one that names no platform. The runtimes choose among
// those by rules of their own (a variant the CPU supports before none, the first or the
// best match), which a check of one could read differently: an index whose first amd64
// entry is small and whose amd64/v3 entry unpacks to terabytes would have been checked
// small and pulled large. An index within the index is refused (docker and podman do not
// pull one).
func platformManifests(ctx context.Context, puller *remote.Puller, r name.Reference) ([]*v1.Manifest, error) {
	desc, err := puller.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		return []*v1.Manifest{m}, nil
	}
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []*v1.Manifest
	for _, d := range im.Manifests {
		if d.Platform != nil && (d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH) {
			continue
		}
		if d.MediaType.IsIndex() {
			return nil, fmt.Errorf("its index holds another index (%s) for linux/%s", d.Digest, runtime.GOARCH)
		}
		if len(out) == maxPlatformManifests {
			return nil, fmt.Errorf("its index lists more than %d images for linux/%s", maxPlatformManifests, runtime.GOARCH)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("image %s of its index: %w", d.Digest, err)
		}
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("image %s of its index: %w", d.Digest, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("its index has no image for linux/%s", runtime.GOARCH)
	}
	return out, nil
}

// maxImageLayers bounds the layers of an image: containers/storage's overlay driver
// stacks at most 500 (docker's overlay2, 128), so an image with more runs nowhere, and
// its manifest (up to 100 MiB) could list hundreds of thousands of layers, each a
// request of the check's and the runtime's before the pull failed.
const maxImageLayers = 500

// errTooManyLayers is the ErrImageTooLarge of an image with more than maxImageLayers
// layers: the same on every machine.
var errTooManyLayers = fmt.Errorf("%w: more than %d layers, which no runtime stacks", ErrImageTooLarge, maxImageLayers)

// measureImage is imageSize for one image manifest m of r.
func measureImage(ctx context.Context, puller *remote.Puller, r name.Reference, m *v1.Manifest, bound uint64) (listed, unpacked uint64, tooLarge bool, err error) {
	if len(m.Layers) > maxImageLayers {
		return 0, 0, false, fmt.Errorf("%w (%d)", errTooManyLayers, len(m.Layers))
	}
	if m.Config.Size < 0 {
		return 0, 0, false, fmt.Errorf("config %s: negative size %d", m.Config.Digest, m.Config.Size)
	}
	listed = uint64(m.Config.Size)
	for _, l := range m.Layers {
		if l.Size < 0 {
			return 0, 0, false, fmt.Errorf("layer %s: negative size %d", l.Digest, l.Size)
		}
		listed += uint64(l.Size)
	}
	if listed > bound {
		return listed, 0, true, nil
	}

	var total atomic.Uint64
	total.Store(uint64(m.Config.Size))
	count := &boundedCount{total: &total, bound: bound}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(imageLayerReads)
	for _, l := range m.Layers {
		if count.over() {
			break // what was read already passes the bound
		}
		g.Go(func() error {
			layer, err := puller.Layer(gctx, r.Context().Digest(l.Digest.String()))
			if err != nil {
				return fmt.Errorf("layer %s: %w", l.Digest, err)
			}
			return unpackLayer(layer, l, count)
		})
	}
	if err := g.Wait(); err != nil {
		return listed, 0, false, err
	}
	return listed, total.Load(), count.over(), nil
}

// boundedCount adds up what the layers take, from any number of goroutines, and refuses
// more once the count passes bound.
type boundedCount struct {
	total *atomic.Uint64
	bound uint64
}

func (c *boundedCount) add(n uint64) error {
	if c.total.Add(n) > c.bound {
		return errUnpackedTooLarge
	}
	return nil
}

func (c *boundedCount) over() bool { return c.total.Load() > c.bound }

// diskBlock is the unit entryDiskBytes counts in.
const diskBlock = 4096

// entryDiskBytes is what one entry of a layer takes once unpacked, counted in 4 KiB
// blocks as the task's own disk measure counts (disk.go, as du does): a regular file its
// size in whole blocks, at least one, and anything else (a directory, a link, a device, a
// whiteout) one. A tar stream holds a one-byte file in 1 KiB and an empty one in 512
// bytes: counted by the stream alone, a layer of a million tiny files took four times
// the disk it was held to, and its inodes besides.
func entryDiskBytes(h *tar.Header) uint64 {
	if h.Typeflag != tar.TypeReg || h.Size <= diskBlock {
		return diskBlock
	}
	return (uint64(h.Size) + diskBlock - 1) / diskBlock * diskBlock
}

// unpackLayer downloads one layer, adds up what its entries take once unpacked
// (entryDiskBytes) into count as far as count takes them, and reads the rest of its
// bytes: they must be d's size and digest (the digest is checked at the end of the
// download).
func unpackLayer(layer v1.Layer, d v1.Descriptor, count *boundedCount) error {
	rc, err := layer.Compressed()
	if err != nil {
		return fmt.Errorf("layer %s: %w", d.Digest, err)
	}
	defer rc.Close()
	body := &io.LimitedReader{R: rc, N: d.Size + 1} // a registry that sends more than listed is not read on
	br := bufio.NewReaderSize(body, 64<<10)
	unpack, err := layerReader(br)
	if err == nil {
		err = layerDiskBytes(unpack, count.add)
		unpack.Close()
	}
	if err != nil && !errors.Is(err, errUnpackedTooLarge) {
		return fmt.Errorf("layer %s: unpacking: %w", d.Digest, err)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return fmt.Errorf("layer %s: %w", d.Digest, err)
	}
	if read := d.Size + 1 - body.N; read != d.Size {
		return fmt.Errorf("layer %s: the registry sent %d bytes or more where the manifest lists %d", d.Digest, read, d.Size)
	}
	return nil
}

// layerDiskBytes reads an unpacked layer's tar stream to its end, or until add refuses,
// passing add what each entry takes (entryDiskBytes).
func layerDiskBytes(r io.Reader, add func(uint64) error) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := add(entryDiskBytes(h)); err != nil {
			return err
		}
	}
}

// layerReader unpacks a layer as podman's and docker's pulls do: the compression told
// by its first bytes (containers/image DetectCompressionFormat), the bytes as they are
// when they start with no compression's magic. xz, which podman reads but the OCI image
// spec and docker do not, is refused rather than unpacked: its decoder allocates the
// dictionary a layer's header asks for, up to gigabytes.
func layerReader(br *bufio.Reader) (io.ReadCloser, error) {
	magic, err := br.Peek(6)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		return gzip.NewReader(br)
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, err
		}
		return z.IOReadCloser(), nil
	case bytes.HasPrefix(magic, []byte("BZh")):
		return io.NopCloser(bzip2.NewReader(br)), nil
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return nil, errors.New("compressed with xz, which the OCI image spec does not define for layers")
	}
	return io.NopCloser(br), nil
}

// errOwnMachine is an image named on "localhost", which docker and podman read from a
// registry on the provider's own machine: nothing there is for a job to name unless the
// runtime already holds it.
var errOwnMachine = errors.New(`names a registry on the provider's own machine ("localhost/"), which holds no such image`)

// registryRef parses an image reference as the runtime reads it: a short name on
// docker.io (library/ for one without a path), a first component with a '.' or ':' the
// registry. "localhost/..." is refused (errOwnMachine): the runtimes read it from this
// machine, where go-containerregistry would read docker.io.
func registryRef(ref string) (name.Reference, error) {
	if first, _, ok := strings.Cut(ref, "/"); ok && strings.EqualFold(first, "localhost") {
		return nil, errOwnMachine
	}
	return name.ParseReference(ref)
}

// imageLocal says whether the runtime already holds ref's content (held) and whether it
// holds it under ref's own name (named: nothing to pull). podman takes repo@digest for any
// image it holds with that digest, whatever its name: a job that named another repository
// with the digest of an image the provider holds (a private build of its own) would have
// run that image without any registry vouching for it under the job's name. Such an
// image is read from the job's registry and pulled (--pull=always); being held, it is
// not the image cache's to remove.
func imageLocal(ctx context.Context, bin, ref string) (held, named bool) {
	want, err := name.ParseReference(ref)
	if err != nil {
		return false, false
	}
	ictx, cancel := context.WithTimeout(ctx, containerStopTimeout)
	defer cancel()
	out, err := exec.CommandContext(ictx, bin, "image", "inspect", "--format", "{{json .RepoDigests}}", ref).Output()
	if err != nil {
		return false, false
	}
	var names []string
	if json.Unmarshal(out, &names) != nil {
		return true, false
	}
	for _, n := range names {
		if have, err := name.ParseReference(n); err == nil && have.Name() == want.Name() {
			return true, true
		}
	}
	return true, false
}

// checkImage refuses a CONTAINER task's image that the runtime would have to pull and
// that its registry does not serve, or that is larger than the task's disk as its manifest
// lists it or as its layers unpack (0: no bound, and no registry read; imageSize). The
// runtime unpacks a pull into its own storage, outside the task's directories that the
// disk bound watches: a layer of a few megabytes can unpack to terabytes (a gzip stream
// holds up to 1,032 bytes a byte, zstd far more), and the listed size alone let such an
// image fill the provider's disk. So an image pulled fresh under a bound is downloaded
// twice, once here and once by the runtime, unless an earlier check measured the same
// digest (imageSizes: what it unpacks to is known, in full or past a bound). An image the
// runtime holds under its own name
// is not read: it takes no more disk (one held only under another name is read and
// pulled, imageLocal). A registry that fails for a while (a network error, 429 or 5xx)
// is read again, fetchAttempts times in all.
//
// It says whether the runtime must pull the image (pull: it does not hold it under its
// name) and whether the pull brings an image the runtime did not hold at all (fresh: the
// image cache's to remove later).
func (e *Executor) checkImage(ctx context.Context, log *slog.Logger, bin string, spec Spec) (pull, fresh bool, err error) {
	held, named := imageLocal(ctx, bin, spec.Image)
	if named {
		return false, false, e.heldImageAllowed(ctx, log, spec.Image)
	}
	if spec.MaxDiskBytes == 0 {
		return true, !held, nil
	}
	var listed, unpacked uint64
	var tooLarge bool
	digest := pinnedDigest(spec.Image)
	login := false
	if r, err := registryRef(spec.Image); err == nil {
		login = loginAllowed(r, e.opts.RegistryLogins)
	}
	if login {
		// the login reads the image (its registry's rate limits), but the image must be
		// one its registry serves to anyone: the login may reach the provider's private
		// repositories, which the runtime's pull, with the same login, would run
		if err := e.requirePublic(ctx, log, spec.Image, "its registry does not serve it without a login"); err != nil {
			return false, false, err
		}
	}
	if m, ok := e.sizes.get(digest); ok && (!m.Login || login) && (m.Complete || m.Listed > spec.MaxDiskBytes || m.Unpacked > spec.MaxDiskBytes) {
		// measured before: the digest fixes what it unpacks to
		listed, unpacked = m.Listed, m.Unpacked
		tooLarge = m.Listed > spec.MaxDiskBytes || m.Unpacked > spec.MaxDiskBytes
		log.Debug("container image measured before", "image", spec.Image, "bytes", listed, "unpacked_bytes", unpacked, "complete", m.Complete)
	} else {
		err = retry(ctx, log, "reading the image", transientRegistryError, func() (err error) {
			listed, unpacked, tooLarge, err = imageSize(ctx, spec.Image, e.opts.RegistryTransport, e.opts.RegistryLogins, spec.MaxDiskBytes)
			return err
		}, "image", spec.Image)
		if err == nil && digest != "" {
			if perr := e.sizes.put(measuredImage{Digest: digest, Listed: listed, Unpacked: unpacked, Complete: !tooLarge, Login: login}); perr != nil {
				log.Warn("image measurement not recorded", "path", e.sizes.path, "err", perr)
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		return false, false, context.Cause(ctx)
	case errors.Is(err, ErrImageTooLarge):
		return false, false, fmt.Errorf("image %s: %w", spec.Image, err)
	case err != nil:
		return false, false, fmt.Errorf("%w: image %s: its registry does not serve it: %w", ErrImage, spec.Image, err)
	case tooLarge && listed > spec.MaxDiskBytes:
		return false, false, fmt.Errorf("%w: image %s is %d bytes as its registry lists it, the task's disk %d bytes", ErrImageTooLarge, spec.Image, listed, spec.MaxDiskBytes)
	case tooLarge:
		return false, false, fmt.Errorf("%w: image %s (%d bytes as its registry lists it) unpacks to more than the task's disk, %d bytes", ErrImageTooLarge, spec.Image, listed, spec.MaxDiskBytes)
	}
	log.Info("container image checked", "image", spec.Image, "bytes", listed, "unpacked_bytes", unpacked)
	return true, !held, nil
}

// heldImageAllowed refuses an image the runtime holds under the job's name that the
// worker did not pull for a task and that its registry does not serve without a login:
// the operator's own build (localhost/, no registry at all) or private pull, which a job
// naming it by a digest seen on chain ran and could copy out. Options.LocalImages lets
// every held image run.
func (e *Executor) heldImageAllowed(ctx context.Context, log *slog.Logger, ref string) error {
	if e.opts.LocalImages || e.images.pulled(ref) {
		return nil
	}
	if _, err := registryRef(ref); errors.Is(err, errOwnMachine) {
		return fmt.Errorf("%w: image %s: an image of the provider's own machine runs only where executor.local_images is set", ErrImage, ref)
	}
	return e.requirePublic(ctx, log, ref, "held here, but its registry does not serve it without a login")
}

// requirePublic refuses ref with ErrImage (why) unless its registry serves it without a
// login (imagePublic, asked again while the registry is busy or unreachable).
func (e *Executor) requirePublic(ctx context.Context, log *slog.Logger, ref, why string) error {
	err := retry(ctx, log, "asking the registry for the image without a login", transientRegistryError, func() error {
		return imagePublic(ctx, ref, e.opts.RegistryTransport)
	}, "image", ref)
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil:
		return fmt.Errorf("%w: image %s: %s: %w", ErrImage, ref, why, err)
	}
	return nil
}

// transientRegistryError: a registry's answer worth asking again (429, 5xx), or no
// answer at all.
func transientRegistryError(err error) bool {
	if errors.Is(err, ErrInputFetch) {
		return false // an address the inputs' transport refuses (executor.private_inputs)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode == http.StatusTooManyRequests || te.StatusCode >= 500
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}
