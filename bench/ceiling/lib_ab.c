//===- lib_ab.c - Two builds of the same kernels, timed call by call ------===//
//
// Built and run by bench/ceiling/lib_ab.sh: the kernels of libA.a and libB.a
// (pd-lib, prefixes A_ and B_), each timed in `rounds` rounds of 10 calls
// per variant, the two variants alternating call by call (which goes first
// alternates too). `cold`: a ring of copies of the arrays (6, or 2 for
// arrays over 300 MB), each call using one the previous calls did not
// touch, so that every call reads from DRAM rather than the 32 MB L3;
// `warm`: the same arrays every call. Prints each kernel's median over all
// calls of A and of B, A / B, and A / B per round (the rounds' medians).
// A third argument, a comma-separated list of kernel names, times only
// those.
//
//===----------------------------------------------------------------------===//

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "A.h"
#include "B.h"

enum { RING = 6, CALLS = 10, MAX_ROUNDS = 25 };

typedef void (*Fn)(void);
typedef struct {
  const char *name;
  int arrays;
  size_t bytes[4];
  Fn a, b;
} Kernel;

static int compare(const void *x, const void *y) {
  double d = *(const double *)x - *(const double *)y;
  return d < 0 ? -1 : d > 0;
}

static double median(const double *v, int n) {
  double *t = malloc(n * sizeof *t);
  memcpy(t, v, n * sizeof *t);
  qsort(t, n, sizeof *t, compare);
  double m = t[n / 2];
  free(t);
  return m;
}

/// Whether `name` is one of the comma-separated names in `list`.
static int listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, name, n))
      return 1;
    if (!end)
      break;
    p = end + 1;
  }
  return 0;
}

static void call(Fn f, int arrays, void **p) {
  if (arrays == 2)
    ((void (*)(void *, void *))f)(p[0], p[1]);
  else if (arrays == 3)
    ((void (*)(void *, void *, void *))f)(p[0], p[1], p[2]);
  else
    ((void (*)(void *, void *, void *, void *))f)(p[0], p[1], p[2], p[3]);
}

#define F32(n) ((size_t)(n) * 4)
#define K(name, arrays, ...)                                                   \
  {#name, arrays, {__VA_ARGS__}, (Fn)A_##name, (Fn)B_##name}

int main(int argc, char **argv) {
  int cold = argc > 1 && !strcmp(argv[1], "cold");
  int rounds = argc > 2 ? atoi(argv[2]) : 7;
  if (rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "lib_ab: rounds must be 1 to %d\n", MAX_ROUNDS);
    return 1;
  }
  Kernel kernels[] = {
      K(reducemean, 2, F32(4096 * 4096), F32(4096)),
      K(relu, 2, F32(4096 * 4096), F32(4096 * 4096)),
      K(add, 3, F32(3072 * 4096), F32(3072 * 4096), F32(3072 * 4096)),
      K(batchnorm_8x3x2048x2048, 4, F32(8 * 3 * 2048 * 2048), F32(3), F32(3),
        F32(8 * 3 * 2048 * 2048)),
      K(batchnorm_8x64x300x300, 4, F32(8 * 64 * 300 * 300), F32(64), F32(64),
        F32(8 * 64 * 300 * 300)),
      K(softmax, 2, F32(24576 * 512), F32(24576 * 512)),
  };
  const char *only = argc > 3 ? argv[3] : NULL;
  for (size_t k = 0; k < sizeof kernels / sizeof *kernels; ++k) {
    Kernel *c = &kernels[k];
    if (only && !listed(only, c->name))
      continue;
    int ring = !cold ? 1 : c->bytes[0] > ((size_t)300 << 20) ? 2 : RING;
    void *p[RING][4];
    for (int r = 0; r < ring; ++r)
      for (int i = 0; i < c->arrays; ++i) {
        float *f = aligned_alloc(64, (c->bytes[i] + 63) / 64 * 64);
        if (!f) {
          fprintf(stderr, "lib_ab: out of memory\n");
          return 1;
        }
        for (size_t j = 0; j < c->bytes[i] / 4; ++j)
          f[j] = (float)((j * 2654435761u) % 1000) / 1000.0f + 0.5f;
        p[r][i] = f;
      }
    for (int w = 0; w < 2 * ring; ++w) {
      call(c->a, c->arrays, p[w % ring]);
      call(c->b, c->arrays, p[w % ring]);
    }
    double all[2][MAX_ROUNDS * CALLS], ratio[MAX_ROUNDS];
    for (int r = 0; r < rounds; ++r) {
      double *t[2] = {all[0] + r * CALLS, all[1] + r * CALLS};
      for (int i = 0; i < CALLS; ++i) {
        void **q = p[(r * CALLS + i) % ring];
        for (int v = 0; v < 2; ++v) {
          int which = v ^ ((r + i) % 2);
          double t0 = omp_get_wtime();
          call(which ? c->b : c->a, c->arrays, q);
          t[which][i] = omp_get_wtime() - t0;
        }
      }
      ratio[r] = median(t[0], CALLS) / median(t[1], CALLS);
    }
    double a = median(all[0], rounds * CALLS), b = median(all[1], rounds * CALLS);
    printf("%-24s %s A %.3f ms  B %.3f ms  A/B %.2f; per round:", c->name,
           cold ? "cold" : "warm", a * 1e3, b * 1e3, a / b);
    for (int r = 0; r < rounds; ++r)
      printf(" %.2f", ratio[r]);
    printf("\n");
    fflush(stdout);
    for (int r = 0; r < ring; ++r)
      for (int i = 0; i < c->arrays; ++i)
        free(p[r][i]);
  }
  return 0;
}
