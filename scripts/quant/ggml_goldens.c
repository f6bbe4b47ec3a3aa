// Golden data for tests/unit/core/quant_format_test.cc: random blocks of every ggml
// format whisper.cpp writes, dequantized by ggml itself. Build against a whisper.cpp
// checkout (any build directory that has libggml-base):
//
//   cc -O1 scripts/quant/ggml_goldens.c -I$WCPP/ggml/include -L$WCPP/build/bin \
//      -lggml-base -Wl,-rpath,$WCPP/build/bin -o /tmp/ggml_goldens
//   /tmp/ggml_goldens tests/data/quant
//
// Writes <type>.blocks.bin (the raw blocks) and <type>.values.bin (little-endian f32).
// Block bytes are random; the f16 scale fields are set to finite values of either sign
// so that every value is finite.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"

struct format { enum ggml_type type; const char* name; int n_blocks; int f16_fields[2]; };

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint32_t next_random(void) {
  state ^= state << 13; state ^= state >> 7; state ^= state << 17;
  return (uint32_t)(state >> 16);
}

static void write_file(const char* dir, const char* name, const char* ext, const void* data, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size) { perror(path); exit(1); }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]); return 2; }
  const struct format formats[] = {
      {GGML_TYPE_Q4_0, "q4_0", 16, {0, -1}}, {GGML_TYPE_Q4_1, "q4_1", 16, {0, 2}},
      {GGML_TYPE_Q5_0, "q5_0", 16, {0, -1}}, {GGML_TYPE_Q5_1, "q5_1", 16, {0, 2}},
      {GGML_TYPE_Q8_0, "q8_0", 16, {0, -1}}, {GGML_TYPE_Q2_K, "q2_k", 4, {80, 82}},
      {GGML_TYPE_Q3_K, "q3_k", 4, {108, -1}}, {GGML_TYPE_Q4_K, "q4_k", 4, {0, 2}},
      {GGML_TYPE_Q5_K, "q5_k", 4, {0, 2}},    {GGML_TYPE_Q6_K, "q6_k", 4, {208, -1}},
  };
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; ++i) {
    const struct format* f = &formats[i];
    const size_t block_bytes = ggml_type_size(f->type);
    const int64_t per_block = ggml_blck_size(f->type), n = per_block * f->n_blocks;
    uint8_t* blocks = malloc(block_bytes * f->n_blocks);
    float* values = malloc(sizeof(float) * n);
    for (size_t b = 0; b < block_bytes * f->n_blocks; ++b) blocks[b] = (uint8_t)next_random();
    for (int b = 0; b < f->n_blocks; ++b)
      for (int k = 0; k < 2; ++k) {
        if (f->f16_fields[k] < 0) continue;
        const float scale = ((float)(next_random() % 2001) - 1000.0f) / 4000.0f;  // in [-0.25, 0.25]
        const ggml_fp16_t h = ggml_fp32_to_fp16(scale);
        memcpy(blocks + b * block_bytes + f->f16_fields[k], &h, 2);
      }
    ggml_get_type_traits(f->type)->to_float(blocks, values, n);
    write_file(argv[1], f->name, "blocks.bin", blocks, block_bytes * f->n_blocks);
    write_file(argv[1], f->name, "values.bin", values, sizeof(float) * n);
    free(blocks);
    free(values);
  }
  return 0;
}
