//===- Machine.cpp - Measured limits of this machine ----------------------===//

#include "PerfDojo/Search/Evaluator/Machine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

using namespace mlir;
using namespace mlir::perfdojo;

std::string mlir::perfdojo::getCPUName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return StringRef(line).drop_front(colon + 1).trim().str();
    }
  return llvm::sys::getHostCPUName().str();
}

namespace {
using Clock = std::chrono::steady_clock;

/// Runs `body(begin, end)` on `threads` threads over [0, n) and returns the
/// wall time of the slowest.
template <typename Body>
double parallelTime(unsigned threads, size_t n, Body body) {
  std::vector<std::thread> pool;
  auto start = Clock::now();
  for (unsigned t = 0; t < threads; ++t) {
    size_t begin = n * t / threads, end = n * (t + 1) / threads;
    pool.emplace_back([=] { body(begin, end); });
  }
  for (std::thread &th : pool)
    th.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

__attribute__((noinline)) void triad(float *a, const float *b,
                                     const float *c, size_t begin,
                                     size_t end) {
  for (size_t i = begin; i < end; ++i)
    a[i] = b[i] + 3.0f * c[i];
}

typedef float Float16 __attribute__((ext_vector_type(16)));
typedef float Float8 __attribute__((ext_vector_type(8)));

/// A copy with 64-byte non-temporal stores (ranges are multiples of 16
/// floats, 64-byte aligned, but for the tail).
__attribute__((target("avx512f"), noinline)) void
streamCopyAvx512(float *a, const float *b, size_t begin, size_t end) {
  size_t i = begin;
  for (; i + 16 <= end; i += 16)
    __builtin_nontemporal_store(*reinterpret_cast<const Float16 *>(b + i),
                                reinterpret_cast<Float16 *>(a + i));
  for (; i < end; ++i)
    a[i] = b[i];
}

__attribute__((noinline)) void streamCopy(float *a, const float *b,
                                          size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i)
    __builtin_nontemporal_store(b[i], &a[i]);
}

/// 12 independent FMA chains per iteration, long enough to hide the
/// latency; returns the sum of every lane so nothing is optimized away.
template <typename V, int Lanes>
__attribute__((always_inline)) inline float fmaChains(size_t iterations,
                                                      float seed) {
  V acc[12];
  for (int k = 0; k < 12; ++k)
    acc[k] = V(seed + float(k));
  V m = V(seed * 0.999f), add = V(seed * 0.001f);
  for (size_t i = 0; i < iterations; ++i)
    for (int k = 0; k < 12; ++k)
      acc[k] = acc[k] * m + add;
  V sum = acc[0];
  for (int k = 1; k < 12; ++k)
    sum += acc[k];
  float total = 0;
  for (int i = 0; i < Lanes; ++i)
    total += sum[i];
  return total;
}

__attribute__((target("avx512f,fma"), noinline)) float
fmaAvx512(size_t iterations) {
  return fmaChains<Float16, 16>(iterations, 1.0f);
}

__attribute__((target("avx2,fma"), noinline)) float fmaAvx2(size_t iterations) {
  return fmaChains<Float8, 8>(iterations, 1.0f);
}

__attribute__((noinline)) float fmaScalar(size_t iterations) {
  typedef float Float1 __attribute__((ext_vector_type(1)));
  return fmaChains<Float1, 1>(iterations, 1.0f);
}

std::string nowUTC() {
  std::time_t t = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return text;
}
} // namespace

MachineLimits mlir::perfdojo::measureMachine(unsigned threads,
                                             unsigned arrayMiB) {
  threads = std::max(threads, 1u);
  MachineLimits limits;
  limits.cpu = getCPUName();
  limits.threads = threads;
  limits.date = nowUTC();

  size_t n = size_t(arrayMiB) * (1 << 20) / sizeof(float);
  auto alloc = [&] {
    return std::unique_ptr<float[], decltype(&std::free)>(
        static_cast<float *>(std::aligned_alloc(64, n * sizeof(float))),
        &std::free);
  };
  auto a = alloc(), b = alloc(), c = alloc();
  bool avx512 = __builtin_cpu_supports("avx512f");
  // First touch from the threads that will use the memory.
  parallelTime(threads, n, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      a[i] = 0;
      b[i] = 1;
      c[i] = 2;
    }
  });
  for (int rep = 0; rep < 5; ++rep) {
    double t = parallelTime(threads, n, [&](size_t begin, size_t end) {
      triad(a.get(), b.get(), c.get(), begin, end);
    });
    limits.triadGBs = std::max(limits.triadGBs, 3.0 * n * sizeof(float) / t / 1e9);
    t = parallelTime(threads, n, [&](size_t begin, size_t end) {
      // Chunks start on 64-byte boundaries.
      begin &= ~size_t(15);
      end = end == n ? n : end & ~size_t(15);
      if (avx512)
        streamCopyAvx512(a.get(), b.get(), begin, end);
      else
        streamCopy(a.get(), b.get(), begin, end);
    });
    limits.nontemporalCopyGBs =
        std::max(limits.nontemporalCopyGBs, 2.0 * n * sizeof(float) / t / 1e9);
  }

  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  limits.isa = avx512 ? "avx512f" : avx2 ? "avx2" : "scalar";
  unsigned lanes = avx512 ? 16 : avx2 ? 8 : 1;
  size_t iterations = 20'000'000;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<float> sink(threads);
    double t = parallelTime(threads, threads, [&](size_t begin, size_t) {
      sink[begin] = avx512 ? fmaAvx512(iterations)
                    : avx2 ? fmaAvx2(iterations)
                           : fmaScalar(iterations);
    });
    double flops = 2.0 * 12 * lanes * double(iterations) * threads;
    limits.fmaGFlops = std::max(limits.fmaGFlops, flops / t / 1e9);
    volatile float keep = sink[0];
    (void)keep;
  }
  return limits;
}

std::string mlir::perfdojo::getMachineCachePath() {
  SmallString<256> path;
  if (const char *dir = std::getenv("PERFDOJO_CACHE_DIR")) {
    path = dir;
  } else if (const char *xdg = std::getenv("XDG_CACHE_HOME")) {
    path = xdg;
    llvm::sys::path::append(path, "perfdojo");
  } else if (const char *home = std::getenv("HOME")) {
    path = home;
    llvm::sys::path::append(path, ".cache", "perfdojo");
  } else {
    path = "/tmp/perfdojo";
  }
  llvm::sys::path::append(path, "machine.json");
  return path.str().str();
}

static std::string keyOf(StringRef cpu, unsigned threads) {
  return (cpu + " / " + Twine(threads) + " threads").str();
}

/// The whole cache file as a JSON object (empty when missing or unreadable).
static llvm::json::Object readCache() {
  auto file = llvm::MemoryBuffer::getFile(getMachineCachePath());
  if (!file)
    return {};
  auto value = llvm::json::parse((*file)->getBuffer());
  if (!value) {
    llvm::consumeError(value.takeError());
    return {};
  }
  if (llvm::json::Object *object = value->getAsObject())
    return std::move(*object);
  return {};
}

std::optional<MachineLimits> mlir::perfdojo::loadMachineLimits(unsigned threads) {
  llvm::json::Object cache = readCache();
  std::string cpu = getCPUName();
  const llvm::json::Object *entry = cache.getObject(keyOf(cpu, threads));
  if (!entry)
    return std::nullopt;
  MachineLimits limits;
  limits.cpu = cpu;
  limits.threads = threads;
  auto number = [&](StringRef key) {
    return entry->getNumber(key).value_or(0);
  };
  limits.triadGBs = number("triad_GBs");
  limits.nontemporalCopyGBs = number("nontemporal_copy_GBs");
  limits.fmaGFlops = number("fma_GFLOPs");
  limits.isa = entry->getString("isa").value_or("").str();
  limits.date = entry->getString("date").value_or("").str();
  if (limits.triadGBs <= 0 || limits.fmaGFlops <= 0)
    return std::nullopt;
  return limits;
}

llvm::Error mlir::perfdojo::saveMachineLimits(const MachineLimits &limits) {
  llvm::json::Object cache = readCache();
  cache[keyOf(limits.cpu, limits.threads)] = llvm::json::Object{
      {"triad_GBs", limits.triadGBs},
      {"nontemporal_copy_GBs", limits.nontemporalCopyGBs},
      {"fma_GFLOPs", limits.fmaGFlops},
      {"isa", limits.isa},
      {"date", limits.date},
  };
  std::string path = getMachineCachePath();
  if (std::error_code ec = llvm::sys::fs::create_directories(
          llvm::sys::path::parent_path(path)))
    return llvm::createStringError(ec, "cannot create the directory of '%s'",
                                   path.c_str());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write '%s'", path.c_str());
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(cache))) << "\n";
  return llvm::Error::success();
}
