#include "model/loaders/safetensors.h"

#include <gtest/gtest.h>

#include "loader_test_util.h"

namespace hark::loaders {
namespace {

using test::expect_error;
using test::safetensors_image;

SafetensorsHeader parse(const std::string& image) {
  return parse_safetensors_header(reinterpret_cast<const unsigned char*>(image.data()), image.size(), "test.safetensors");
}

std::string floats(std::initializer_list<float> values) {
  std::string s;
  for (float v : values) s.append(reinterpret_cast<const char*>(&v), 4);
  return s;
}

TEST(Safetensors, ParsesEntriesMetadataAndOffsets) {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},"q":{"dtype":"U32","shape":[1],"data_offsets":[22,26]}})";
  const auto h = parse(safetensors_image(header, std::string(26, '\0')));
  ASSERT_EQ(h.entries.size(), 3u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.data_start, 8 + header.size());
  EXPECT_EQ(h.entries[0].name, "a");
  EXPECT_EQ(h.entries[0].shape, (Shape{2, 2}));
  EXPECT_EQ(h.entries[0].offset, h.data_start);
  EXPECT_EQ(h.entries[1].dtype, DType::BF16);
  EXPECT_EQ(h.entries[1].offset, h.data_start + 16);
  EXPECT_FALSE(h.entries[2].dtype.has_value());  // U32: known size, not computable
  EXPECT_EQ(h.entries[2].dtype_name, "U32");
}

TEST(Safetensors, WriteThenReadIsExactAndZeroCopy) {
  const std::string dir = test::temp_dir("st-roundtrip");
  Tensor a = Tensor::from_vector({1.5f, -2.0f, 3.25f, 1e-7f, 0.0f, -0.0f}, {2, 3});
  write_safetensors(dir + "/x.safetensors", {{"a", a}, {"b", a.reshape({6})}}, DType::F32);
  const auto file = SafetensorsFile::open(dir + "/x.safetensors");
  ASSERT_EQ(file.entries().size(), 2u);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  const Tensor back = file.tensor(file.entries()[0]);
  EXPECT_EQ(back.shape(), (Shape{2, 3}));
  EXPECT_EQ(back.to_vector(), a.to_vector());
  // The data section starts 8-byte aligned, so f32 tensors are views into the mapping.
  EXPECT_EQ(file.entries()[0].offset % 8, 0u);
  const Tensor again = file.tensor(file.entries()[0]);
  EXPECT_EQ(back.raw(), again.raw()) << "tensors should be views into the mapped file, not copies";
}

TEST(Safetensors, HalfAndBf16StorageRoundToNearest) {
  const std::string dir = test::temp_dir("st-half");
  Tensor a = Tensor::from_vector({1.0f / 3, 1000.5f, -7.75f}, {3});
  for (DType dt : {DType::F16, DType::BF16}) {
    write_safetensors(dir + "/h.safetensors", {{"a", a}}, dt);
    const auto file = SafetensorsFile::open(dir + "/h.safetensors");
    const Tensor t = file.tensor(file.entries()[0]);
    EXPECT_EQ(t.dtype(), dt);
    for (int i = 0; i < 3; ++i) {
      const float v = a.data<float>()[i];
      const float want = dt == DType::F16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
      EXPECT_EQ(t.to_vector()[i], want);
    }
  }
}

TEST(Safetensors, MisalignedTensorsAreCopiedNotViewed) {
  // An F16 of 1 element then an F32: the F32 starts at an odd 2-byte offset.
  const std::string header =
      R"({"h":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"f":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})";
  std::string padded = header;
  while ((8 + padded.size()) % 8) padded += ' ';
  const std::string dir = test::temp_dir("st-misaligned");
  test::write_binary(dir + "/m.safetensors", safetensors_image(padded, std::string(2, '\0') + floats({2.5f})));
  const auto file = SafetensorsFile::open(dir + "/m.safetensors");
  ASSERT_EQ(file.entries()[0].name, "f");  // entries come sorted by name
  const Tensor f = file.tensor(file.entries()[0]);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.raw()) % 4, 0u);
  EXPECT_EQ(f.to_vector()[0], 2.5f);
}

TEST(Safetensors, MalformedHeadersAreClearErrors) {
  const auto image = [](const std::string& h, size_t body) { return safetensors_image(h, std::string(body, '\0')); };
  const auto fails = [&](const std::string& bytes, const std::string& fragment) {
    expect_error([&] { parse(bytes); }, ErrorCode::ModelFormat, {"test.safetensors", fragment});
  };
  fails("abc", "too short");
  fails(test::u64_le(1000) + "{}", "header length 1000 exceeds the file size");
  fails(test::u64_le(~0ull) + "{}", "exceeds the file size");
  fails(image("{not json", 0), "not valid JSON");
  fails(image("[1,2]", 0), "not a JSON object");
  fails(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4), "fall outside");
  fails(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,4]}})", 16), "fall outside");
  fails(image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "needs 12");
  fails(image(R"({"a":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype 'F99'");
  fails(image(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "missing dtype");
  fails(image(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "negative");
  fails(image(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8), "non-integer");
  fails(image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "data_offsets");
  fails(image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8), "overflows");
  fails(image(R"({"a":{"dtype":"F32","shape":[0,1099511627777],"data_offsets":[0,0]}})", 0), "absurd");
  fails(image(R"({"a":5})", 0), "not an object");
}

TEST(Safetensors, NonFloatTensorIsUnsupportedNamingIt) {
  const std::string dir = test::temp_dir("st-u32");
  const std::string header = R"({"w.scales":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}})";
  test::write_binary(dir + "/q.safetensors", safetensors_image(header, std::string(4, '\0')));
  const auto file = SafetensorsFile::open(dir + "/q.safetensors");
  expect_error([&] { file.tensor(file.entries()[0]); }, ErrorCode::UnsupportedFormat, {"w.scales", "U32"});
}

TEST(Safetensors, MissingFileIsNotFound) {
  expect_error([] { SafetensorsFile::open("/nonexistent/dir/model.safetensors"); }, ErrorCode::NotFound,
               {"/nonexistent/dir/model.safetensors"});
}

}  // namespace
}  // namespace hark::loaders
