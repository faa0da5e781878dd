package executor

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// The BUILTIN checksum workload (docs/workloads.md section 4).
const (
	// MaxChecksumBytes is the largest builtin.checksum_bytes the chain accepts.
	MaxChecksumBytes = 1 << 40
	// ChecksumFile is the output of a checksum task: the digest as 64 lowercase hex
	// characters and a newline.
	ChecksumFile = "checksum.sha256"

	checksumDomain       = "flops/checksum/v1"
	checksumStreamDomain = "flops/checksum/stream"
	// checksumSegment is the stream bytes one goroutine generates at a time (a multiple
	// of the 32-byte block).
	checksumSegment = 1 << 20
)

// runChecksum computes the checksum digest
//
//	sha256("flops/checksum/v1" || u64(job) || u32(shard) || u64(checksum_bytes) ||
//	       u32(input count) || for each input in job order: u64(size) || content ||
//	       the first checksum_bytes bytes of the stream of (job, shard))
//
// (integers big-endian) and writes it to ChecksumFile; the root is the manifest root of
// the output directory, so every replica of the shard commits the same root. Memory is
// 2 MiB per worker whatever checksum_bytes is.
func (e *Executor) runChecksum(ctx context.Context, log *slog.Logger, spec Spec, d taskDirs) (Result, error) {
	res := Result{OutputDir: d.output}
	h := sha256.New()
	h.Write([]byte(checksumDomain))
	var hdr [24]byte
	binary.BigEndian.PutUint64(hdr[0:8], spec.JobID)
	binary.BigEndian.PutUint32(hdr[8:12], spec.Index)
	binary.BigEndian.PutUint64(hdr[12:20], spec.Builtin.ChecksumBytes)
	binary.BigEndian.PutUint32(hdr[20:24], uint32(len(spec.Inputs)))
	h.Write(hdr[:])
	for i := range spec.Inputs {
		p := inputPath(spec.Inputs, i)
		if err := hashInput(ctx, h, filepath.Join(d.work, filepath.FromSlash(p))); err != nil {
			return res, fmt.Errorf("checksum of input %d (%s): %w", i, p, err)
		}
	}
	if err := writeChecksumStream(ctx, h, spec.JobID, spec.Index, spec.Builtin.ChecksumBytes, e.opts.Workers); err != nil {
		return res, err
	}
	digest := hex.EncodeToString(h.Sum(nil))
	if err := os.WriteFile(filepath.Join(d.output, ChecksumFile), []byte(digest+"\n"), 0o644); err != nil {
		return res, fmt.Errorf("checksum output: %w", err)
	}
	files, logs, err := HashOutputs(ctx, d.output, log)
	if err != nil {
		return res, err
	}
	res.Files, res.Logs = files, logs
	if res.Root, err = ManifestRoot(files); err != nil {
		return res, err
	}
	return res, nil
}

// hashInput writes u64(size) || content of one input file.
func hashInput(ctx context.Context, h hash.Hash, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(st.Size()))
	h.Write(size[:])
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("read %d bytes of a %d-byte file", n, st.Size())
	}
	return nil
}

// fillBlockPrefix writes the fixed part of a stream block's message: block b of the
// stream of (job, shard) is sha256("flops/checksum/stream" || u64(job) || u32(shard) ||
// u64(b)), and byte x of the stream is byte x mod 32 of block x / 32.
func fillBlockPrefix(msg *[len(checksumStreamDomain) + 20]byte, job uint64, shard uint32) {
	n := copy(msg[:], checksumStreamDomain)
	binary.BigEndian.PutUint64(msg[n:], job)
	binary.BigEndian.PutUint32(msg[n+8:], shard)
}

// fillStream writes the stream bytes [off, off+len(buf)) into buf; off is a multiple of
// 32.
func fillStream(buf []byte, job uint64, shard uint32, off uint64) {
	var msg [len(checksumStreamDomain) + 20]byte
	fillBlockPrefix(&msg, job, shard)
	ctr := msg[len(checksumStreamDomain)+12:]
	b := off / 32
	for x := 0; x < len(buf); x += 32 {
		binary.BigEndian.PutUint64(ctr, b)
		block := sha256.Sum256(msg[:])
		copy(buf[x:], block[:])
		b++
	}
}

// writeChecksumStream writes the first total bytes of the stream of (job, shard) to w.
// Workers goroutines generate the next group of segments while w consumes the current
// one; ctx is checked between groups.
func writeChecksumStream(ctx context.Context, w io.Writer, job uint64, shard uint32, total uint64, workers int) error {
	workers = max(workers, 1)
	group := uint64(workers) * checksumSegment
	size := min(group, total)
	bufs := [2][]byte{make([]byte, size), make([]byte, size)}
	fill := func(buf []byte, off uint64) *sync.WaitGroup {
		var wg sync.WaitGroup
		for lo := 0; lo < len(buf); lo += checksumSegment {
			hi := min(lo+checksumSegment, len(buf))
			wg.Go(func() { fillStream(buf[lo:hi], job, shard, off+uint64(lo)) })
		}
		return &wg
	}
	cur := 0
	pending := fill(bufs[cur][:size], 0)
	defer func() {
		if pending != nil {
			pending.Wait()
		}
	}()
	for off := uint64(0); off < total; {
		n := min(group, total-off)
		pending.Wait()
		pending = nil
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if next := off + n; next < total {
			pending = fill(bufs[1-cur][:min(group, total-next)], next)
		}
		if _, err := w.Write(bufs[cur][:n]); err != nil {
			return err
		}
		off += n
		cur = 1 - cur
	}
	return nil
}
