// The synthetic checkpoint formula must match scripts/oracle/synthetic.py bit for bit;
// the expected values below were printed by that script.
#include <gtest/gtest.h>

#include "model/synthetic.h"

namespace hark {

TEST(Synthetic, MatchesThePythonFormula) {
  HParams hp = hparams_for_size("tiny");
  Checkpoint ckpt = make_synthetic_checkpoint(hp);
  const float* q = ckpt.weights.get("encoder.blocks.0.attn.query.weight").data<float>();
  EXPECT_FLOAT_EQ(q[0], -0.08493787f);
  EXPECT_FLOAT_EQ(q[1], -0.02844815f);
  EXPECT_FLOAT_EQ(q[3], -0.03085578f);
  const float* ln = ckpt.weights.get("decoder.blocks.1.mlp_ln.weight").data<float>();
  EXPECT_FLOAT_EQ(ln[0], 0.9843973f);
  EXPECT_FLOAT_EQ(ln[3], 1.0934855f);
  const float* pos = ckpt.weights.get("encoder.positional_embedding").data<float>();
  EXPECT_FLOAT_EQ(pos[7 * 384 + 0], 0.6569866f);
  EXPECT_FLOAT_EQ(pos[7 * 384 + 5], -0.7053311f);
  EXPECT_FLOAT_EQ(pos[7 * 384 + 200], 0.04706559f);
}

TEST(Synthetic, EveryTensorHasItsExpectedShape) {
  HParams hp = hparams_for_size("tiny");
  Checkpoint ckpt = make_synthetic_checkpoint(hp, DType::F16);
  EXPECT_NO_THROW(check_weights(ckpt.weights, hp));
  EXPECT_EQ(ckpt.weights.get("decoder.token_embedding.weight").dtype(), DType::F16);
}

TEST(Synthetic, MisShapedTensorIsNamedInTheError) {
  HParams hp = hparams_for_size("tiny");
  Checkpoint ckpt = make_synthetic_checkpoint(hp);
  ckpt.weights.add("encoder.conv1.bias", Tensor::zeros({7}));
  try {
    check_weights(ckpt.weights, hp);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::ModelFormat);
    EXPECT_NE(std::string(e.what()).find("encoder.conv1.bias"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[7]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[384]"), std::string::npos);
  }
}

TEST(Synthetic, UnknownSizeIsAnError) { EXPECT_THROW(hparams_for_size("gigantic"), Error); }

}  // namespace hark
