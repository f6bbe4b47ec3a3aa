// The bundled real-speech model (models/hark-toy-speech) through the whole pipeline:
// hark's greedy transcripts must equal transformers' greedy generate() on the held-out
// clips of tests/data/toy-eval (references.json holds transformers' output for this
// checkpoint), the language must be detected, and a silence window gives no text.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "hark/engine.h"
#include "test_support.h"

namespace hark {
namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\n"));
  s.erase(s.find_last_not_of(" \t\n") + 1);
  return s;
}

class ToyModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    EngineOptions options;
    options.model = std::string(HARK_SOURCE_DIR) + "/models/hark-toy-speech";
    options.threads = 2;
    engine_ = Engine::open(options).release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  static nlohmann::json references() {
    return nlohmann::json::parse(test::read_file(test::data_path("toy-eval/references.json")));
  }
  static Engine* engine_;
};

Engine* ToyModel::engine_ = nullptr;

TEST_F(ToyModel, GreedyTranscriptsEqualTransformers) {
  int speech_clips = 0;
  for (const auto& ref : references()) {
    if (!ref.contains("hyp_timestamps") || ref.value("kind", "") == "silence") continue;
    const std::vector<float> audio = decode_audio_file(test::data_path("toy-eval/" + ref["file"].get<std::string>()));
    TranscribeOptions options;
    options.language = ref["lang"];
    options.temperatures = {0.0f};  // transformers' greedy generate(): no fallback
    const Transcript t = engine_->transcribe(audio, options);
    EXPECT_EQ(trim(t.text), trim(ref["hyp_timestamps"].get<std::string>())) << ref["file"];
    ++speech_clips;
  }
  EXPECT_GE(speech_clips, 12);
}

TEST_F(ToyModel, DetectsTheLanguage) {
  std::set<std::string> languages;
  for (const auto& ref : references()) {
    if (ref.value("kind", "") == "silence" || !ref.contains("detected_lang")) continue;
    if (!languages.insert(ref["lang"].get<std::string>()).second) continue;  // one clip per language
    const std::vector<float> audio = decode_audio_file(test::data_path("toy-eval/" + ref["file"].get<std::string>()));
    TranscribeOptions options;
    options.temperatures = {0.0f};
    const Transcript t = engine_->transcribe(audio, options);
    EXPECT_EQ(t.language, ref["detected_lang"].get<std::string>()) << ref["file"];
  }
  EXPECT_EQ(languages.size(), 4u);
}

TEST_F(ToyModel, SilenceGivesNoText) {
  for (const auto& ref : references()) {
    if (ref.value("kind", "") != "silence") continue;
    const std::vector<float> audio = decode_audio_file(test::data_path("toy-eval/" + ref["file"].get<std::string>()));
    TranscribeOptions options;
    options.language = "en";
    const Transcript t = engine_->transcribe(audio, options);
    EXPECT_EQ(trim(t.text), "") << ref["file"];
  }
}

}  // namespace
}  // namespace hark
