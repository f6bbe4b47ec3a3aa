// The seek loop's window segmentation and hallucination scores, on hand-made tokens.
#include "transcribe/segmenter.h"

#include <gtest/gtest.h>

namespace hark {
namespace {

constexpr int kTs = 100;  // timestamp_begin of these hand-made sequences; text ids < 100

TEST(SplitWindow, ConsecutiveTimestampsCloseSegmentsAndSeekToTheLastPair) {
  // <0.00> a b <1.00><1.00> c <2.00><2.00> d   (unfinished last segment is dropped)
  std::vector<int> tokens = {kTs, 1, 2, kTs + 50, kTs + 50, 3, kTs + 100, kTs + 100, 4};
  WindowSplit s = split_window(tokens, kTs, 10.0, 3000);
  ASSERT_EQ(s.segments.size(), 2u);
  EXPECT_DOUBLE_EQ(s.segments[0].start, 10.0);
  EXPECT_DOUBLE_EQ(s.segments[0].end, 11.0);
  EXPECT_EQ(s.segments[0].tokens, (std::vector<int>{kTs, 1, 2, kTs + 50}));
  EXPECT_DOUBLE_EQ(s.segments[1].start, 11.0);
  EXPECT_DOUBLE_EQ(s.segments[1].end, 12.0);
  EXPECT_FALSE(s.single_timestamp_ending);
  EXPECT_EQ(s.seek_advance, 200);  // the last closed pair at 2.00 s
}

TEST(SplitWindow, SingleTimestampEndingConsumesTheWholeWindow) {
  std::vector<int> tokens = {kTs, 1, kTs + 20, kTs + 20, 2, kTs + 70};
  WindowSplit s = split_window(tokens, kTs, 0.0, 2500);
  ASSERT_EQ(s.segments.size(), 2u);
  EXPECT_TRUE(s.single_timestamp_ending);
  EXPECT_DOUBLE_EQ(s.segments[1].start, 0.4);
  EXPECT_DOUBLE_EQ(s.segments[1].end, 1.4);
  EXPECT_EQ(s.seek_advance, 2500);
}

TEST(SplitWindow, NoPairMakesOneSegmentEndingAtTheLastTimestampOrTheWindow) {
  std::vector<int> tokens = {kTs, 1, 2, kTs + 30};
  WindowSplit s = split_window(tokens, kTs, 5.0, 3000);
  ASSERT_EQ(s.segments.size(), 1u);
  EXPECT_DOUBLE_EQ(s.segments[0].end, 5.6);
  EXPECT_EQ(s.seek_advance, 3000);
  std::vector<int> text_only = {1, 2, 3};
  WindowSplit t = split_window(text_only, kTs, 5.0, 1234);
  EXPECT_DOUBLE_EQ(t.segments[0].end, 5.0 + 12.34);
  EXPECT_EQ(t.seek_advance, 1234);
  // A lone <|0.00|> carries no duration.
  std::vector<int> zero = {kTs, 1, 2};
  EXPECT_DOUBLE_EQ(split_window(zero, kTs, 0.0, 3000).segments[0].end, 30.0);
  EXPECT_EQ(split_window(std::vector<int>{}, kTs, 0.0, 3000).segments.size(), 1u);
}

Segment with_words(std::vector<Word> words, double start = 0, double end = 0) {
  Segment s;
  s.start = start;
  s.end = end;
  s.words = std::move(words);
  return s;
}

TEST(LastEnd, PrefersTheLastWordThenTheSegmentEnd) {
  std::vector<Segment> segs = {with_words({{" a", 1.0, 1.5, 0.9}}, 0.5, 2.0), with_words({}, 2.0, 3.0)};
  EXPECT_DOUBLE_EQ(*last_end(segs), 1.5);
  std::vector<Segment> none = {with_words({}, 0.0, 4.0)};
  EXPECT_DOUBLE_EQ(*last_end(none), 4.0);
  EXPECT_FALSE(last_end(std::vector<Segment>{}).has_value());
}

TEST(SegmentAnomaly, ImprobableOrOddlyTimedWordsAreAnomalous) {
  const std::string punct = "\"'.,!?";
  Segment good = with_words({{" hello", 0.0, 0.4, 0.9}, {" world", 0.4, 0.8, 0.8}});
  EXPECT_FALSE(is_segment_anomaly(&good, punct));
  Segment improbable = with_words({{" hello", 0.0, 0.4, 0.1}, {" world", 0.4, 0.8, 0.1}});
  EXPECT_TRUE(is_segment_anomaly(&improbable, punct));  // score 2 + 0.01 >= 2 words
  Segment long_word = with_words({{" a", 0.0, 5.5, 0.9}, {" b", 5.5, 6.0, 0.9}, {" c", 6.0, 6.5, 0.9}});
  EXPECT_TRUE(is_segment_anomaly(&long_word, punct));  // 3.5 >= 3
  Segment punctuation_only = with_words({{".", 0.0, 0.01, 0.01}});
  EXPECT_TRUE(is_segment_anomaly(&punctuation_only, punct));  // no words left: 0 + 0.01 >= 0
  EXPECT_FALSE(is_segment_anomaly(nullptr, punct));
}

}  // namespace
}  // namespace hark
