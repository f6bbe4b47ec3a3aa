// The output formats, byte for byte as the reference writes them.
#include "output/writers.h"

#include <gtest/gtest.h>

#include "hark/error.h"

namespace hark {
namespace {

Transcript sample() {
  Transcript t;
  t.text = " Hello there. General --> Kenobi";
  t.language = "en";
  t.duration = 3725.5;
  Segment a;
  a.id = 0, a.start = 0.0, a.end = 1.5, a.text = " Hello there.", a.tokens = {50364, 2425, 50439};
  Segment b;
  b.id = 1, b.seek = 100, b.start = 3661.0004, b.end = 3662.25, b.text = " General\t--> Kenobi";
  b.words = {{" General", 3661.0, 3661.5, 0.9}, {" Kenobi", 3661.6, 3662.2, 0.8}};
  t.segments = {a, b};
  return t;
}

TEST(Timestamp, HoursOnlyWhenAskedOrNeeded) {
  EXPECT_EQ(format_timestamp(0.0, false, '.'), "00:00.000");
  EXPECT_EQ(format_timestamp(62.3456, false, '.'), "01:02.346");
  EXPECT_EQ(format_timestamp(62.3456, true, ','), "00:01:02,346");
  EXPECT_EQ(format_timestamp(3661.0004, false, '.'), "01:01:01.000");
  EXPECT_THROW(format_timestamp(-1.0, false, '.'), Error);
}

TEST(Writers, TxtSrtVttTsv) {
  const Transcript t = sample();
  EXPECT_EQ(format_transcript(t, OutputFormat::Txt), "Hello there.\nGeneral\t--> Kenobi\n");
  EXPECT_EQ(format_transcript(t, OutputFormat::Srt),
            "1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n"
            "2\n01:01:01,000 --> 01:01:02,250\nGeneral\t-> Kenobi\n\n");
  EXPECT_EQ(format_transcript(t, OutputFormat::Vtt),
            "WEBVTT\n\n00:00.000 --> 00:01.500\nHello there.\n\n01:01:01.000 --> 01:01:02.250\nGeneral\t-> Kenobi\n\n");
  EXPECT_EQ(format_transcript(t, OutputFormat::Tsv),
            "start\tend\ttext\n0\t1500\tHello there.\n3661000\t3662250\tGeneral --> Kenobi\n");
}

TEST(Writers, JsonAndVerboseJson) {
  const Transcript t = sample();
  auto j = nlohmann::json::parse(format_transcript(t, OutputFormat::Json));
  EXPECT_EQ(j, (nlohmann::json{{"text", t.text}}));
  auto v = nlohmann::json::parse(format_transcript(t, OutputFormat::VerboseJson));
  EXPECT_EQ(v["task"], "transcribe");
  EXPECT_EQ(v["language"], "en");
  EXPECT_EQ(v["duration"], 3725.5);
  ASSERT_EQ(v["segments"].size(), 2u);
  for (const char* key : {"id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
                          "compression_ratio", "no_speech_prob"})
    EXPECT_TRUE(v["segments"][0].contains(key)) << key;
  EXPECT_FALSE(v["segments"][0].contains("words"));
  EXPECT_EQ(v["segments"][1]["words"][1]["word"], " Kenobi");
  EXPECT_EQ(v["words"].size(), 2u);
  EXPECT_EQ(v["segments"][0]["tokens"], (nlohmann::json{50364, 2425, 50439}));
  EXPECT_FALSE(v.contains("vocabulary"));
}

TEST(Writers, InvalidUtf8IsReplacedNotThrown) {
  Transcript t = sample();
  t.text = std::string("bad \xff byte");
  EXPECT_NO_THROW(format_transcript(t, OutputFormat::Json));
}

TEST(Writers, FormatNames) {
  EXPECT_EQ(parse_output_format("verbose_json"), OutputFormat::VerboseJson);
  EXPECT_STREQ(file_extension(OutputFormat::VerboseJson), "json");
  EXPECT_THROW(parse_output_format("docx"), Error);
}

}  // namespace
}  // namespace hark
