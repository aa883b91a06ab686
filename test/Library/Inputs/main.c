#include "nn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float x[64][256], y[64][256];
static double a[1000], b[1000], c[1000];

int main(void) {
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 256; ++j)
      x[i][j] = sinf(0.37f * i + 0.11f * j) * 3;
  for (int i = 0; i < 1000; ++i) {
    a[i] = i % 7 - 3.5;
    b[i] = (i % 3) * 0.25;
  }
  nn_sm(&x[0][0], &y[0][0]);
  nn_addrelu(a, b, c);
  // The workspace entry point, on a block of the size it asks for, one
  // byte off any alignment and poisoned, into another output: the same
  // results, bit for bit.
  static float y2[64][256];
  size_t bytes = nn_sm_workspace_size();
  unsigned char *block = malloc(bytes + 1);
  memset(block, 0xff, bytes + 1);
  nn_sm_ws(&x[0][0], &y2[0][0], block + 1);
  free(block);
  if (memcmp(y, y2, sizeof y)) {
    printf("nn_sm_ws differs from nn_sm\n");
    return 1;
  }
  printf("workspace %zu bytes, same results\n", bytes);
  double worst = 0;
  for (int i = 0; i < 64; ++i) {
    float m = -INFINITY, s = 0;
    for (int j = 0; j < 256; ++j)
      m = fmaxf(m, x[i][j]);
    for (int j = 0; j < 256; ++j)
      s += expf(x[i][j] - m);
    for (int j = 0; j < 256; ++j)
      worst = fmax(worst, fabs(y[i][j] - expf(x[i][j] - m) / s));
  }
  for (int i = 0; i < 1000; ++i)
    worst = fmax(worst, fabs(c[i] - fmax(a[i] + b[i], 0)));
  printf("largest difference %g\n", worst);
  return worst < 1e-6 ? 0 : 1;
}
