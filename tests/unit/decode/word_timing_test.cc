// DTW, the median filter, word boundaries, punctuation merging and the duration
// heuristics of the timing module, on hand-made matrices.
#include "align/word_timing.h"

#include <gtest/gtest.h>

#include "align/alignment_heads.h"
#include "hark/error.h"

namespace hark {
namespace {

Matrix make(int rows, int cols, std::vector<float> v) { return Matrix{rows, cols, std::move(v)}; }

TEST(Dtw, FollowsTheCheapestMonotonicPath) {
  // A clear diagonal-ish alignment: token 0 at frames 0-1, token 1 at frames 2-3.
  Matrix cost = make(2, 4, {-1, -1, 5, 5, 5, 5, -1, -1});
  std::vector<int> text, time;
  dtw(cost, text, time);
  EXPECT_EQ(text, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(time, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Dtw, TiesPreferTheHorizontalStepAsTheReference) {
  Matrix cost = make(2, 2, {-1, 0, 0, -1});
  std::vector<int> text, time;
  dtw(cost, text, time);
  // At the last cell the diagonal, vertical and horizontal costs all equal -1: the
  // reference then steps horizontally, so the path is (0,0) (1,0) (1,1).
  EXPECT_EQ(text, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(time, (std::vector<int>{0, 0, 1}));
  EXPECT_THROW(dtw(Matrix{}, text, time), Error);
}

TEST(MedianFilter, ReflectPaddedMedianOfSeven) {
  Matrix m = make(1, 8, {0, 0, 0, 9, 0, 0, 0, 0});
  median_filter_rows(m, 7);
  for (float v : m.data) EXPECT_EQ(v, 0.0f);  // a lone spike is removed
  Matrix ramp = make(1, 5, {1, 2, 3, 4, 5});
  median_filter_rows(ramp, 3);  // reflect: [2,1,2,3,4,5,4]
  EXPECT_EQ(ramp.data, (std::vector<float>{2, 2, 3, 4, 4}));
  Matrix tiny = make(1, 3, {3, 1, 2});
  median_filter_rows(tiny, 7);  // 3 columns <= 7/2: unchanged, as the reference
  EXPECT_EQ(tiny.data, (std::vector<float>{3, 1, 2}));
  EXPECT_THROW(median_filter_rows(tiny, 4), Error);
}

TEST(Timings, WordBoundariesComeFromTheDtwJumps) {
  // 3 text tokens + EOT row; words: [" a"]=[0], [" bc"]=[1,2], EOT.
  Matrix m = make(4, 8, std::vector<float>(32, 0.0f));
  auto hot = [&](int r, int c0, int c1) { for (int c = c0; c < c1; ++c) m.at(r, c) = 1.0f; };
  hot(0, 0, 2); hot(1, 2, 4); hot(2, 4, 6); hot(3, 6, 8);
  std::vector<double> probs = {0.9, 0.5, 0.7};
  auto t = timings_from_matrix(m, probs, {" a", " bc", "<|endoftext|>"}, {{0}, {1, 2}, {9}});
  ASSERT_EQ(t.size(), 2u);
  // The reference's tie rule enters each row one frame early (path checked against the
  // Python port in scripts/oracle/decoding.py): rows start at frames 0, 1, 3, 5.
  EXPECT_DOUBLE_EQ(t[0].start, 0.0);
  EXPECT_DOUBLE_EQ(t[0].end, 0.02);
  EXPECT_DOUBLE_EQ(t[1].start, 0.02);
  EXPECT_DOUBLE_EQ(t[1].end, 0.10);
  EXPECT_DOUBLE_EQ(t[1].probability, 0.6);
  EXPECT_TRUE(timings_from_matrix(m, probs, {"<|endoftext|>"}, {{9}}).empty());
}

std::vector<WordTiming> words(std::vector<std::string> w) {
  std::vector<WordTiming> out;
  int id = 0;
  for (auto& s : w) out.push_back({s, {id++}, 0, 0, 1});
  return out;
}

TEST(MergePunctuations, LeadingAndTrailingMarksJoinTheirWords) {
  const std::string pre = "\"'\u201c\u00bf([{-", post = "\"'.\u3002,\uff0c!\uff01?\uff1f:\uff1a\u201d)]}\u3001";
  auto a = words({" \"", "Hello", ",", " world", "!", " (", "yes", ")"});
  merge_punctuations(a, pre, post);
  std::vector<std::string> got;
  for (auto& w : a) got.push_back(w.word);
  EXPECT_EQ(got, (std::vector<std::string>{"", " \"Hello,", "", " world!", "", "", " (yes)", ""}));
  EXPECT_EQ(a[1].tokens, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(a[6].tokens, (std::vector<int>{5, 6, 7}));
}

TEST(AssignWords, WordsFollowSegmentsAndEdgesAreReconciled) {
  std::vector<Segment> segs(2);
  segs[0].start = 10.0, segs[0].end = 11.0, segs[0].tokens = {500, 1, 2, 501};  // 500+: timestamps
  segs[1].start = 11.0, segs[1].end = 13.0, segs[1].tokens = {501, 3, 502};
  std::vector<WordTiming> a = {{" one", {1}, 0.1, 0.4, 0.9}, {" two", {2}, 0.4, 0.9, 0.8}, {" three", {3}, 1.2, 1.6, 0.7}};
  assign_words(segs, a, 10.0, 10.0, {"\"'([{-", "\"'.,!?:)]}"}, 500);
  ASSERT_EQ(segs[0].words.size(), 2u);
  ASSERT_EQ(segs[1].words.size(), 1u);
  EXPECT_DOUBLE_EQ(segs[0].words[0].start, 10.1);
  EXPECT_DOUBLE_EQ(segs[0].start, 10.1);  // the segment start moves to its first word
  EXPECT_DOUBLE_EQ(segs[0].end, 10.9);
  // The last word ends at 11.6, well before the segment end: the segment end snaps to it.
  EXPECT_DOUBLE_EQ(segs[1].end, 11.6);
  EXPECT_DOUBLE_EQ(segs[1].words[0].probability, 0.7);
}

TEST(AssignWords, LongFirstWordAfterAPauseIsShortened) {
  std::vector<Segment> segs(1);
  segs[0].start = 0.0, segs[0].end = 6.0, segs[0].tokens = {1, 2, 3};
  // durations 4.0, 0.2, 0.3 → median 0.3, max 0.6; the first word (4 s) starts after a pause.
  std::vector<WordTiming> a = {{" long", {1}, 1.0, 5.0, 0.9}, {" b", {2}, 5.0, 5.2, 0.9}, {" c", {3}, 5.2, 5.5, 0.9}};
  assign_words(segs, a, 0.0, 0.0, {"", ""}, 100);
  EXPECT_NEAR(segs[0].words[0].start, 4.4, 1e-9);  // end − 2 · median
  EXPECT_NEAR(segs[0].start, 4.4, 1e-9);
}

TEST(AlignmentHeads, CheckpointThenOfficialTableThenDefault) {
  Checkpoint ck;
  ck.hparams = HParams{};  // tiny shape
  AlignmentHeadsSource source;
  EXPECT_EQ(resolve_alignment_heads(ck, false, &source).size(), 12u);  // layers 2-3 × 6 heads
  EXPECT_EQ(source, AlignmentHeadsSource::Default);
  EXPECT_EQ(resolve_alignment_heads(ck, true, &source), official_alignment_heads("tiny"));
  EXPECT_EQ(source, AlignmentHeadsSource::OfficialTable);
  ck.alignment_heads = {{1, 1}};
  EXPECT_EQ(resolve_alignment_heads(ck, true, &source), (AlignmentHeads{{1, 1}}));
  ck.alignment_heads = {{9, 0}};
  EXPECT_THROW(resolve_alignment_heads(ck, true), Error);
  EXPECT_TRUE(official_alignment_heads("custom").empty());
}

}  // namespace
}  // namespace hark
