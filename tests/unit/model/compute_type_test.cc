// --compute-type: names, per-device checks, and what each choice does to a checkpoint's
// weights at load.
#include <gtest/gtest.h>

#include "core/backend.h"
#include "model/compute_type.h"
#include "model/synthetic.h"

namespace hark {
namespace {

// Width 64 (whole q8_0 blocks), real vocabulary, one layer each side.
std::shared_ptr<const Checkpoint> small_checkpoint(DType dtype = DType::F32) {
  HParams hp;
  hp.n_audio_state = hp.n_text_state = 64;
  hp.n_audio_head = hp.n_text_head = 2;
  hp.n_audio_layer = hp.n_text_layer = 1;
  hp.n_audio_ctx = 12;
  hp.n_text_ctx = 8;
  return std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hp, dtype));
}

void expect_invalid(const std::function<void()>& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(ComputeType, ParsesEveryNameAndRefusesOthers) {
  EXPECT_FALSE(compute_type_named("auto").weights.has_value());
  EXPECT_EQ(compute_type_named("float32").name, "f32");
  const ComputeType int8 = compute_type_named("int8");
  EXPECT_EQ(int8.weights, DType::Q8_0);
  EXPECT_EQ(int8.cross_kv, DType::Q8_0);
  EXPECT_FALSE(int8.requantize);
  EXPECT_EQ(compute_type_named("int8_float16").cross_kv, DType::F16);
  EXPECT_EQ(compute_type_named("int8_float32").cross_kv, DType::F32);
  const ComputeType q4k = compute_type_named("Q4_K");
  EXPECT_EQ(q4k.name, "q4_k");
  EXPECT_EQ(q4k.weights, DType::Q4_K);
  EXPECT_TRUE(q4k.requantize);
  expect_invalid([] { compute_type_named("int4"); }, "int8_float32");
  const ComputeType fp8 = compute_type_named("float8");
  EXPECT_EQ(fp8.name, "fp8");
  EXPECT_FALSE(fp8.weights.has_value()) << "fp8 quantizes on the GPU, at first use; the checkpoint stays as stored";
  EXPECT_FALSE(fp8.cpu);
  EXPECT_TRUE(fp8.gpu);
}

TEST(ComputeType, EachDeviceRefusesWhatItCannotRun) {
  expect_invalid([] { check_compute_type(compute_type_named("int8"), Device::Cuda); }, "runs on the CPU only");
  expect_invalid([] { check_compute_type(compute_type_named("q5_0"), Device::Cuda); }, "runs on the CPU only");
  expect_invalid([] { check_compute_type(compute_type_named("bf16"), Device::Cpu); }, "GPU compute type");
  expect_invalid([] { check_compute_type(compute_type_named("f16"), Device::Cpu); }, "GPU compute type");
  check_compute_type(compute_type_named("int8"), Device::Cpu);
  check_compute_type(compute_type_named("auto"), Device::Cuda);
  // The backends' own check of the activation dtype agrees.
  EXPECT_EQ(parse_compute_type("q4_k", Device::Cpu), DType::F32);
  expect_invalid([] { parse_compute_type("int8", Device::Cuda); }, "CPU only");
  // fp8: the GPU's (f16 activations there), refused on the CPU by both checks.
  expect_invalid([] { check_compute_type(compute_type_named("fp8"), Device::Cpu); }, "GPU compute type");
  expect_invalid([] { parse_compute_type("fp8", Device::Cpu); }, "on the CPU use");
  EXPECT_EQ(parse_compute_type("fp8", Device::Cuda), DType::F16);
  EXPECT_TRUE(compute_type_fp8("fp8"));
  EXPECT_FALSE(compute_type_fp8("f16"));
}

TEST(ComputeType, Int8QuantizesTheMatricesAtLoad) {
  const auto fp32 = small_checkpoint();
  const ComputeType ct = resolve_compute_type(compute_type_named("int8"), *fp32, Device::Cpu);
  const auto q = apply_compute_type(fp32, ct, Device::Cpu);
  EXPECT_EQ(q->weights.get("decoder.blocks.0.mlp.0.weight").dtype(), DType::Q8_0);
  EXPECT_EQ(q->weights.get("decoder.token_embedding.weight").dtype(), DType::Q8_0);
  EXPECT_EQ(q->weights.get("decoder.blocks.0.mlp.0.bias").dtype(), DType::F32);
  EXPECT_EQ(q->weights.get("encoder.positional_embedding").dtype(), DType::F32);
  EXPECT_EQ(q->weights.get("encoder.conv1.weight").dtype(), DType::F32);  // 3-D: kept
  EXPECT_EQ(q->dtype, DType::Q8_0);
  EXPECT_EQ(describe(ct, *q, ct.cross_kv), "int8 (weights q8_0, cross K/V q8_0)");
  // What a backend really keeps (a GPU: its activation dtype) is named where it is given.
  EXPECT_EQ(describe(compute_type_named("f16"), *fp32, DType::F16), "f16 (weights f32 as stored, cross K/V f16)");
  // The source checkpoint is untouched.
  EXPECT_EQ(fp32->weights.get("decoder.blocks.0.mlp.0.weight").dtype(), DType::F32);
}

TEST(ComputeType, AutoKeepsWeightsAndPicksTheCrossKvStorage) {
  const auto fp32 = small_checkpoint();
  const ComputeType plain = resolve_compute_type(compute_type_named("auto"), *fp32, Device::Cpu);
  EXPECT_EQ(plain.cross_kv, DType::F32);
  EXPECT_EQ(apply_compute_type(fp32, plain, Device::Cpu), fp32);  // nothing to change: the same object
  const auto q = apply_compute_type(fp32, resolve_compute_type(compute_type_named("q8_0"), *fp32, Device::Cpu),
                                    Device::Cpu);
  EXPECT_EQ(resolve_compute_type(compute_type_named("auto"), *q, Device::Cpu).cross_kv, DType::Q8_0);
}

TEST(ComputeType, F32AndTheGpuWidenQuantizedWeights) {
  const auto fp32 = small_checkpoint();
  const auto q = apply_compute_type(fp32, compute_type_named("q5_0"), Device::Cpu);
  ASSERT_EQ(q->weights.get("decoder.blocks.0.attn.query.weight").dtype(), DType::Q5_0);
  const auto widened = apply_compute_type(q, compute_type_named("f32"), Device::Cpu);
  const Tensor& w = widened->weights.get("decoder.blocks.0.attn.query.weight");
  EXPECT_EQ(w.dtype(), DType::F32);
  const std::vector<float> a = w.to_vector(), b = q->weights.get("decoder.blocks.0.attn.query.weight").to_vector();
  EXPECT_EQ(a, b);  // exactly the dequantized values
  EXPECT_EQ(apply_compute_type(q, compute_type_named("auto"), Device::Cuda)
                ->weights.get("decoder.blocks.0.attn.query.weight")
                .dtype(),
            DType::F16);
  // A ggml type requested explicitly requantizes other quantized weights; int8 keeps them.
  EXPECT_EQ(apply_compute_type(q, compute_type_named("q8_0"), Device::Cpu)
                ->weights.get("decoder.blocks.0.attn.query.weight")
                .dtype(),
            DType::Q8_0);
  EXPECT_EQ(apply_compute_type(q, compute_type_named("int8"), Device::Cpu)
                ->weights.get("decoder.blocks.0.attn.query.weight")
                .dtype(),
            DType::Q5_0);
}

}  // namespace
}  // namespace hark
