// One loader (and writer) per checkpoint format; each maps its own tensor names and
// layouts onto the internal naming documented in model/weights.h.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "model/checkpoint.h"

namespace hark::loaders {

bool looks_like_hf(const std::string& dir);    // config.json + model.safetensors[.index.json]
bool looks_like_mlx(const std::string& dir);   // config.json (n_mels...) + weights.{safetensors,npz}
bool looks_like_ggml(const std::string& file); // whisper.cpp magic

Checkpoint load_hf(const std::string& dir);
Checkpoint load_mlx(const std::string& dir);
Checkpoint load_ggml(const std::string& file);
// A whole ggml file held in memory that `keepalive` owns (the fuzzer; load_ggml maps the
// file and calls this). Tensors are views into `data` where its alignment allows.
Checkpoint read_ggml(const unsigned char* data, size_t size, const std::shared_ptr<void>& keepalive,
                     const std::string& what, const MappedFile* mapping = nullptr);

void save_hf(const Checkpoint& ckpt, const std::string& dir, DType dtype);
void save_mlx(const Checkpoint& ckpt, const std::string& dir, DType dtype);
void save_ggml(const Checkpoint& ckpt, const std::string& file, DType dtype);

// Hugging Face layout split into shards of at most `max_shard_bytes` each
// (model-0000i-of-0000n.safetensors + model.safetensors.index.json); 0 writes one file.
void save_hf(const Checkpoint& ckpt, const std::string& dir, DType dtype, size_t max_shard_bytes);

// MLX layout with weights.safetensors (the default) or the older weights.npz.
enum class MlxContainer { Safetensors, Npz };
void save_mlx(const Checkpoint& ckpt, const std::string& dir, DType dtype, MlxContainer container);

// How tensor `name` is stored when asked for `dtype`: whisper-quantize's rule (2-D tensors
// quantized, except the positional embeddings), else the f16 file's rule. For rows that
// are not whole k-quant super-blocks this names a 32-block type (--compute-type does so;
// save_ggml refuses instead, since whisper.cpp reads one type for all matrices).
DType ggml_storage_dtype(const std::string& name, const Shape& shape, DType dtype);

// What precedes the tensors in a whisper.cpp file.
struct GgmlHeader {
  HParams hparams;
  int ftype = 0;                   // 0 = f32, 1 = f16, else 1000 × version + whisper-quantize's ftype
  Tensor mel_filters;              // [n_mels, n_fft / 2 + 1] f32
  std::vector<std::string> vocab;  // byte strings by token id
  size_t tensors_offset = 0;       // where the first tensor record starts
};
// Parses and bounds-checks the header; ModelFormat / UnsupportedFormat on bad files.
GgmlHeader read_ggml_header(const std::string& file);

}  // namespace hark::loaders
