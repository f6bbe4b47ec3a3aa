// VadStream against the batch path: audio cut into random pieces (empty, tiny, odd, larger
// than one block) gives the batch probabilities within 1e-6 and the same segments.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "hark/error.h"
#include "vad/stream.h"
#include "vad_test_util.h"

namespace hark::vad {
namespace {

void expect_stream_equals_batch(const std::vector<float>& audio, uint32_t seed, int max_piece) {
  const std::vector<float> batch = test::model().speech_probabilities(audio);
  const auto batch_segments = speech_segments_from_probabilities(batch, static_cast<int64_t>(audio.size()));
  VadStream stream(test::model());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> piece(0, max_piece);
  size_t pos = 0;
  while (pos < audio.size()) {
    const size_t n = std::min<size_t>(piece(rng), audio.size() - pos);
    const int64_t before = static_cast<int64_t>(stream.probabilities().size());
    const int64_t produced = stream.feed({audio.data() + pos, n});
    pos += n;
    EXPECT_EQ(produced, static_cast<int64_t>(stream.probabilities().size()) - before);
    EXPECT_EQ(stream.probabilities().size(), pos / kChunkSamples);
  }
  stream.finish();
  stream.finish();  // idempotent
  ASSERT_EQ(stream.probabilities().size(), batch.size());
  double worst = 0;
  for (size_t i = 0; i < batch.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(stream.probabilities()[i]) - batch[i]));
  EXPECT_LE(worst, 1e-6) << "seed " << seed;
  EXPECT_EQ(stream.samples_seen(), static_cast<int64_t>(audio.size()));
  EXPECT_EQ(stream.segments(), batch_segments) << "seed " << seed;
}

TEST(VadStream, RandomPiecesEqualBatch) {
  const std::vector<float> jfk = test::read_wav16k("audio/jfk.wav");
  ASSERT_FALSE(jfk.empty());
  expect_stream_equals_batch(jfk, 1, 700);     // mostly sub-chunk pieces
  expect_stream_equals_batch(jfk, 2, 60000);   // pieces spanning several blocks
  std::vector<float> odd(jfk.begin(), jfk.begin() + 50000 + 77);
  expect_stream_equals_batch(odd, 3, 1500);    // trailing partial chunk
}

TEST(VadStream, MidStreamSegmentsAreThoseOfThePrefix) {
  const std::vector<float> jfk = test::read_wav16k("audio/jfk.wav");
  ASSERT_FALSE(jfk.empty());
  VadStream stream(test::model());
  const size_t prefix = 300 * kChunkSamples;
  stream.feed({jfk.data(), prefix});
  const std::vector<float> probs = stream.probabilities();
  EXPECT_EQ(stream.segments(), speech_segments_from_probabilities(probs, static_cast<int64_t>(prefix)));
  EXPECT_FALSE(stream.segments().empty());
  // A pending partial chunk does not count until finish().
  stream.feed({jfk.data() + prefix, 100});
  EXPECT_EQ(stream.segments(), speech_segments_from_probabilities(probs, static_cast<int64_t>(prefix)));
}

TEST(VadStream, FeedAfterFinishIsAConflict) {
  VadStream stream(test::model());
  const std::vector<float> piece(1000, 0.0f);
  stream.feed(piece);
  stream.finish();
  EXPECT_TRUE(stream.finished());
  EXPECT_EQ(stream.probabilities().size(), 2u);  // one full chunk + the zero-padded rest
  try {
    stream.feed(piece);
    FAIL() << "feed after finish accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Conflict);
  }
}

TEST(VadStream, EmptyStreamHasNothing) {
  VadStream stream(test::model());
  EXPECT_EQ(stream.feed({}), 0);
  stream.finish();
  EXPECT_TRUE(stream.probabilities().empty());
  EXPECT_TRUE(stream.segments().empty());
}

}  // namespace
}  // namespace hark::vad
