//===- broadcast.c - What broadcasts from memory cost a register tile -----===//
//
// Times 20 million steps of 24 independent 512-bit multiply-adds (the k
// step of a 24-accumulator register tile) on one thread, alone and with the
// loads a tile's step issues: broadcasts of one float from memory
// (vbroadcastss), each feeding several multiply-adds, embedded broadcasts,
// and vector loads. Where a variant runs as fast as the first, what it adds
// costs the multiply-adds nothing. Needs AVX-512.
//
//   cc -O2 bench/ceiling/broadcast.c -o /tmp/broadcast && /tmp/broadcast
//
// Generated; the numbers it gave are in docs/Benchmarks.md.
//
//===----------------------------------------------------------------------===//

#include <stdio.h>
#include <time.h>

static float buf[256] __attribute__((aligned(64)));

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
/* 24 multiply-adds, register operands */
static void step0(void) {
  asm volatile(
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm0\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm1\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm2\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm3\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm4\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm5\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm6\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm7\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm8\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm9\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm10\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm11\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm12\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm13\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm14\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm15\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm16\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm17\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm18\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm19\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm20\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm21\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm22\n"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm23\n"
      :
      : "r"(0), "r"(buf)
      : "memory");
}

/* 6 broadcasts from memory, each feeding 4 */
static void step1(void) {
  asm volatile(
      "vbroadcastss 0(%1), %%zmm24\n"
      "vbroadcastss 4(%1), %%zmm25\n"
      "vbroadcastss 8(%1), %%zmm26\n"
      "vbroadcastss 12(%1), %%zmm27\n"
      "vbroadcastss 16(%1), %%zmm28\n"
      "vbroadcastss 20(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm0\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm1\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm2\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm3\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm4\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm5\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm6\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm7\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm8\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm9\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm10\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm11\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm12\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm13\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm14\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm15\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm16\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm17\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm18\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm19\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm20\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm21\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm22\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm23\n"
      :
      : "r"(0), "r"(buf)
      : "memory");
}

/* 12 broadcasts from memory, each feeding 2 */
static void step2(void) {
  asm volatile(
      "vbroadcastss 0(%1), %%zmm24\n"
      "vbroadcastss 4(%1), %%zmm25\n"
      "vbroadcastss 8(%1), %%zmm26\n"
      "vbroadcastss 12(%1), %%zmm27\n"
      "vbroadcastss 16(%1), %%zmm28\n"
      "vbroadcastss 20(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm0\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm1\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm2\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm3\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm4\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm5\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm6\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm7\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm8\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm9\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm10\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm11\n"
      "vbroadcastss 24(%1), %%zmm24\n"
      "vbroadcastss 28(%1), %%zmm25\n"
      "vbroadcastss 32(%1), %%zmm26\n"
      "vbroadcastss 36(%1), %%zmm27\n"
      "vbroadcastss 40(%1), %%zmm28\n"
      "vbroadcastss 44(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm12\n"
      "vfmadd231ps %%zmm24, %%zmm31, %%zmm13\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm14\n"
      "vfmadd231ps %%zmm25, %%zmm31, %%zmm15\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm16\n"
      "vfmadd231ps %%zmm26, %%zmm31, %%zmm17\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm18\n"
      "vfmadd231ps %%zmm27, %%zmm31, %%zmm19\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm20\n"
      "vfmadd231ps %%zmm28, %%zmm31, %%zmm21\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm22\n"
      "vfmadd231ps %%zmm29, %%zmm31, %%zmm23\n"
      :
      : "r"(0), "r"(buf)
      : "memory");
}

/* 24 multiply-adds with an embedded broadcast {1to16} */
static void step3(void) {
  asm volatile(
      "vfmadd231ps 0(%1)%{1to16%}, %%zmm31, %%zmm0\n"
      "vfmadd231ps 4(%1)%{1to16%}, %%zmm31, %%zmm1\n"
      "vfmadd231ps 8(%1)%{1to16%}, %%zmm31, %%zmm2\n"
      "vfmadd231ps 12(%1)%{1to16%}, %%zmm31, %%zmm3\n"
      "vfmadd231ps 16(%1)%{1to16%}, %%zmm31, %%zmm4\n"
      "vfmadd231ps 20(%1)%{1to16%}, %%zmm31, %%zmm5\n"
      "vfmadd231ps 24(%1)%{1to16%}, %%zmm31, %%zmm6\n"
      "vfmadd231ps 28(%1)%{1to16%}, %%zmm31, %%zmm7\n"
      "vfmadd231ps 32(%1)%{1to16%}, %%zmm31, %%zmm8\n"
      "vfmadd231ps 36(%1)%{1to16%}, %%zmm31, %%zmm9\n"
      "vfmadd231ps 40(%1)%{1to16%}, %%zmm31, %%zmm10\n"
      "vfmadd231ps 44(%1)%{1to16%}, %%zmm31, %%zmm11\n"
      "vfmadd231ps 48(%1)%{1to16%}, %%zmm31, %%zmm12\n"
      "vfmadd231ps 52(%1)%{1to16%}, %%zmm31, %%zmm13\n"
      "vfmadd231ps 56(%1)%{1to16%}, %%zmm31, %%zmm14\n"
      "vfmadd231ps 60(%1)%{1to16%}, %%zmm31, %%zmm15\n"
      "vfmadd231ps 0(%1)%{1to16%}, %%zmm31, %%zmm16\n"
      "vfmadd231ps 4(%1)%{1to16%}, %%zmm31, %%zmm17\n"
      "vfmadd231ps 8(%1)%{1to16%}, %%zmm31, %%zmm18\n"
      "vfmadd231ps 12(%1)%{1to16%}, %%zmm31, %%zmm19\n"
      "vfmadd231ps 16(%1)%{1to16%}, %%zmm31, %%zmm20\n"
      "vfmadd231ps 20(%1)%{1to16%}, %%zmm31, %%zmm21\n"
      "vfmadd231ps 24(%1)%{1to16%}, %%zmm31, %%zmm22\n"
      "vfmadd231ps 28(%1)%{1to16%}, %%zmm31, %%zmm23\n"
      :
      : "r"(0), "r"(buf)
      : "memory");
}

/* 12 broadcasts and 6 vector loads aligned */
static void step4(void) {
  asm volatile(
      "vbroadcastss 0(%1), %%zmm24\n"
      "vbroadcastss 4(%1), %%zmm25\n"
      "vbroadcastss 8(%1), %%zmm26\n"
      "vmovups 256(%1), %%zmm27\n"
      "vmovups 320(%1), %%zmm28\n"
      "vmovups 384(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm0\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm1\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm2\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm3\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm4\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm5\n"
      "vbroadcastss 12(%1), %%zmm24\n"
      "vbroadcastss 16(%1), %%zmm25\n"
      "vbroadcastss 20(%1), %%zmm26\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm6\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm7\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm8\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm9\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm10\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm11\n"
      "vbroadcastss 24(%1), %%zmm24\n"
      "vbroadcastss 28(%1), %%zmm25\n"
      "vbroadcastss 32(%1), %%zmm26\n"
      "vmovups 448(%1), %%zmm27\n"
      "vmovups 512(%1), %%zmm28\n"
      "vmovups 576(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm12\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm13\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm14\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm15\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm16\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm17\n"
      "vbroadcastss 36(%1), %%zmm24\n"
      "vbroadcastss 40(%1), %%zmm25\n"
      "vbroadcastss 44(%1), %%zmm26\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm18\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm19\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm20\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm21\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm22\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm23\n"
      :
      : "r"(0), "r"(buf)
      : "memory");
}

/* 12 broadcasts and 6 vector loads each crossing a line */
static void step5(void) {
  asm volatile(
      "vbroadcastss 0(%1), %%zmm24\n"
      "vbroadcastss 4(%1), %%zmm25\n"
      "vbroadcastss 8(%1), %%zmm26\n"
      "vmovups 260(%1), %%zmm27\n"
      "vmovups 324(%1), %%zmm28\n"
      "vmovups 388(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm0\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm1\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm2\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm3\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm4\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm5\n"
      "vbroadcastss 12(%1), %%zmm24\n"
      "vbroadcastss 16(%1), %%zmm25\n"
      "vbroadcastss 20(%1), %%zmm26\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm6\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm7\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm8\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm9\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm10\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm11\n"
      "vbroadcastss 24(%1), %%zmm24\n"
      "vbroadcastss 28(%1), %%zmm25\n"
      "vbroadcastss 32(%1), %%zmm26\n"
      "vmovups 452(%1), %%zmm27\n"
      "vmovups 516(%1), %%zmm28\n"
      "vmovups 580(%1), %%zmm29\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm12\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm13\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm14\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm15\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm16\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm17\n"
      "vbroadcastss 36(%1), %%zmm24\n"
      "vbroadcastss 40(%1), %%zmm25\n"
      "vbroadcastss 44(%1), %%zmm26\n"
      "vfmadd231ps %%zmm24, %%zmm27, %%zmm18\n"
      "vfmadd231ps %%zmm24, %%zmm28, %%zmm19\n"
      "vfmadd231ps %%zmm25, %%zmm29, %%zmm20\n"
      "vfmadd231ps %%zmm25, %%zmm27, %%zmm21\n"
      "vfmadd231ps %%zmm26, %%zmm28, %%zmm22\n"
      "vfmadd231ps %%zmm26, %%zmm29, %%zmm23\n"
      :
      : "r"(0), "r"(buf)
      : "memory");
}

static const struct {
  const char *name;
  void (*step)(void);
} variants[] = {
    {"24 multiply-adds, register operands", step0},
    {"6 broadcasts from memory, each feeding 4", step1},
    {"12 broadcasts from memory, each feeding 2", step2},
    {"24 multiply-adds with an embedded broadcast {1to16}", step3},
    {"12 broadcasts and 6 vector loads aligned", step4},
    {"12 broadcasts and 6 vector loads each crossing a line", step5},
};

int main(void) {
  const long steps = 20000000;
  for (unsigned v = 0; v < sizeof(variants) / sizeof(variants[0]); ++v) {
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      double t = now();
      for (long i = 0; i < steps; ++i)
        variants[v].step();
      t = now() - t;
      best = t < best ? t : best;
    }
    printf("%-55s %.2f G multiply-adds/s\n", variants[v].name,
           24.0 * steps / best / 1e9);
  }
  return 0;
}
