// gpu-solver: a CUDA solver of the flops PoCP challenge, speaking the external-solver
// protocol of docs/pocp.md section 9.
//
//   stdin:  one JSON line {"version":1,"seed":"<64 hex>","key":"<16 hex>","n":N,"r":R}, or
//           version 2 with "row_from":F,"row_to":T (multiples of 256): a band of S's rows,
//           so that the worker spreads one challenge over a node's GPUs
//   stdout: S = sum_{t<R} A_t * B_t, N*N int32 (version 2: rows F..T-1, (T-F)*N), row-major,
//           little-endian, nothing else
//   stderr: diagnostics; exit status 0 only after the whole answer was written
//
// The matrices are drawn on the GPU exactly as docs/pocp.md section 2 and
// x/gfl/pocp/challenge.go do: word(ctr) = SplitMix64's finaliser of key ^ ctr*golden,
// entry e of a word = TABLE[(word >> 4e) & 15]. A_t is stored row-major (A[i][l] at
// i*n + l) and B_t transposed (Bt[j][l] = B_t[l][j] at j*n + l): both are then exactly the
// PRNG's word order, 16 int8 entries per word, and S[i][j] is the dot product of row i of
// A and row j of Bt. The product is exact integer arithmetic: int8 inputs, int32
// accumulators (|S_ij| <= 4*n*r < 2^24), with __dp4a (4 int8 products per instruction) in
// a shared-memory tiled kernel, or, built with CUBLAS=1 and run with --cublas, cuBLAS's
// int8 GEMM with int32 compute (the "TN" layout the tensor cores want).
//
// Built with -DPOCP_CPU_SHIM by a C++ compiler instead of nvcc, the same source runs on
// the CPU through cpu_shim.h (one std::thread per CUDA thread): slow, for checking the
// kernels' logic on machines without a GPU (make cpu; go test ./tools/gpu-solver/...).

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef POCP_CPU_SHIM
#include "cpu_shim.h"
#else
#include <cuda_runtime.h>
#define LAUNCH(kernel, grid, block, ...) kernel<<<(grid), (block)>>>(__VA_ARGS__)
#endif

#ifdef POCP_WITH_CUBLAS
#include <cublas_v2.h>
#endif

namespace {

// ---- Limits of docs/pocp.md section 1 ----------------------------------------------

constexpr uint32_t kMinN = 256;
constexpr uint32_t kMaxN = 65536;
constexpr uint32_t kChunkEntries = 256;
constexpr uint64_t kExactLimit = 1ull << 24;
constexpr int kProtocolVersion = 2;  // and 1: version 2 adds a band of rows

// Exit statuses: 0 answered, 1 GPU or I/O failure, 2 bad request or usage.
constexpr int kExitFailure = 1;
constexpr int kExitBadRequest = 2;

[[noreturn]] void die(int status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("gpu-solver: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
  std::exit(status);
}

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      die(kExitFailure, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                      \
          cudaGetErrorString(err_));                                                     \
    }                                                                                    \
  } while (0)

// ---- SHA-256 (FIPS 180-4), for the PRNG key ------------------------------------------

struct Sha256 {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t block[64];
  size_t fill = 0;
  uint64_t bytes = 0;

  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void compress() {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
      w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
             uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
    }
    for (int i = 16; i < 64; i++) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }

  void update(const uint8_t* p, size_t len) {
    bytes += len;
    while (len > 0) {
      size_t k = 64 - fill < len ? 64 - fill : len;
      std::memcpy(block + fill, p, k);
      fill += k;
      p += k;
      len -= k;
      if (fill == 64) {
        compress();
        fill = 0;
      }
    }
  }

  void finish(uint8_t out[32]) {
    uint64_t bits = bytes * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (fill != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = uint8_t(bits >> (56 - 8 * i));
    update(len, 8);
    for (int i = 0; i < 8; i++) {
      out[4 * i] = uint8_t(h[i] >> 24);
      out[4 * i + 1] = uint8_t(h[i] >> 16);
      out[4 * i + 2] = uint8_t(h[i] >> 8);
      out[4 * i + 3] = uint8_t(h[i]);
    }
  }
};

// prngKey is little_endian_uint64(sha256("flops/pocp/key" || seed)[0:8]).
uint64_t prngKey(const uint8_t seed[32]) {
  static const char domain[] = "flops/pocp/key";
  Sha256 s;
  s.update(reinterpret_cast<const uint8_t*>(domain), sizeof(domain) - 1);
  s.update(seed, 32);
  uint8_t sum[32];
  s.finish(sum);
  uint64_t key = 0;
  for (int i = 7; i >= 0; i--) key = key << 8 | sum[i];
  return key;
}

// ---- The request -----------------------------------------------------------------------

struct Request {
  int version = -1;
  uint8_t seed[32];
  bool hasKey = false;
  uint64_t key = 0;
  uint64_t n = 0, r = 0;
  // rowFrom, rowTo: the band of S's rows to answer (version 2); all of them in version 1.
  uint64_t rowFrom = 0, rowTo = 0;
};

// field returns the raw value of "name" in a flat JSON object: a string's contents
// without quotes, or a number's digits; "" when absent. The worker's encoder writes no
// escapes in these fields.
std::string field(const std::string& json, const char* name) {
  std::string pat = std::string("\"") + name + "\"";
  size_t p = json.find(pat);
  if (p == std::string::npos) return "";
  p += pat.size();
  while (p < json.size() && (json[p] == ' ' || json[p] == '\t' || json[p] == '\r' || json[p] == '\n')) p++;
  if (p >= json.size() || json[p] != ':') return "";
  p++;
  while (p < json.size() && (json[p] == ' ' || json[p] == '\t' || json[p] == '\r' || json[p] == '\n')) p++;
  if (p < json.size() && json[p] == '"') {
    size_t end = json.find('"', p + 1);
    if (end == std::string::npos) return "";
    return json.substr(p + 1, end - p - 1);
  }
  size_t end = p;
  while (end < json.size() && json[end] >= '0' && json[end] <= '9') end++;
  return json.substr(p, end - p);
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool parseUint(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 12) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

Request readRequest() {
  std::string line;
  int ch;
  while ((ch = std::getchar()) != EOF && ch != '\n') {
    line.push_back(char(ch));
    if (line.size() > 4096) die(kExitBadRequest, "request line longer than 4096 bytes");
  }
  if (line.empty()) die(kExitBadRequest, "no request on standard input");

  Request req;
  uint64_t version;
  if (!parseUint(field(line, "version"), &version)) die(kExitBadRequest, "request without a version: %s", line.c_str());
  req.version = int(version);
  if (req.version != 1 && req.version != kProtocolVersion) {
    die(kExitBadRequest, "protocol version %d is not supported (this solver speaks 1 and %d)", req.version, kProtocolVersion);
  }
  std::string seed = field(line, "seed");
  if (seed.size() != 64) die(kExitBadRequest, "seed must be 64 hex characters: %s", line.c_str());
  for (int i = 0; i < 32; i++) {
    int hi = hexDigit(seed[2 * i]), lo = hexDigit(seed[2 * i + 1]);
    if (hi < 0 || lo < 0) die(kExitBadRequest, "seed is not hex: %s", seed.c_str());
    req.seed[i] = uint8_t(hi << 4 | lo);
  }
  std::string key = field(line, "key");
  if (!key.empty()) {
    if (key.size() != 16) die(kExitBadRequest, "key must be 16 hex digits: %s", key.c_str());
    for (char c : key) {
      int d = hexDigit(c);
      if (d < 0) die(kExitBadRequest, "key is not hex: %s", key.c_str());
      req.key = req.key << 4 | uint64_t(d);
    }
    req.hasKey = true;
  }
  if (!parseUint(field(line, "n"), &req.n) || !parseUint(field(line, "r"), &req.r)) {
    die(kExitBadRequest, "request without n or r: %s", line.c_str());
  }
  if (req.n < kMinN || req.n > kMaxN || req.n % kChunkEntries != 0) {
    die(kExitBadRequest, "n = %llu is not a multiple of 256 in [256, 65536]", (unsigned long long)req.n);
  }
  if (req.r < 1 || 4 * req.n * req.r >= kExactLimit) {
    die(kExitBadRequest, "r = %llu: need r >= 1 and 4*n*r < 2^24", (unsigned long long)req.r);
  }
  req.rowTo = req.n;
  if (req.version >= 2) {
    if (!parseUint(field(line, "row_from"), &req.rowFrom) || !parseUint(field(line, "row_to"), &req.rowTo)) {
      die(kExitBadRequest, "a version 2 request needs row_from and row_to: %s", line.c_str());
    }
    if (req.rowFrom >= req.rowTo || req.rowTo > req.n || req.rowFrom % kChunkEntries != 0 || req.rowTo % kChunkEntries != 0) {
      die(kExitBadRequest, "rows [%llu, %llu): need multiples of 256 with row_from < row_to <= n",
          (unsigned long long)req.rowFrom, (unsigned long long)req.rowTo);
    }
  }
  return req;
}

}  // namespace

// ---- Kernels (at file scope: nvcc names kernels by their linkage) ------------------------

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kMix1 = 0xBF58476D1CE4E5B9ull;
constexpr uint64_t kMix2 = 0x94D049BB133111EBull;

// decodeNibble is TABLE[v] = {-2,-2,-2,-1,-1,-1,0,0,0,0,1,1,1,2,2,2}[v] for v < 16, in its
// closed form ((5v+2) >> 4) - 2 (x/gfl/pocp's decode).
__host__ __device__ __forceinline__ int decodeNibble(uint32_t v) {
  return int((5 * v + 2) >> 4) - 2;
}

__host__ __device__ __forceinline__ uint64_t prngWord(uint64_t key, uint64_t ctr) {
  uint64_t z = key ^ (ctr * kGolden);
  z = (z ^ (z >> 30)) * kMix1;
  z = (z ^ (z >> 27)) * kMix2;
  return z ^ (z >> 31);
}

// generate draws one n x n matrix of round t: matrix m = 0 is A_t by rows, m = 1 is B_t by
// columns (stored as Bt). One thread per word: word w (0 <= w < n*n/16) is line w / (n/16),
// block w % (n/16), so its counter ((t*2 + m)*n + line)*(n/16) + block is
// (t*2 + m)*(n*n/16) + w, and its 16 entries are bytes 16w .. 16w+15 of out, entry e (the
// nibble at bits 4e) at byte 16w + e.
__global__ void generate(uint64_t key, uint64_t base, uint64_t words, int8_t* out) {
  uint64_t w = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (w >= words) return;
  uint64_t z = prngWord(key, base + w);
  uint32_t packed[4];
  for (int q = 0; q < 4; q++) {
    uint32_t v = 0;
    for (int b = 0; b < 4; b++) {
      int e = 4 * q + b;
      uint32_t entry = uint32_t(decodeNibble(uint32_t(z >> (4 * e)) & 15u)) & 0xFFu;
      v |= entry << (8 * b);  // little-endian: entry e at byte 16w + e
    }
    packed[q] = v;
  }
  uint4* dst = reinterpret_cast<uint4*>(out) + w;  // 16-byte aligned: cudaMalloc is 256
  *dst = make_uint4(packed[0], packed[1], packed[2], packed[3]);
}

// The dp4a product kernel: a block of 16 x 16 threads computes a 64 x 64 tile of S,
// thread (tx, ty) the 16 entries (by*64 + ty + 16*ii, bx*64 + tx + 16*jj), ii, jj < 4
// (strided, so that a warp's shared-memory reads of Bt hit 16 distinct banks). The l axis
// is walked 64 bytes (16 packed words) at a time through shared memory; a row of the
// shared tiles is padded to 17 words.
constexpr int kTile = 64;               // rows and columns of S per block
constexpr int kTileK = 64;              // bytes of l per step
constexpr int kTileWords = kTileK / 4;  // 16
constexpr int kStride = kTileWords + 1; // 17: padding against bank conflicts

__global__ void multiplyAccumulate(const int8_t* a, const int8_t* bt, int32_t* s, uint32_t n) {
  __shared__ int sa[kTile * kStride];
  __shared__ int sb[kTile * kStride];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * 16 + tx;  // 0..255
  const uint64_t row0 = uint64_t(blockIdx.y) * kTile;
  const uint64_t col0 = uint64_t(blockIdx.x) * kTile;
  // Loading: thread tid copies 16 bytes (4 words) of line tid/4, bytes (tid%4)*16 .. +15
  // of the step, for A and for Bt.
  const int loadLine = tid / 4, loadPart = tid % 4;
  const int4* aSrc = reinterpret_cast<const int4*>(a + (row0 + loadLine) * n) + loadPart;
  const int4* bSrc = reinterpret_cast<const int4*>(bt + (col0 + loadLine) * n) + loadPart;

  int acc[4][4];
  for (int ii = 0; ii < 4; ii++)
    for (int jj = 0; jj < 4; jj++) acc[ii][jj] = 0;

  for (uint32_t k0 = 0; k0 < n; k0 += kTileK) {
    const int4 va = aSrc[k0 / 16];
    const int4 vb = bSrc[k0 / 16];
    int* da = sa + loadLine * kStride + loadPart * 4;
    int* db = sb + loadLine * kStride + loadPart * 4;
    da[0] = va.x; da[1] = va.y; da[2] = va.z; da[3] = va.w;
    db[0] = vb.x; db[1] = vb.y; db[2] = vb.z; db[3] = vb.w;
    __syncthreads();
    for (int kw = 0; kw < kTileWords; kw++) {
      int ra[4], rb[4];
      for (int ii = 0; ii < 4; ii++) ra[ii] = sa[(ty + 16 * ii) * kStride + kw];
      for (int jj = 0; jj < 4; jj++) rb[jj] = sb[(tx + 16 * jj) * kStride + kw];
      for (int ii = 0; ii < 4; ii++)
        for (int jj = 0; jj < 4; jj++) acc[ii][jj] = __dp4a(ra[ii], rb[jj], acc[ii][jj]);
    }
    __syncthreads();
  }
  for (int ii = 0; ii < 4; ii++) {
    int32_t* out = s + (row0 + ty + 16 * ii) * n + col0 + tx;
    for (int jj = 0; jj < 4; jj++) out[16 * jj] += acc[ii][jj];
  }
}

namespace {

// ---- Output ------------------------------------------------------------------------------

bool hostIsLittleEndian() {
  const uint32_t one = 1;
  uint8_t b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

// writeAll writes len bytes to stdout or dies.
void writeAll(const void* p, size_t len) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  while (len > 0) {
    size_t k = std::fwrite(b, 1, len, stdout);
    if (k == 0) die(kExitFailure, "write to standard output: %s", std::strerror(errno));
    b += k;
    len -= k;
  }
}

double msSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

void usage() {
  std::fputs(
      "usage: gpu-solver [--device N] [--cublas]\n"
      "Reads one PoCP request as a JSON line on stdin and writes S as little-endian int32 on\n"
      "stdout (docs/pocp.md section 9).\n"
      "  --device N  the CUDA device to use (default 0)\n"
      "  --cublas    multiply with cuBLAS's int8 GEMM (needs a build with CUBLAS=1)\n",
      stderr);
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  bool useCublas = false;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (arg == "--cublas") {
      useCublas = true;
    } else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else {
      usage();
      die(kExitBadRequest, "unknown argument %s", arg.c_str());
    }
  }
#ifndef POCP_WITH_CUBLAS
  if (useCublas) die(kExitBadRequest, "--cublas: this build has no cuBLAS (make CUBLAS=1)");
#endif
  if (!hostIsLittleEndian()) die(kExitFailure, "big-endian hosts are not supported");

  const Request req = readRequest();
  const uint64_t key = prngKey(req.seed);
  if (req.hasKey && req.key != key) {
    die(kExitBadRequest, "key %016llx in the request, %016llx from the seed",
        (unsigned long long)req.key, (unsigned long long)key);
  }
  const uint64_t n = req.n, r = req.r;
  const uint64_t entries = n * n;
  const uint64_t words = entries / 16;
  // the band of rows answered: A_t's rows rowFrom .. rowTo (their PRNG words are
  // contiguous), all of B_t, and those rows of S
  const uint64_t rows = req.rowTo - req.rowFrom;
  const uint64_t bandEntries = rows * n;
  const uint64_t bandWords = bandEntries / 16;
  const uint64_t bandBase = req.rowFrom * (n / 16);

  const auto start = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int8_t *a = nullptr, *bt = nullptr;
  int32_t* s = nullptr;
  CUDA_CHECK(cudaMalloc(&a, bandEntries));
  CUDA_CHECK(cudaMalloc(&bt, entries));
  CUDA_CHECK(cudaMalloc(&s, bandEntries * sizeof(int32_t)));
  CUDA_CHECK(cudaMemset(s, 0, bandEntries * sizeof(int32_t)));
  CUDA_CHECK(cudaDeviceSynchronize());
  const double initMs = msSince(start);

#ifdef POCP_WITH_CUBLAS
  cublasHandle_t handle = nullptr;
  if (useCublas) {
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) die(kExitFailure, "cublasCreate failed");
  }
#endif

  const dim3 genBlock(256);
  const dim3 genGrid(unsigned((words + 255) / 256));
  const dim3 bandGrid(unsigned((bandWords + 255) / 256));
  const dim3 mulBlock(16, 16);
  const dim3 mulGrid(unsigned(n / kTile), unsigned(rows / kTile));
  for (uint64_t t = 0; t < r; t++) {
    LAUNCH(generate, bandGrid, genBlock, key, (t * 2 + 0) * words + bandBase, bandWords, a);
    LAUNCH(generate, genGrid, genBlock, key, (t * 2 + 1) * words, words, bt);
    CUDA_CHECK(cudaGetLastError());
    if (!useCublas) {
      LAUNCH(multiplyAccumulate, mulGrid, mulBlock, a, bt, s, uint32_t(n));
      CUDA_CHECK(cudaGetLastError());
    }
#ifdef POCP_WITH_CUBLAS
    else {
      // Column-major view: the memory of S (row-major) is S^T = Bt * A^T, where the memory
      // of Bt read column-major with ld n is B, so op T gives Bt, and the memory of A is
      // A^T (op N). alpha = beta = 1 in int32: S += A_t * B_t exactly.
      const int32_t one = 1;
      cublasStatus_t st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(rows), int(n), &one,
                                       bt, CUDA_R_8I, int(n), a, CUDA_R_8I, int(n), &one, s, CUDA_R_32I,
                                       int(n), CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT);
      if (st != CUBLAS_STATUS_SUCCESS) die(kExitFailure, "cublasGemmEx failed: status %d", int(st));
    }
#endif
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  const double computeMs = msSince(start) - initMs;

  // Copy out in slabs of rows and stream them: at most 64 MiB of host memory.
  const uint64_t slabRows = std::max<uint64_t>(1, (64ull << 20) / (n * sizeof(int32_t)));
  std::vector<int32_t> host(slabRows * n);
  for (uint64_t row = 0; row < rows; row += slabRows) {
    const uint64_t k = std::min(slabRows, rows - row);
    CUDA_CHECK(cudaMemcpy(host.data(), s + row * n, k * n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    writeAll(host.data(), k * n * sizeof(int32_t));
  }
  if (std::fflush(stdout) != 0) die(kExitFailure, "flush standard output: %s", std::strerror(errno));

#ifdef POCP_WITH_CUBLAS
  if (handle != nullptr) cublasDestroy(handle);
#endif
  cudaFree(a);
  cudaFree(bt);
  cudaFree(s);
  const double totalMs = msSince(start);
  const double flops = 2.0 * double(n) * double(n) * double(rows) * double(r);
  std::fprintf(stderr,
               "gpu-solver: %s: n=%llu r=%llu rows %llu-%llu %s: init %.1f ms, compute %.1f ms (%.0f GFLOP/s), total %.1f ms\n",
               prop.name, (unsigned long long)n, (unsigned long long)r, (unsigned long long)req.rowFrom,
               (unsigned long long)req.rowTo, useCublas ? "cublas" : "dp4a", initMs,
               computeMs, flops / (std::max(computeMs, 1e-3) * 1e6), totalMs);
  return 0;
}
