package executor

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// inputCacheGrace is how long an input or checkpoint in the cache stays after its last
// use, whatever the budget: a task links or copies what it took from the cache within
// that time, and a download in progress is not in the cache yet (cache/tmp).
const inputCacheGrace = time.Hour

// pruneInputCache removes the cached inputs and checkpoints (cache/sha256) least recently
// used first (their modification time, set at each use) until the rest fit
// Options.InputCacheBytes (0: no bound), sparing those used within inputCacheGrace. A
// running task's inputs are hard links or copies in its own directory: removing the
// cache's name takes nothing from it. The cache had grown with every input any job
// named, for good.
func (e *Executor) pruneInputCache(log *slog.Logger, now time.Time) {
	if e.opts.InputCacheBytes == 0 {
		return
	}
	dir := filepath.Join(e.opts.WorkDir, "cache", "sha256")
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Warn("input cache unreadable", "dir", dir, "err", err)
		return
	}
	type cachedFile struct {
		path  string
		size  uint64
		mtime time.Time
	}
	files := make([]cachedFile, 0, len(entries))
	var total uint64
	for _, de := range entries {
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		files = append(files, cachedFile{filepath.Join(dir, de.Name()), uint64(info.Size()), info.ModTime()})
		total += uint64(info.Size())
	}
	slices.SortFunc(files, func(a, b cachedFile) int { return a.mtime.Compare(b.mtime) })
	for _, f := range files {
		if total <= e.opts.InputCacheBytes || now.Sub(f.mtime) < inputCacheGrace {
			break
		}
		if err := os.Remove(f.path); err != nil && !os.IsNotExist(err) {
			log.Warn("cached input not removed", "path", f.path, "err", err)
			continue
		}
		total -= f.size
		log.Info("cached input removed", "sha256", filepath.Base(f.path), "bytes", f.size, "cache_bytes", total, "budget_bytes", e.opts.InputCacheBytes)
	}
}

// touchCached marks a cache file as used now, for pruneInputCache.
func touchCached(path string, now time.Time) {
	_ = os.Chtimes(path, now, now)
}
