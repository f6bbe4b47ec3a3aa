// Model memory of a q8_0 file: after a window is encoded and decoded, the resident pages
// of the file's mapping, plus every tensor the loader copied and every fp32 copy the
// backend made, stay within 1.1 × the file's size (the quantized blocks are read in place,
// never widened or copied).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/cpu/cpu_backend.h"
#include "model/loaders/loaders.h"
#include "model/synthetic.h"
#include "model/whisper_model.h"
#include "test_support.h"

namespace hark {
namespace {

// The address range and resident bytes of this process's mapping of `path`
// (/proc/self/smaps).
struct Mapping {
  uintptr_t begin = 0, end = 0;
  size_t rss = 0;
};

Mapping mapping_of(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Mapping m;
  bool ours = false;
  while (std::getline(smaps, line)) {
    if (line.empty()) continue;
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') != std::string::npos &&
        line.find(':') > line.find(' ')) {  // a new mapping: "begin-end perms offset dev inode path"
      ours = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
      if (ours) {
        m.begin = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
        m.end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
      }
    } else if (ours && line.rfind("Rss:", 0) == 0) {
      m.rss = std::stoull(line.substr(4)) * 1024;
    }
  }
  return m;
}

// One window encoded and a few tokens decoded from a q8_0 file of the synthetic `size`
// weights; the model's bytes (resident mapping, loader copies, backend caches) against
// the file's.
void expect_q8_0_model_within_ten_percent_of_its_file(const std::string& size) {
  const HParams hp = hparams_for_size(size);
  const std::string file = test::temp_dir("q8-memory-" + size) + "/ggml-" + size + "-q8_0.bin";
  loaders::save_ggml(make_synthetic_checkpoint(hp), file, DType::Q8_0);
  const double file_bytes = static_cast<double>(std::filesystem::file_size(file));

  auto checkpoint = load_checkpoint(file);
  auto backend = std::make_shared<CpuBackend>(2, DType::F16);
  WhisperModel model(checkpoint, backend);
  auto audio = model.prepare_audio(Tensor::zeros({80, 3000}));
  auto state = model.new_state(audio);
  const std::vector<int32_t> tokens = {50258, 50259, 50359, 50363};
  model.decode(*state, tokens, 4);

  const Mapping mapping = mapping_of(std::filesystem::canonical(file).string());
  ASSERT_GT(mapping.end, mapping.begin) << "no mapping of " << file;
  double copies = 0;  // tensors the loader copied out of the mapping (unaligned f32/f16)
  int quantized_views = 0;
  for (const auto& name : checkpoint->weights.names()) {
    const Tensor& t = checkpoint->weights.get(name);
    const auto p = reinterpret_cast<uintptr_t>(t.raw());
    const bool view = p >= mapping.begin && p < mapping.end;
    quantized_views += view && dtype_is_quantized(t.dtype());
    if (!view) copies += static_cast<double>(t.nbytes());
  }
  const double cached = static_cast<double>(backend->cached_weight_bytes());
  const double total = static_cast<double>(mapping.rss) + copies + cached;
  ::testing::Test::RecordProperty("model_bytes_over_file", std::to_string(total / file_bytes));
  // the token embedding and every matrix (6 per encoder layer, 10 per decoder layer), in place
  EXPECT_EQ(quantized_views, 1 + hp.n_audio_layer * 6 + hp.n_text_layer * 10);
  EXPECT_LE(total, 1.1 * file_bytes) << "mapping " << mapping.rss << " copies " << copies << " backend " << cached
                                     << " file " << file_bytes;
  std::printf("q8_0 %s: mapping %.1f MB resident, copies %.1f MB, backend %.1f MB, file %.1f MB -> %.3f x\n",
              size.c_str(), mapping.rss / 1e6, copies / 1e6, cached / 1e6, file_bytes / 1e6, total / file_bytes);
}

TEST(QuantizedMemory, Q8_0ModelStaysWithinTenPercentOfItsFile) {
  expect_q8_0_model_within_ten_percent_of_its_file("tiny");
}

// base: a 80 MB file quantized and a window encoded (seconds; longer under the sanitizers).
TEST(QuantizedMemory, Q8_0BaseModelStaysWithinTenPercentOfItsFile) {
  if (!std::getenv("HARK_PARITY_LARGE")) GTEST_SKIP() << "base runs with HARK_PARITY_LARGE=1";
  expect_q8_0_model_within_ten_percent_of_its_file("base");
}

}  // namespace
}  // namespace hark
