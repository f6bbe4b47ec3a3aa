// Checkpoints written by transformers itself (scripts/oracle/loaders.py on the oracle
// machine): hark's HF loader must read them and map every tensor to the right internal name.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "loader_test_util.h"
#include "model/loaders/names.h"
#include "model/loaders/npz.h"

namespace hark::loaders {
namespace {

std::string golden_dir() { return test::data_path("golden/loaders"); }

TEST(RealFiles, TransformersShardedCheckpointMatchesItsStateDict) {
  if (!std::filesystem::exists(golden_dir() + "/reference.npz"))
    GTEST_SKIP() << "tests/data/golden/loaders/ absent: run scripts/oracle/loaders.py on the oracle machine";
  const auto ckpt = load_checkpoint(golden_dir() + "/hf");
  EXPECT_EQ(ckpt->format, CheckpointFormat::HuggingFace);
  EXPECT_EQ(ckpt->dtype, DType::F16);
  EXPECT_EQ(ckpt->hparams.n_audio_state, 16);
  EXPECT_EQ(ckpt->hparams.n_text_layer, 2);
  std::map<std::string, Tensor> reference;
  for (auto& [name, t] : read_npz(golden_dir() + "/reference.npz")) reference[name] = t;
  // Every reference tensor is a Whisper weight hark knows...
  for (const auto& [name, t] : reference) EXPECT_TRUE(hf_to_internal(name).has_value()) << name;
  // ...and every internal tensor holds exactly the reference's bytes.
  for (const auto& [name, shape] : expected_tensors(ckpt->hparams)) {
    const std::string hf = internal_to_hf(name);
    ASSERT_TRUE(reference.count(hf)) << hf;
    const Tensor& want = reference.at(hf);
    const Tensor& got = ckpt->weights.get(name);
    ASSERT_EQ(got.shape(), want.shape()) << name;
    ASSERT_EQ(got.dtype(), want.dtype()) << name;
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0) << name;
  }
  if (ckpt->generation_config.contains("alignment_heads")) {
    EXPECT_EQ(ckpt->alignment_heads, (AlignmentHeads{{1, 0}, {1, 1}}));
  }
}

}  // namespace
}  // namespace hark::loaders
