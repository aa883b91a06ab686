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
// The numbers it gave are in docs/Benchmarks.md.
//
//===----------------------------------------------------------------------===//

#include <stdio.h>
#include <time.h>

// Accumulator `acc` += zmm`a` * zmm`b`.
#define FMA(acc, a, b) "vfmadd231ps %%zmm" #a ", %%zmm" #b ", %%zmm" #acc "\n"
// Two or four accumulators += zmm`a` * zmm`b`.
#define FMA2(a0, a1, a, b) FMA(a0, a, b) FMA(a1, a, b)
#define FMA4(a0, a1, a2, a3, a, b) FMA2(a0, a1, a, b) FMA2(a2, a3, a, b)
// zmm`r` = the float at byte `offset` of the broadcast operand (%1).
#define BROADCAST(offset, r) "vbroadcastss " #offset "(%1), %%zmm" #r "\n"
// Accumulator `acc` += the float at byte `offset` of %1, broadcast, * zmm31.
#define EMBEDDED(acc, offset)                                                  \
  "vfmadd231ps " #offset "(%1)%{1to16%}, %%zmm31, %%zmm" #acc "\n"
// zmm`r` = the vector at byte `offset` of the vector operand (%2).
#define LOAD(offset, r) "vmovups " #offset "(%2), %%zmm" #r "\n"
// The operands: %0 unused, %1 the broadcast floats, %2 the vectors.
#define OPERANDS : : "r"(0), "r"(broadcasts), "r"(vectors) : "memory"

static float broadcasts[64] __attribute__((aligned(64)));
static float vectorData[16 * 8] __attribute__((aligned(64)));

/* 24 multiply-adds of registers. */
static void registers(const char *vectors) {
  asm volatile(FMA4(0, 1, 2, 3, 30, 31) FMA4(4, 5, 6, 7, 30, 31)
               FMA4(8, 9, 10, 11, 30, 31) FMA4(12, 13, 14, 15, 30, 31)
               FMA4(16, 17, 18, 19, 30, 31) FMA4(20, 21, 22, 23, 30, 31)
               OPERANDS);
}

/* 6 broadcasts, each feeding 4 multiply-adds (a 6 x 4 tile's step). */
static void broadcastPer4(const char *vectors) {
  asm volatile(BROADCAST(0, 24) BROADCAST(4, 25) BROADCAST(8, 26)
               BROADCAST(12, 27) BROADCAST(16, 28) BROADCAST(20, 29)
               FMA4(0, 1, 2, 3, 24, 31) FMA4(4, 5, 6, 7, 25, 31)
               FMA4(8, 9, 10, 11, 26, 31) FMA4(12, 13, 14, 15, 27, 31)
               FMA4(16, 17, 18, 19, 28, 31) FMA4(20, 21, 22, 23, 29, 31)
               OPERANDS);
}

/* 12 broadcasts, each feeding 2 (5 output channels x 2 rows: one a row
   pair). */
static void broadcastPer2(const char *vectors) {
  asm volatile(BROADCAST(0, 24) BROADCAST(4, 25) BROADCAST(8, 26)
               BROADCAST(12, 27) BROADCAST(16, 28) BROADCAST(20, 29)
               FMA2(0, 1, 24, 31) FMA2(2, 3, 25, 31) FMA2(4, 5, 26, 31)
               FMA2(6, 7, 27, 31) FMA2(8, 9, 28, 31) FMA2(10, 11, 29, 31)
               BROADCAST(24, 24) BROADCAST(28, 25) BROADCAST(32, 26)
               BROADCAST(36, 27) BROADCAST(40, 28) BROADCAST(44, 29)
               FMA2(12, 13, 24, 31) FMA2(14, 15, 25, 31) FMA2(16, 17, 26, 31)
               FMA2(18, 19, 27, 31) FMA2(20, 21, 28, 31) FMA2(22, 23, 29, 31)
               OPERANDS);
}

/* 24 multiply-adds, each with an embedded broadcast. */
static void embedded(const char *vectors) {
  asm volatile(EMBEDDED(0, 0) EMBEDDED(1, 4) EMBEDDED(2, 8) EMBEDDED(3, 12)
               EMBEDDED(4, 16) EMBEDDED(5, 20) EMBEDDED(6, 24) EMBEDDED(7, 28)
               EMBEDDED(8, 32) EMBEDDED(9, 36) EMBEDDED(10, 40)
               EMBEDDED(11, 44) EMBEDDED(12, 48) EMBEDDED(13, 52)
               EMBEDDED(14, 56) EMBEDDED(15, 60) EMBEDDED(16, 0)
               EMBEDDED(17, 4) EMBEDDED(18, 8) EMBEDDED(19, 12)
               EMBEDDED(20, 16) EMBEDDED(21, 20) EMBEDDED(22, 24)
               EMBEDDED(23, 28) OPERANDS);
}

/* 12 broadcasts and 6 vector loads: in each group of 6 multiply-adds, 3
   broadcasts and 3 loaded vectors each serve 2. */
#define GROUP(a0, a1, a2, a3, a4, a5, b0, b1, b2)                              \
  BROADCAST(b0, 24) BROADCAST(b1, 25) BROADCAST(b2, 26)                        \
  FMA(a0, 24, 27) FMA(a1, 24, 28) FMA(a2, 25, 29)                              \
  FMA(a3, 25, 27) FMA(a4, 26, 28) FMA(a5, 26, 29)
static void broadcastsAndLoads(const char *vectors) {
  asm volatile(LOAD(0, 27) LOAD(64, 28) LOAD(128, 29)
               GROUP(0, 1, 2, 3, 4, 5, 0, 4, 8)
               GROUP(6, 7, 8, 9, 10, 11, 12, 16, 20)
               LOAD(192, 27) LOAD(256, 28) LOAD(320, 29)
               GROUP(12, 13, 14, 15, 16, 17, 24, 28, 32)
               GROUP(18, 19, 20, 21, 22, 23, 36, 40, 44)
               OPERANDS);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static const struct {
  const char *name;
  void (*step)(const char *);
  /* Where the vector loads start: aligned, or 4 bytes past (each load
     then crosses a cache line). */
  int offset;
} variants[] = {
    {"24 multiply-adds, register operands", registers, 0},
    {"6 broadcasts from memory, each feeding 4", broadcastPer4, 0},
    {"12 broadcasts from memory, each feeding 2", broadcastPer2, 0},
    {"24 multiply-adds with an embedded broadcast {1to16}", embedded, 0},
    {"12 broadcasts and 6 vector loads aligned", broadcastsAndLoads, 0},
    {"12 broadcasts and 6 vector loads each crossing a line",
     broadcastsAndLoads, 4},
};

int main(void) {
  const long steps = 20000000;
  for (unsigned v = 0; v < sizeof(variants) / sizeof(variants[0]); ++v) {
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      double t = now();
      for (long i = 0; i < steps; ++i)
        variants[v].step((const char *)vectorData + variants[v].offset);
      t = now() - t;
      best = t < best ? t : best;
    }
    printf("%-55s %.2f G multiply-adds/s\n", variants[v].name,
           24.0 * steps / best / 1e9);
  }
  return 0;
}
