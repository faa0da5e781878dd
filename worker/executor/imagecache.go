package executor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// imageCache keeps the images the worker pulled for CONTAINER tasks within
// Options.ImageCacheBytes, removing the least recently used first once a task ends. The
// runtime keeps every image it pulls, so without it each job's image stayed on the
// provider's disk for good. Images the worker did not pull (the operator's own, or held
// before the task) are never removed; nor is an image a task of this worker runs, and the
// runtime refuses to remove one a container uses (a task adopted after a restart). Its
// records (images.json in the work directory) survive restarts.
type imageCache struct {
	mu     sync.Mutex
	path   string
	budget uint64
	inUse  map[string]int
}

// cachedImage is an image the worker pulled: its size in the runtime's storage and when
// a task last used it.
type cachedImage struct {
	Ref      string    `json:"ref"`
	Bytes    uint64    `json:"bytes"`
	LastUsed time.Time `json:"last_used"`
}

func newImageCache(workDir string, budget uint64) *imageCache {
	return &imageCache{path: filepath.Join(workDir, "images.json"), budget: budget, inUse: map[string]int{}}
}

func (c *imageCache) load() ([]cachedImage, error) {
	bz, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var imgs []cachedImage
	return imgs, json.Unmarshal(bz, &imgs)
}

func (c *imageCache) save(imgs []cachedImage) error { return writeJSONFile(c.path, imgs) }

// writeJSONFile writes v as JSON to path through a temporary file, readable by the
// worker only, so that a reader finds the old records or the new, never part of them.
func writeJSONFile(path string, v any) error {
	bz, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, bz, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pulled says whether the worker pulled ref for a task (a record of the cache's): its
// check read it from its registry then.
func (c *imageCache) pulled(ref string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	imgs, err := c.load()
	return err == nil && slices.ContainsFunc(imgs, func(im cachedImage) bool { return im.Ref == ref })
}

// acquire marks ref as used by a task of this worker until release.
func (c *imageCache) acquire(ref string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inUse[ref]++
}

// release ends a task's use of ref: an image its pull brought fresh (fresh: the runtime
// held no image of that digest), or one pulled for an earlier task, is recorded as used now, with its size in the runtime's storage; then the images
// past the budget are removed, least recently used first. Errors are logged: a task's
// result never depends on them.
func (c *imageCache) release(ctx context.Context, log *slog.Logger, bin, ref string, fresh bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inUse[ref]--; c.inUse[ref] <= 0 {
		delete(c.inUse, ref)
	}
	imgs, err := c.load()
	if err != nil {
		log.Warn("image cache records unreadable; starting them anew", "path", c.path, "err", err)
		imgs = nil
	}
	i := slices.IndexFunc(imgs, func(im cachedImage) bool { return im.Ref == ref })
	switch {
	case i >= 0:
		imgs[i].LastUsed = now
	case fresh:
		if size, ok := imageStorageSize(ctx, bin, ref); ok {
			imgs = append(imgs, cachedImage{Ref: ref, Bytes: size, LastUsed: now})
		} else {
			imgs = append(imgs, cachedImage{Ref: ref, LastUsed: now}) // gone already, or unreadable: removed below
		}
	}
	imgs = c.evict(ctx, log, bin, imgs)
	if err := c.save(imgs); err != nil {
		log.Warn("image cache records not saved", "path", c.path, "err", err)
	}
}

// evict removes images, least recently used first, until the rest fit the budget, and
// returns the records of those kept.
func (c *imageCache) evict(ctx context.Context, log *slog.Logger, bin string, imgs []cachedImage) []cachedImage {
	var total uint64
	for _, im := range imgs {
		total += im.Bytes
	}
	slices.SortStableFunc(imgs, func(a, b cachedImage) int { return a.LastUsed.Compare(b.LastUsed) })
	kept := imgs[:0]
	for _, im := range imgs {
		if (total <= c.budget && im.Bytes > 0) || c.inUse[im.Ref] > 0 {
			kept = append(kept, im)
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStopTimeout)
		out, err := exec.CommandContext(rctx, bin, "rmi", im.Ref).CombinedOutput()
		cancel()
		if err != nil {
			if held, _ := imageLocal(ctx, bin, im.Ref); held {
				// in use by a container (a task adopted after a restart), or the runtime's
				// error: kept, and tried again after the next task
				log.Warn("pulled image not removed", "image", im.Ref, "err", err, "output", strings.TrimSpace(string(out)))
				kept = append(kept, im)
				continue
			}
		}
		total -= im.Bytes
		log.Info("pulled image removed", "image", im.Ref, "bytes", im.Bytes, "cache_bytes", total, "budget_bytes", c.budget)
	}
	return kept
}

// imageStorageSize is ref's size in the runtime's storage, if the runtime holds it.
func imageStorageSize(ctx context.Context, bin, ref string) (uint64, bool) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStopTimeout)
	defer cancel()
	out, err := exec.CommandContext(ictx, bin, "image", "inspect", "--format", "{{.Size}}", ref).Output()
	if err != nil {
		return 0, false
	}
	size, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 64)
	return size, err == nil
}
