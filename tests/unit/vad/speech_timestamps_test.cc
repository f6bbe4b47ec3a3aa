// get_speech_timestamps' segment logic on hand-made probability sequences. The expected
// samples were worked out by hand for the simple cases (see comments) and, for the
// max-speech splits, with the line-by-line Python transcription in scripts/oracle/vad.py.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hark/error.h"
#include "vad/speech_timestamps.h"

namespace hark::vad {
namespace {

std::vector<float> seq(std::initializer_list<std::pair<int, float>> parts) {
  std::vector<float> out;
  for (auto [n, p] : parts) out.insert(out.end(), n, p);
  return out;
}

using Segs = std::vector<SpeechSegment>;

TEST(SpeechTimestamps, OneSegmentPaddedBy30ms) {
  // Speech from chunk 10 (5120); silence from chunk 30 (15360) lasts 1600 samples at chunk 34.
  const auto probs = seq({{10, 0.1f}, {20, 0.9f}, {10, 0.1f}});
  EXPECT_EQ(speech_segments_from_probabilities(probs, 40 * 512), (Segs{{5120 - 480, 15360 + 480}}));
}

TEST(SpeechTimestamps, SegmentsShorterThanMinSpeechAreDropped) {
  const auto probs = seq({{10, 0.1f}, {5, 0.9f}, {10, 0.1f}});  // 2560 samples < 4000
  EXPECT_TRUE(speech_segments_from_probabilities(probs, 25 * 512).empty());
  SpeechTimestampOptions o;
  o.min_speech_duration_ms = 100;  // 1600 < 2560: kept
  EXPECT_EQ(speech_segments_from_probabilities(probs, 25 * 512, o), (Segs{{5120 - 480, 7680 + 480}}));
}

TEST(SpeechTimestamps, ProbabilitiesBetweenThresholdsKeepSpeechOpen) {
  // 0.4 is below 0.5 but above the negative threshold 0.35: one segment, not two.
  const auto probs = seq({{5, 0.1f}, {10, 0.9f}, {10, 0.4f}, {10, 0.9f}, {10, 0.1f}});
  EXPECT_EQ(speech_segments_from_probabilities(probs, 45 * 512), (Segs{{2080, 18400}}));
  SpeechTimestampOptions o;
  o.neg_threshold = 0.45;  // now 0.4 counts as silence and splits the speech
  EXPECT_EQ(speech_segments_from_probabilities(probs, 45 * 512, o).size(), 2u);
}

TEST(SpeechTimestamps, ThresholdIsInclusive) {
  const auto probs = seq({{3, 0.1f}, {12, 0.5f}, {6, 0.1f}});
  EXPECT_EQ(speech_segments_from_probabilities(probs, 21 * 512), (Segs{{1056, 8160}}));
}

TEST(SpeechTimestamps, NearbySegmentsSplitTheGapInsteadOfPadding) {
  // Raw segments [2560, 12800) and [15360, 25600); the 2560-sample gap is under 2 × 1600.
  const auto probs = seq({{5, 0.1f}, {20, 0.9f}, {5, 0.1f}, {20, 0.9f}, {10, 0.1f}});
  SpeechTimestampOptions o;
  o.speech_pad_ms = 100;
  EXPECT_EQ(speech_segments_from_probabilities(probs, 60 * 512, o), (Segs{{960, 14080}, {14080, 27200}}));
}

TEST(SpeechTimestamps, OpenSegmentEndsAtTheEndOfTheAudio) {
  const auto probs = seq({{5, 0.1f}, {20, 0.9f}});
  EXPECT_EQ(speech_segments_from_probabilities(probs, 25 * 512 - 100), (Segs{{2080, 25 * 512 - 100}}));
}

TEST(SpeechTimestamps, MaxSpeechCutsAbruptlyWithoutASilence) {
  // max_speech_samples = 16000 − 512 − 960 = 14528: cut at chunk 29 (14848), restart at 30.
  const auto probs = seq({{40, 0.9f}});
  SpeechTimestampOptions o;
  o.max_speech_duration_s = 1.0;
  EXPECT_EQ(speech_segments_from_probabilities(probs, 40 * 512, o), (Segs{{0, 15104}, {15104, 20480}}));
}

TEST(SpeechTimestamps, MaxSpeechSplitsAtTheLongestSilence) {
  const auto probs = seq({{2, 0.1f}, {10, 0.9f}, {4, 0.1f}, {6, 0.9f}, {2, 0.2f}, {30, 0.9f}, {6, 0.1f}});
  SpeechTimestampOptions o;
  o.max_speech_duration_s = 1.0;
  EXPECT_EQ(speech_segments_from_probabilities(probs, 60 * 512, o),
            (Segs{{544, 6624}, {7712, 23296}, {23296, 28128}}));
}

TEST(SpeechTimestamps, MaxSpeechCanSplitAtTheLastSilence) {
  const auto probs = seq({{2, 0.1f}, {6, 0.9f}, {5, 0.1f}, {5, 0.9f}, {4, 0.2f}, {20, 0.9f}, {6, 0.1f}});
  SpeechTimestampOptions o;
  o.max_speech_duration_s = 1.0;
  o.use_max_poss_sil_at_max_speech = false;
  EXPECT_EQ(speech_segments_from_probabilities(probs, 48 * 512, o), (Segs{{6176, 9696}, {10784, 21984}}));
}

TEST(SpeechTimestamps, NoSpeechGivesNoSegments) {
  EXPECT_TRUE(speech_segments_from_probabilities(seq({{100, 0.2f}}), 100 * 512).empty());
  EXPECT_TRUE(speech_segments_from_probabilities({}, 0).empty());
}

TEST(SpeechTimestamps, SegmenterAnswersMidStreamAndAtTheEnd) {
  SpeechSegmenter s;
  for (int i = 0; i < 10; ++i) s.push(0.1f);
  EXPECT_FALSE(s.in_speech());
  for (int i = 0; i < 20; ++i) s.push(0.9f);
  EXPECT_TRUE(s.in_speech());
  EXPECT_EQ(s.finish(30 * 512), (Segs{{4640, 15360}}));  // still open: ends at the audio end
  for (int i = 0; i < 10; ++i) s.push(0.1f);
  EXPECT_FALSE(s.in_speech());
  EXPECT_EQ(s.finish(40 * 512), (Segs{{4640, 15840}}));
  EXPECT_EQ(s.chunks(), 40);
}

TEST(SpeechTimestamps, DefaultNegativeThresholdFollowsTheReference) {
  SpeechTimestampOptions o;
  EXPECT_DOUBLE_EQ(o.effective_neg_threshold(), 0.5 - 0.15);
  o.threshold = 0.1;
  EXPECT_DOUBLE_EQ(o.effective_neg_threshold(), 0.01);
}

TEST(SpeechTimestamps, BadOptionsAreClearErrors) {
  auto expect_bad = [](auto mutate) {
    SpeechTimestampOptions o;
    mutate(o);
    try {
      SpeechSegmenter s(o);
      FAIL() << "accepted bad options";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("[vad]"), std::string::npos);
    }
  };
  expect_bad([](auto& o) { o.threshold = 1.5; });
  expect_bad([](auto& o) { o.threshold = 0.0; });
  expect_bad([](auto& o) { o.threshold = std::nan(""); });
  expect_bad([](auto& o) { o.neg_threshold = 0.7; });
  expect_bad([](auto& o) { o.min_speech_duration_ms = -1; });
  expect_bad([](auto& o) { o.min_silence_duration_ms = -5; });
  expect_bad([](auto& o) { o.speech_pad_ms = -30; });
  expect_bad([](auto& o) { o.max_speech_duration_s = 0; });
}

}  // namespace
}  // namespace hark::vad
