// cpu_shim.h: just enough of CUDA to run solver.cu's kernels on the CPU, for checking
// their logic (indexing, tiling, the PRNG, the dp4a arithmetic) where there is no GPU.
// It is not a CUDA emulator: a launch runs the blocks one after another, each block's
// threads as std::threads meeting at __syncthreads through a std::barrier, so __shared__
// variables (static here) are shared by exactly one block's threads at a time. Device
// memory is host memory. Slow: meant for n <= 1024.
#pragma once

#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3 {
  unsigned x, y, z;
};
struct int4 {
  int x, y, z, w;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
inline std::barrier<>* shimBarrier = nullptr;

inline void __syncthreads() { shimBarrier->arrive_and_wait(); }

// __dp4a(a, b, c): c + the sum of the products of the four signed bytes of a and b.
inline int __dp4a(int a, int b, int c) {
  int sum = c;
  for (int k = 0; k < 4; k++) {
    sum += int(int8_t(uint32_t(a) >> (8 * k))) * int(int8_t(uint32_t(b) >> (8 * k)));
  }
  return sum;
}

template <class Kernel, class... Args>
void shimLaunch(Kernel kernel, dim3 grid, dim3 block, Args... args) {
  const unsigned threads = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; bz++) {
    for (unsigned by = 0; by < grid.y; by++) {
      for (unsigned bx = 0; bx < grid.x; bx++) {
        std::barrier<> barrier(threads);
        shimBarrier = &barrier;
        std::vector<std::thread> pool;
        pool.reserve(threads);
        for (unsigned tz = 0; tz < block.z; tz++) {
          for (unsigned ty = 0; ty < block.y; ty++) {
            for (unsigned tx = 0; tx < block.x; tx++) {
              pool.emplace_back([=] {
                threadIdx = uint3{tx, ty, tz};
                blockIdx = uint3{bx, by, bz};
                blockDim = block;
                gridDim = grid;
                kernel(args...);
              });
            }
          }
        }
        for (auto& t : pool) t.join();
        shimBarrier = nullptr;
      }
    }
  }
}

#define LAUNCH(kernel, grid, block, ...) shimLaunch(kernel, (grid), (block), __VA_ARGS__)

// The runtime API, on host memory.
typedef int cudaError_t;
constexpr cudaError_t cudaSuccess = 0;
constexpr cudaError_t cudaErrorMemoryAllocation = 2;
enum cudaMemcpyKind { cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
struct cudaDeviceProp {
  char name[256];
};

inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "out of memory";
}
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::strcpy(p->name, "cpu-shim");
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMalloc(T** p, size_t size) {
  // 256-byte alignment, as cudaMalloc gives.
  *p = static_cast<T*>(std::aligned_alloc(256, (size + 255) / 256 * 256));
  return *p != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int v, size_t size) {
  std::memset(p, v, size);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t size, cudaMemcpyKind) {
  std::memcpy(dst, src, size);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
