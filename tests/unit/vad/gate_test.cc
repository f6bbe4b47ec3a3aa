// The transcription gate: vad_gate (skip Whisper without speech) and vad_trim (speech span
// ± 0.5 s, clamped, with the offset that maps trimmed timestamps back onto the clip).
#include <gtest/gtest.h>

#include "hark/error.h"
#include "vad/gate.h"

namespace hark::vad {
namespace {

using Segs = std::vector<SpeechSegment>;

TEST(VadGate, RunsWhisperOnlyWhenThereIsSpeech) {
  EXPECT_FALSE(vad_gate(Segs{}));
  EXPECT_FALSE(vad_gate(Segs{{100, 100}}));  // empty segment
  EXPECT_TRUE(vad_gate(Segs{{100, 4000}}));
}

TEST(VadTrim, CropsToTheSpeechSpanWithHalfASecondMargin) {
  const Segs segs{{48000, 64000}, {100000, 120000}};
  const TrimWindow w = vad_trim(segs, 320000);
  EXPECT_EQ(w.begin, 48000 - 8000);
  EXPECT_EQ(w.end, 120000 + 8000);
  EXPECT_EQ(w.samples(), 88000);
  EXPECT_DOUBLE_EQ(w.offset_seconds(), 2.5);
  EXPECT_FALSE(w.empty());
}

TEST(VadTrim, ClampsToTheClip) {
  const TrimWindow w = vad_trim(Segs{{1000, 30000}}, 32000);
  EXPECT_EQ(w.begin, 0);
  EXPECT_EQ(w.end, 32000);
  EXPECT_DOUBLE_EQ(w.offset_seconds(), 0.0);
  const TrimWindow custom = vad_trim(Segs{{16000, 32000}}, 64000, 0.25);
  EXPECT_EQ(custom.begin, 12000);
  EXPECT_EQ(custom.end, 36000);
}

TEST(VadTrim, NoSpeechGivesAnEmptyWindow) {
  const TrimWindow w = vad_trim(Segs{}, 16000);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(w.samples(), 0);
}

TEST(VadTrim, RejectsSegmentsOutsideTheClipAndBadMargins) {
  EXPECT_THROW(vad_trim(Segs{{0, 20000}}, 16000), Error);
  EXPECT_THROW(vad_trim(Segs{{-5, 100}}, 16000), Error);
  EXPECT_THROW(vad_trim(Segs{{500, 100}}, 16000), Error);
  EXPECT_THROW(vad_trim(Segs{{0, 100}}, 16000, -1.0), Error);
  EXPECT_THROW(vad_trim(Segs{{0, 100}}, -1), Error);
  try {
    vad_trim(Segs{{0, 20000}}, 16000);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

}  // namespace
}  // namespace hark::vad
