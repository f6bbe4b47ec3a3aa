// Small helpers the checkpoint loaders and writers share: dtype casts, the convolution
// layout change MLX needs, zero-copy views into mapped files, JSON files and the
// generation_config.json extras.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "core/tensor.h"
#include "model/checkpoint.h"

namespace hark::loaders {

// `t` itself when it already has `dtype`, else an owned converted copy (round to nearest).
Tensor cast_tensor(const Tensor& t, DType dtype);

// A view into `file` when `data` is aligned for `dtype` (no copy, pages stay shared);
// otherwise an owned copy, so compute kernels never see misaligned floats.
// A copy's pages of `mapping` (when given) leave the resident set.
Tensor view_or_copy(const std::shared_ptr<void>& file, const unsigned char* data, Shape shape, DType dtype,
                    const MappedFile* mapping = nullptr);

// Swaps the last two axes of a rank-3 tensor into owned memory: PyTorch/OpenAI conv1d
// weights are [out, in, k], MLX stores them as [out, k, in].
Tensor swap_last_axes(const Tensor& t);

// The dtype holding the most elements among the weights (what Checkpoint::dtype reports).
DType dominant_dtype(const Weights& weights);

// Parses a JSON file; NotFound when absent, ModelFormat (naming the file) when invalid.
nlohmann::json read_json_file(const std::string& path);
void write_text_file(const std::string& path, const std::string& text);

// Writes `path` through `writer` into a temporary sibling renamed into place on success,
// so an interrupted conversion never leaves a truncated checkpoint behind.
void write_file_atomically(const std::string& path, const std::function<void(std::FILE*)>& writer);
void write_bytes(std::FILE* f, const void* data, size_t size, const std::string& path);

// Reads <dir>/generation_config.json when present into ckpt.generation_config and
// ckpt.alignment_heads ([[layer, head], ...], checked against the hyper-parameters).
void read_generation_config(const std::string& dir, Checkpoint& ckpt);
// Writes generation_config.json when the checkpoint carries one or names alignment heads.
void write_generation_config(const std::string& dir, const Checkpoint& ckpt);

// Creates `dir` (and parents); Io error naming it when impossible.
void make_directory(const std::string& dir);
bool file_exists(const std::string& path);

}  // namespace hark::loaders
