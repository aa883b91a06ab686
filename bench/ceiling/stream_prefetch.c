//===- stream_prefetch.c - Software prefetch ahead in a streaming pass ----===//
//
// Whether prefetching a fixed distance ahead helps a pass that streams rows
// from DRAM, beyond the hardware prefetchers: reducemean's loop (the sum of
// each 16 KB row of a 4096 x 4096 float matrix, four 512-bit accumulators)
// and add's (z = x + y over rows of 16 KB, streaming stores), on 2 threads
// (OpenMP, rows split in two halves as the expert's parallel scope does).
// Each call reads matrices that the previous calls did not touch (a ring of
// 5 sets, 320 MB and more), so that nothing comes from the 32 MB L3. The
// variants, alternated in every round: no software prefetch, and prefetcht0
// or prefetcht1 of the line `distance` bytes ahead in the same row (clamped
// to the row, so none is wasted past its end), for distances from 256 B to
// 4 KB. Needs AVX-512.
//
//   cc -O2 -mavx512f -fopenmp bench/ceiling/stream_prefetch.c -o /tmp/sp
//   OMP_NUM_THREADS=2 OMP_PROC_BIND=true /tmp/sp
//
// The numbers it gave are in docs/Benchmarks.md.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 4096, COLS = 4096, SETS = 5, ROUNDS = 7, CALLS = 10 };

static double seconds(void) { return omp_get_wtime(); }

// The sum of each row of x into y; a prefetch `distance` bytes ahead
// (0: none) with hint `t1` (prefetcht1 when set, else prefetcht0).
static void reduceRows(const float *x, float *y, long distance, int t1) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < ROWS; ++r) {
    const float *row = x + r * COLS;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    long ahead = distance / (long)sizeof(float);
    for (long c = 0; c < COLS; c += 64) {
      if (distance) {
        long p = c + ahead < COLS ? c + ahead : COLS - 16;
        if (p > COLS - 64)
          p = COLS - 64;
        for (long line = 0; line < 64; line += 16) // the 4 lines of a step
          if (t1)
            _mm_prefetch((const char *)(row + p + line), _MM_HINT_T1);
          else
            _mm_prefetch((const char *)(row + p + line), _MM_HINT_T0);
      }
      a0 = _mm512_add_ps(a0, _mm512_loadu_ps(row + c));
      a1 = _mm512_add_ps(a1, _mm512_loadu_ps(row + c + 16));
      a2 = _mm512_add_ps(a2, _mm512_loadu_ps(row + c + 32));
      a3 = _mm512_add_ps(a3, _mm512_loadu_ps(row + c + 48));
    }
    y[r] = _mm512_reduce_add_ps(
               _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3))) /
           COLS;
  }
}

// z = x + y, with streaming stores, prefetching both inputs as above.
static void addRows(const float *x, const float *y, float *z, long distance,
                    int t1) {
#pragma omp parallel for schedule(static)
  for (long r = 0; r < ROWS; ++r) {
    const float *xr = x + r * COLS, *yr = y + r * COLS;
    float *zr = z + r * COLS;
    long ahead = distance / (long)sizeof(float);
    for (long c = 0; c < COLS; c += 16) {
      if (distance) {
        long p = c + ahead < COLS ? c + ahead : COLS - 16;
        if (t1) {
          _mm_prefetch((const char *)(xr + p), _MM_HINT_T1);
          _mm_prefetch((const char *)(yr + p), _MM_HINT_T1);
        } else {
          _mm_prefetch((const char *)(xr + p), _MM_HINT_T0);
          _mm_prefetch((const char *)(yr + p), _MM_HINT_T0);
        }
      }
      _mm512_stream_ps(zr + c, _mm512_add_ps(_mm512_loadu_ps(xr + c),
                                             _mm512_loadu_ps(yr + c)));
    }
  }
  _mm_sfence();
}

static int compareDoubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  static const long distances[] = {0, 256, 512, 1024, 2048, 4096};
  enum { DISTANCES = sizeof(distances) / sizeof(distances[0]) };
  enum { VARIANTS = 1 + 2 * (DISTANCES - 1) };
  size_t bytes = (size_t)ROWS * COLS * sizeof(float);
  float *x[SETS], *y[SETS], *z[SETS], *sums = malloc(ROWS * sizeof(float));
  for (int s = 0; s < SETS; ++s) {
    x[s] = aligned_alloc(64, bytes);
    y[s] = aligned_alloc(64, bytes);
    z[s] = aligned_alloc(64, bytes);
    if (!x[s] || !y[s] || !z[s] || !sums) {
      fprintf(stderr, "stream_prefetch: out of memory\n");
      return 1;
    }
#pragma omp parallel for schedule(static)
    for (long r = 0; r < ROWS; ++r)
      for (long c = 0; c < COLS; ++c) {
        x[s][r * COLS + c] = (float)(c % 7);
        y[s][r * COLS + c] = 1.0f;
        z[s][r * COLS + c] = 0.0f;
      }
  }
  // best[kernel][variant]: the median call of each round, then the median
  // and the fastest of the rounds.
  double times[2][VARIANTS][ROUNDS];
  int set = 0;
  for (int round = 0; round < ROUNDS; ++round)
    for (int kernel = 0; kernel < 2; ++kernel)
      for (int v = 0; v < VARIANTS; ++v) {
        long distance = v == 0 ? 0 : distances[(v + 1) / 2];
        int t1 = v % 2 == 0;
        double calls[CALLS];
        for (int call = 0; call < CALLS; ++call) {
          set = (set + 1) % SETS;
          double start = seconds();
          if (kernel == 0)
            reduceRows(x[set], sums, distance, t1);
          else
            addRows(x[set], y[set], z[set], distance, t1);
          calls[call] = seconds() - start;
        }
        qsort(calls, CALLS, sizeof(double), compareDoubles);
        times[kernel][v][round] = calls[CALLS / 2];
      }
  const char *names[2] = {"reducemean (reads 64 MB)",
                          "add (reads 128 MB, writes 64 MB)"};
  double moved[2] = {(double)bytes, 3.0 * bytes};
  for (int kernel = 0; kernel < 2; ++kernel) {
    printf("%s, %d rounds of the median of %d calls:\n", names[kernel],
           ROUNDS, CALLS);
    for (int v = 0; v < VARIANTS; ++v) {
      double *t = times[kernel][v];
      qsort(t, ROUNDS, sizeof(double), compareDoubles);
      char label[64];
      if (v == 0)
        snprintf(label, sizeof label, "no prefetch");
      else
        snprintf(label, sizeof label, "prefetcht%d %5ld B ahead",
                 v % 2 == 0 ? 1 : 0, distances[(v + 1) / 2]);
      printf("  %-26s median %.3f ms (%.1f GB/s), fastest %.3f ms "
             "(%.1f GB/s)\n",
             label, 1e3 * t[ROUNDS / 2], moved[kernel] / t[ROUNDS / 2] / 1e9,
             1e3 * t[0], moved[kernel] / t[0] / 1e9);
    }
  }
  printf("(checksum %g)\n", (double)sums[ROWS - 1] + z[set][COLS - 1]);
  return 0;
}
