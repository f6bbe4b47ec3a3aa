// whisper.cpp's ggml file: magic 0x67676d6c, 11 int32 hyper-parameters (the last is the
// ftype), the mel filter bank, the vocabulary, then one record per tensor: n_dims,
// name length, ggml type, dims innermost-first, name, raw data. Tensor names are already
// the internal (OpenAI) names; the only layout quirk is conv biases stored as [d, 1].
#include <cstring>
#include <fstream>
#include <map>

#include "core/assets.h"
#include "core/quant_format.h"
#include "model/loaders/loaders.h"
#include "model/loaders/npz.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

constexpr uint32_t kGgmlMagic = 0x67676d6c;  // "ggml"
constexpr uint32_t kGgjtMagic = 0x67676a74;  // "ggjt" (llama.cpp's later container)
constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF"

[[noreturn]] void bad_ggml(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::ModelFormat, "[ggml] '" + what + "': " + why);
}

// Sequential, bounds-checked reads over the mapped file.
struct Cursor {
  const unsigned char* data;
  size_t size;
  size_t pos;
  const std::string& what;

  const unsigned char* take(size_t n, const char* reading) {
    if (n > size - pos)
      bad_ggml(what, "file ends at byte " + std::to_string(size) + " while reading " + reading + " (truncated file)");
    const unsigned char* p = data + pos;
    pos += n;
    return p;
  }
  int32_t i32(const char* reading) {
    int32_t v;
    std::memcpy(&v, take(4, reading), 4);
    return v;
  }
  int32_t bounded(const char* reading, int32_t lo, int32_t hi) {
    const int32_t v = i32(reading);
    if (v < lo || v > hi)
      bad_ggml(what, std::string(reading) + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "] (corrupt file?)");
    return v;
  }
};

const char* ggml_type_name(int32_t type) {
  static const std::map<int32_t, const char*> kNames = {
      {2, "q4_0"}, {3, "q4_1"}, {6, "q5_0"}, {7, "q5_1"}, {8, "q8_0"}, {9, "q8_1"}, {10, "q2_k"},
      {11, "q3_k"}, {12, "q4_k"}, {13, "q5_k"}, {14, "q6_k"}, {15, "q8_k"}, {30, "bf16"}};
  auto it = kNames.find(type);
  return it == kNames.end() ? "an unknown type" : it->second;
}

// ggml_type of a tensor record → DType; UnsupportedFormat for types whisper.cpp does not
// write into Whisper files.
DType record_dtype(int32_t type, const std::string& what, const std::string& name) {
  if (type == 0) return DType::F32;
  if (type == 1) return DType::F16;
  if (auto q = quant::from_ggml_type(type)) return *q;
  throw Error(ErrorCode::UnsupportedFormat, "[ggml] '" + what + "': tensor '" + name + "' is stored as " +
                                                ggml_type_name(type) + "; hark reads f32, f16, q4_0, q4_1, q5_0, q5_1, "
                                                "q8_0 and q2_k-q6_k (the types whisper-quantize writes)");
}

// The header's ftype: 0 (f32), 1 (f16) or one of whisper-quantize's, plus 1000 × the
// quantization version; block layouts are those of version 2 (ggml since May 2023).
void check_ftype(int32_t ftype, const std::string& what) {
  const int base = ftype % 1000, version = ftype / 1000;
  bool known = ftype >= 0 && (base == 0 || base == 1);
  for (const quant::BlockInfo& f : quant::formats()) known = known || (ftype >= 0 && base == f.ggml_ftype);
  if (!known)
    throw Error(ErrorCode::UnsupportedFormat, "[ggml] '" + what + "' has ftype " + std::to_string(ftype) +
                                                  ", which hark does not read (f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, "
                                                  "q2_k-q6_k)");
  if (base > 1 && version != 2)
    throw Error(ErrorCode::UnsupportedFormat, "[ggml] '" + what + "' was quantized with ggml quantization version " +
                                                  std::to_string(version) + " (ftype " + std::to_string(ftype) +
                                                  "), whose blocks differ from today's version 2: quantize the f16 "
                                                  "file again with a current whisper-quantize or `hark convert`");
}

bool squeezed_equal(const Shape& a, const Shape& b) {
  Shape sa, sb;
  for (auto d : a) if (d != 1) sa.push_back(d);
  for (auto d : b) if (d != 1) sb.push_back(d);
  return sa == sb;
}

// ggml's f16 layout keeps these small tensors in f32 (whisper.cpp allocates them so).
bool stays_f32(const std::string& name, const Shape& shape) {
  return shape.size() < 2 || name == "encoder.conv1.bias" || name == "encoder.conv2.bias" ||
         name == "encoder.positional_embedding" || name == "decoder.positional_embedding";
}

}  // namespace

bool looks_like_ggml(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  unsigned char m[4] = {0, 0, 0, 0};
  if (!f.read(reinterpret_cast<char*>(m), 4)) return false;
  const uint32_t magic = m[0] | (m[1] << 8) | (m[2] << 16) | (static_cast<uint32_t>(m[3]) << 24);
  return magic == kGgmlMagic || magic == kGgjtMagic || magic == kGgufMagic;
}

namespace {

GgmlHeader parse_header(const unsigned char* data, size_t size, const std::string& what) {
  Cursor c{data, size, 0, what};
  const uint32_t magic = static_cast<uint32_t>(c.i32("the magic number"));
  if (magic == kGgufMagic || magic == kGgjtMagic)
    throw Error(ErrorCode::UnsupportedFormat, "[ggml] '" + what + "' is a GGUF/ggjt file; hark reads whisper.cpp's "
                                                                  "ggml-*.bin files (magic 'ggml')");
  if (magic != kGgmlMagic) bad_ggml(what, "not a whisper.cpp ggml file (bad magic)");
  GgmlHeader h;
  HParams& hp = h.hparams;
  for (int* field : {&hp.n_vocab, &hp.n_audio_ctx, &hp.n_audio_state, &hp.n_audio_head, &hp.n_audio_layer,
                     &hp.n_text_ctx, &hp.n_text_state, &hp.n_text_head, &hp.n_text_layer, &hp.n_mels})
    *field = c.i32("hyper-parameters");
  hp.validate();
  h.ftype = c.i32("ftype");
  // Newer whisper.cpp files add 1000 × the quantization version to the ftype.
  check_ftype(h.ftype, what);

  const int32_t n_mel = c.bounded("mel filter rows", 1, 512), n_fft = c.bounded("mel filter columns", 1, 4096);
  h.mel_filters = Tensor::empty({n_mel, n_fft});
  std::memcpy(h.mel_filters.raw(), c.take(static_cast<size_t>(n_mel) * n_fft * 4, "mel filters"), h.mel_filters.nbytes());

  const int32_t n_tokens = c.bounded("vocabulary size", 0, 1 << 20);
  h.vocab.reserve(n_tokens);
  for (int32_t i = 0; i < n_tokens; ++i) {
    const int32_t len = c.bounded("token length", 0, 1 << 16);
    h.vocab.emplace_back(reinterpret_cast<const char*>(c.take(len, "vocabulary")), len);
  }
  h.tensors_offset = c.pos;
  return h;
}

}  // namespace

GgmlHeader read_ggml_header(const std::string& file) {
  auto mapped = MappedFile::open(file);
  return parse_header(mapped->data(), mapped->size(), file);
}

Checkpoint load_ggml(const std::string& file) {
  auto mapped = MappedFile::open(file);
  return read_ggml(mapped->data(), mapped->size(), mapped, file, mapped.get());
}

Checkpoint read_ggml(const unsigned char* data, size_t size, const std::shared_ptr<void>& keepalive,
                     const std::string& file, const MappedFile* mapping) {
  const GgmlHeader header = parse_header(data, size, file);
  if (header.tensors_offset == size)
    bad_ggml(file, "holds hyper-parameters, mel filters and a " + std::to_string(header.vocab.size()) +
                  "-token vocabulary but no tensor data (a whisper.cpp test file?); use a full ggml-<model>.bin");
  Checkpoint ckpt;
  ckpt.hparams = header.hparams;
  std::map<std::string, Shape> expected;
  for (auto& [name, shape] : expected_tensors(ckpt.hparams)) expected[name] = shape;

  Cursor c{data, size, header.tensors_offset, file};
  while (c.pos < c.size) {
    const int32_t n_dims = c.bounded("tensor rank", 1, 4);
    const int32_t name_len = c.bounded("tensor name length", 1, 1024);
    const int32_t type = c.i32("tensor type");
    Shape shape(n_dims);
    for (int i = n_dims - 1; i >= 0; --i) shape[i] = c.bounded("tensor dimension", 1, 1 << 30);
    const std::string name(reinterpret_cast<const char*>(c.take(name_len, "tensor name")), name_len);
    const DType dtype = record_dtype(type, file, name);
    const int64_t block = dtype_block_elems(dtype);
    if (shape.back() % block != 0)
      bad_ggml(file, "tensor '" + name + "' " + dtype_name(dtype) + shape_str(shape) + " has rows of " +
                    std::to_string(shape.back()) + " values, not whole blocks of " + std::to_string(block));
    // The most elements the rest of the file can hold; checked before each multiplication.
    const uint64_t room = (c.size - c.pos) / dtype_block_bytes(dtype) * static_cast<uint64_t>(block);
    uint64_t numel = 1;
    for (int64_t d : shape) {
      if (numel > room / static_cast<uint64_t>(d))
        bad_ggml(file, "tensor '" + name + "' " + dtype_name(dtype) + shape_str(shape) +
                      " runs past the end of the file (truncated?)");
      numel *= static_cast<uint64_t>(d);
    }
    const unsigned char* bytes = c.take(dtype_nbytes(dtype, static_cast<int64_t>(numel)), "tensor data");
    auto it = expected.find(name);
    if (it == expected.end()) continue;  // e.g. decoder.proj.weight from old converters
    // Conv biases are [d, 1] in ggml and the converters squeeze size-1 axes.
    if (shape != it->second && squeezed_equal(shape, it->second)) shape = it->second;
    if (ckpt.weights.has(name)) bad_ggml(file, "tensor '" + name + "' appears twice");
    ckpt.weights.add(name, view_or_copy(keepalive, bytes, shape, dtype, mapping));
  }
  ckpt.dtype = dominant_dtype(ckpt.weights);
  return ckpt;
}

namespace {

std::string base64_decode(const std::string& text, const std::string& what) {
  auto value = [&](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    throw Error(ErrorCode::ModelFormat, "[ggml] '" + what + "': invalid base64 token '" + text + "'");
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    if (ch == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(value(ch));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

// The BPE vocabulary by rank from the tiktoken file whisper.cpp expects for this model.
std::vector<std::string> tiktoken_vocab(const HParams& hp) {
  const std::string path = asset_path(hp.n_vocab == 51864 ? "gpt2.tiktoken" : "multilingual.tiktoken");
  std::ifstream f(path);
  std::vector<std::string> vocab;
  std::string token;
  long rank;
  while (f >> token >> rank) {
    if (rank < 0 || rank > (1 << 20)) throw Error(ErrorCode::ModelFormat, "[ggml] '" + path + "': bad rank");
    if (static_cast<size_t>(rank) >= vocab.size()) vocab.resize(rank + 1);
    vocab[rank] = base64_decode(token, path);
  }
  return vocab;
}

Tensor mel_filters_for(const HParams& hp) {
  const std::string key = "mel_" + std::to_string(hp.n_mels);
  for (auto& [name, t] : read_npz(asset_path("mel_filters.npz")))
    if (name == key) return cast_tensor(t, DType::F32);
  throw Error(ErrorCode::NotFound, "[ggml] mel_filters.npz has no '" + key + "' filter bank");
}

}  // namespace

DType ggml_storage_dtype(const std::string& name, const Shape& shape, DType dtype) {
  if (dtype == DType::F32 || stays_f32(name, shape)) return DType::F32;
  if (dtype == DType::F16 || shape.size() != 2) return DType::F16;  // whisper-quantize: 2-D tensors only
  if (shape.back() % dtype_block_elems(dtype) == 0) return dtype;
  // k-quant rows must be whole super-blocks of 256 (tiny's 384 is not): the nearest block
  // type of 32 takes over, as llama.cpp's quantizer does.
  const DType fallback = dtype == DType::Q2_K || dtype == DType::Q3_K ? DType::Q4_0
                         : dtype == DType::Q4_K                       ? DType::Q5_0
                         : dtype == DType::Q5_K                       ? DType::Q5_1
                                                                      : DType::Q8_0;
  return shape.back() % dtype_block_elems(fallback) == 0 ? fallback : DType::F16;
}

void save_ggml(const Checkpoint& ckpt, const std::string& file, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F16 && !dtype_is_quantized(dtype))
    throw Error(ErrorCode::InvalidArgument, std::string("[convert] ggml files hold f32, f16 or quantized weights, not ") +
                                                dtype_name(dtype) + ": choose --dtype f16, f32 or q8_0, q5_0, ...");
  const HParams& hp = ckpt.hparams;
  // whisper.cpp gives every matrix the one type the ftype names, so a file must not mix
  // types, and its k-quant matrices need rows of whole super-blocks of 256.
  for (const auto& [name, shape] : expected_tensors(hp)) {
    const DType stored = ggml_storage_dtype(name, shape, dtype);
    if (dtype_is_quantized(dtype) && shape.size() == 2 && stored != dtype && dtype_is_quantized(stored))
      throw Error(ErrorCode::InvalidArgument,
                  std::string("[convert] whisper.cpp's ") + dtype_name(dtype) + " files need matrices whose rows are "
                  "whole super-blocks of 256 values; '" + name + "' has rows of " + std::to_string(shape.back()) +
                  ": choose q8_0, q5_0, q5_1, q4_0 or q4_1 for this model (hark itself can run " + dtype_name(dtype) +
                  " with --compute-type " + dtype_name(dtype) + ")");
  }
  const Tensor mel = mel_filters_for(hp);
  const std::vector<std::string> vocab = tiktoken_vocab(hp);
  write_file_atomically(file, [&](std::FILE* f) {
    auto i32 = [&](int64_t v) {
      const int32_t x = static_cast<int32_t>(v);
      write_bytes(f, &x, 4, file);
    };
    i32(kGgmlMagic);
    for (int v : {hp.n_vocab, hp.n_audio_ctx, hp.n_audio_state, hp.n_audio_head, hp.n_audio_layer, hp.n_text_ctx,
                  hp.n_text_state, hp.n_text_head, hp.n_text_layer, hp.n_mels})
      i32(v);
    // Quantized files carry whisper-quantize's ftype plus 1000 × quantization version 2.
    i32(dtype == DType::F32 ? 0 : dtype == DType::F16 ? 1 : 2000 + quant::block_info(dtype).ggml_ftype);
    i32(mel.dim(0));
    i32(mel.dim(1));
    write_bytes(f, mel.raw(), mel.nbytes(), file);
    i32(static_cast<int64_t>(vocab.size()));
    for (const auto& token : vocab) {
      i32(static_cast<int64_t>(token.size()));
      write_bytes(f, token.data(), token.size(), file);
    }
    for (const auto& [name, shape] : expected_tensors(hp)) {
      const DType tdtype = ggml_storage_dtype(name, shape, dtype);
      const Tensor t = cast_tensor(ckpt.weights.get(name, shape), tdtype);
      const bool conv_bias = name == "encoder.conv1.bias" || name == "encoder.conv2.bias";
      const Shape stored = conv_bias ? Shape{shape[0], 1} : shape;
      i32(static_cast<int64_t>(stored.size()));
      i32(static_cast<int64_t>(name.size()));
      i32(tdtype == DType::F32 ? 0 : tdtype == DType::F16 ? 1 : quant::block_info(tdtype).ggml_type);
      for (auto d = stored.rbegin(); d != stored.rend(); ++d) i32(*d);
      write_bytes(f, name.data(), name.size(), file);
      write_bytes(f, t.raw(), t.nbytes(), file);
    }
  });
}

}  // namespace hark::loaders
