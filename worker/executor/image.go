package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// ErrImage: a CONTAINER task's image is refused before the runtime pulls it: its
// registry does not serve its manifest, or the image, as the manifest lists it, is larger
// than the task's disk (Spec.MaxDiskBytes). Either is the job's, as a pull that fails is:
// every worker reads the same manifest (the image is pinned by digest) against the same
// bound (the chain's disk per GPU), so another operator's run of the task fails alike.
var ErrImage = errors.New("container image refused")

// ErrImageTooLarge is the ErrImage of an image larger than the task's disk: the same on
// every machine of the same architecture, so a verification run may answer with it (an
// unreadable registry may be this machine's network).
var ErrImageTooLarge = fmt.Errorf("%w: larger than the task's disk", ErrImage)

// imageCheckTimeout bounds one read of an image's manifest from its registry.
const imageCheckTimeout = 2 * time.Minute

// imageSize is the size of an image as its registry lists it for this machine's
// platform (linux and the worker's architecture): its config and layers, compressed,
// as a pull downloads them. An image index is resolved to the platform's manifest.
// Registries are reached as the runtime reaches them for a pull: the default registry
// (docker.io) for a short name, credentials from the docker and podman login files
// (authn.DefaultKeychain), plain HTTP only for localhost and private addresses.
func imageSize(ctx context.Context, ref string, tr http.RoundTripper) (uint64, error) {
	r, err := registryRef(ref)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, imageCheckTimeout)
	defer cancel()
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
	}
	if tr != nil {
		opts = append(opts, remote.WithTransport(tr))
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		return 0, err
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	total := uint64(max(m.Config.Size, 0))
	for _, l := range m.Layers {
		if l.Size < 0 {
			return 0, fmt.Errorf("layer %s: negative size %d", l.Digest, l.Size)
		}
		total += uint64(l.Size)
	}
	return total, nil
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
// that its registry does not list, or lists larger than the task's disk (0: no bound, and
// no registry read). An image the runtime holds under its own name is not read: it takes
// no more disk (one held only under another name is read and pulled, imageLocal). A registry that fails for a while (a network error, 429 or 5xx) is read again,
// fetchAttempts times in all.
//
// It says whether the runtime must pull the image (pull: it does not hold it under its
// name) and whether the pull brings an image the runtime did not hold at all (fresh: the
// image cache's to remove later).
func (e *Executor) checkImage(ctx context.Context, log *slog.Logger, bin string, spec Spec) (pull, fresh bool, err error) {
	held, named := imageLocal(ctx, bin, spec.Image)
	if named {
		return false, false, nil
	}
	if spec.MaxDiskBytes == 0 {
		return true, !held, nil
	}
	var size uint64
	err = retry(ctx, log, "reading the image's manifest", transientRegistryError, func() (err error) {
		size, err = imageSize(ctx, spec.Image, e.opts.RegistryTransport)
		return err
	}, "image", spec.Image)
	switch {
	case ctx.Err() != nil:
		return false, false, context.Cause(ctx)
	case err != nil:
		return false, false, fmt.Errorf("%w: image %s: its registry does not serve its manifest: %w", ErrImage, spec.Image, err)
	case size > spec.MaxDiskBytes:
		return false, false, fmt.Errorf("%w: image %s is %d bytes as its registry lists it, the task's disk %d bytes", ErrImageTooLarge, spec.Image, size, spec.MaxDiskBytes)
	}
	log.Info("container image checked", "image", spec.Image, "bytes", size)
	return true, !held, nil
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
