package executor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// maxImageSizes bounds the images imageSizes remembers (the oldest are forgotten).
const maxImageSizes = 1024

// imageSizes remembers what the image check measured of each image, by its pinned
// digest, so that an image the runtime pulled, removed (the image cache) and needs again
// is not downloaded twice more: a digest fixes the manifests and layers, so what they
// unpack to does not change. Its records (image-sizes.json in the work directory)
// survive restarts.
type imageSizes struct {
	mu   sync.Mutex
	path string
}

// measuredImage is what imageSize found of an image: the size its registry lists, and
// what it unpacks to, in full (complete) or, where the count stopped at a bound, at
// least that.
type measuredImage struct {
	Digest   string `json:"digest"`
	Listed   uint64 `json:"listed"`
	Unpacked uint64 `json:"unpacked"`
	Complete bool   `json:"complete"`
	// Login: the image was read with the provider's login (its registry was one of
	// Options.RegistryLogins), so the record stands for a job only while it still is.
	Login bool `json:"login,omitempty"`
}

func newImageSizes(workDir string) *imageSizes {
	return &imageSizes{path: filepath.Join(workDir, "image-sizes.json")}
}

// pinnedDigest is the digest an image reference is pinned by ("" if none).
func pinnedDigest(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok && strings.HasPrefix(d, "sha256:") {
		return d
	}
	return ""
}

func (s *imageSizes) load() []measuredImage {
	bz, err := os.ReadFile(s.path)
	if err != nil {
		return nil
	}
	var recs []measuredImage
	if json.Unmarshal(bz, &recs) != nil {
		return nil
	}
	return recs
}

// get is what was measured of the image pinned by digest, if anything.
func (s *imageSizes) get(digest string) (measuredImage, bool) {
	if digest == "" {
		return measuredImage{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.load() {
		if r.Digest == digest {
			return r, true
		}
	}
	return measuredImage{}, false
}

// put records a measurement, replacing the digest's earlier one.
func (s *imageSizes) put(m measuredImage) error {
	if m.Digest == "" {
		return errors.New("no digest")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	recs := s.load()
	kept := recs[:0]
	for _, r := range recs {
		if r.Digest != m.Digest {
			kept = append(kept, r)
		}
	}
	kept = append(kept, m)
	if len(kept) > maxImageSizes {
		kept = kept[len(kept)-maxImageSizes:]
	}
	return writeJSONFile(s.path, kept)
}
