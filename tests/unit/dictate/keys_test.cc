// Terminal keys: legacy bytes and the kitty protocol decoded, and the hold-to-talk state
// machine driven by synthetic timings (a held key's auto-repeat, taps, releases).
#include <gtest/gtest.h>

#include "dictate/keys.h"

namespace hark::dictate {
namespace {

std::vector<KeyEvent> decode(std::initializer_list<std::string_view> reads, KeyDecoder* out = nullptr) {
  KeyDecoder local;
  KeyDecoder& d = out ? *out : local;
  for (auto r : reads) d.feed(r);
  return d.take_events();
}

constexpr KeyEvent kTalk{Key::Talk, KeyAction::Press};
constexpr KeyEvent kToggle{Key::Toggle, KeyAction::Press};
constexpr KeyEvent kQuit{Key::Quit, KeyAction::Press};

TEST(KeyDecoder, LegacyBytes) {
  EXPECT_EQ(decode({" \r\nq\x03\x04x"}),
            (std::vector<KeyEvent>{kTalk, kToggle, kToggle, kQuit, kQuit, kQuit, {Key::Other, KeyAction::Press}}));
  EXPECT_EQ(decode({"\x1b[A"}), (std::vector<KeyEvent>{{Key::Other, KeyAction::Press}})) << "an arrow key";
}

TEST(KeyDecoder, KittyEventsIncludingSplitReads) {
  EXPECT_EQ(decode({"\x1b[32u", "\x1b[32;1:2u\x1b[3", "2;1:3u", "\x1b[13u\x1b[99;5u\x1b[113;1:3u"}),
            (std::vector<KeyEvent>{kTalk,
                                   {Key::Talk, KeyAction::Repeat},
                                   {Key::Talk, KeyAction::Release},
                                   kToggle,
                                   kQuit,
                                   {Key::Quit, KeyAction::Release}}));
}

TEST(KeyDecoder, ProbeReplies) {
  KeyDecoder kitty;
  EXPECT_TRUE(decode({"\x1b[?0u\x1b[?62;22c"}, &kitty).empty()) << "replies are not keys";
  EXPECT_TRUE(kitty.kitty_reply_seen());
  EXPECT_TRUE(kitty.device_attributes_seen());
  KeyDecoder legacy;
  decode({"\x1b[?1;2c"}, &legacy);
  EXPECT_FALSE(legacy.kitty_reply_seen());
  EXPECT_TRUE(legacy.device_attributes_seen());
}

// Feeds a Talk byte at each time and ticks every 10 ms up to `until`; returns the times
// of Start and Stop (Stop as negative numbers).
std::vector<double> drive(HoldDetector& hold, std::vector<std::pair<double, KeyEvent>> keys, double until) {
  std::vector<double> out;
  size_t next = 0;
  for (int step = 0; step * 0.01 <= until + 1e-9; ++step) {
    const double now = step * 0.01;
    while (next < keys.size() && keys[next].first <= now + 1e-9) {
      auto c = hold.on_key(keys[next].second, keys[next].first);
      if (c != TakeCommand::None) out.push_back(c == TakeCommand::Start ? keys[next].first : -keys[next].first);
      ++next;
    }
    auto c = hold.tick(now);
    if (c == TakeCommand::Stop) out.push_back(-now);
  }
  return out;
}

std::vector<std::pair<double, KeyEvent>> held_space(double from, double first_repeat, double gap, double until) {
  std::vector<std::pair<double, KeyEvent>> keys = {{from, kTalk}};
  for (double t = from + first_repeat; t <= until + 1e-9; t += gap) keys.push_back({t, kTalk});
  return keys;
}

TEST(HoldDetector, HeldKeyStopsWhenTheAutoRepeatStops) {
  HoldDetector hold(false);
  // Pressed at 1 s, repeats from 1.5 s every 33 ms up to 4 s, then released.
  auto events = drive(hold, held_space(1.0, 0.5, 0.033, 4.0), 6.0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_DOUBLE_EQ(events[0], 1.0);
  EXPECT_GT(-events[1], 4.0 + 0.3 - 0.05);
  EXPECT_LT(-events[1], 4.0 + 0.3 + 0.05);
  EXPECT_FALSE(hold.recording());
}

TEST(HoldDetector, SlowRepeatSettingsStillHold) {
  HoldDetector hold(false);
  auto events = drive(hold, held_space(0.0, 0.66, 0.1, 3.0), 4.0);  // X11's 660 ms delay, 10 Hz repeat
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NEAR(-events[1], 3.3, 0.05);
}

TEST(HoldDetector, TapLatchesUntilTheNextPress) {
  HoldDetector hold(false);
  auto events = drive(hold, {{1.0, kTalk}, {5.0, kTalk}}, 6.0);
  EXPECT_EQ(events, (std::vector<double>{1.0, -5.0}));
}

TEST(HoldDetector, QuickSecondTapStopsAfterTheRepeatGap) {
  HoldDetector hold(false);
  auto events = drive(hold, {{1.0, kTalk}, {1.4, kTalk}}, 3.0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NEAR(-events[1], 1.4 + 0.15, 0.02) << "a lone byte within the repeat delay is a second tap";
}

TEST(HoldDetector, RepeatsAfterAStopDoNotStartAnotherTake) {
  HoldDetector hold(false);
  // Tap to start; then hold Space to stop: its auto-repeat must not start a new take.
  auto keys = held_space(3.0, 0.5, 0.033, 4.0);
  keys.insert(keys.begin(), {1.0, kTalk});
  auto events = drive(hold, keys, 5.0);
  EXPECT_EQ(events, (std::vector<double>{1.0, -3.0}));
  EXPECT_EQ(hold.on_key(kTalk, 5.0), TakeCommand::Start) << "a press after the quiet period starts again";
}

TEST(HoldDetector, EnterToggles) {
  HoldDetector hold(false);
  EXPECT_EQ(hold.on_key(kToggle, 1.0), TakeCommand::Start);
  EXPECT_EQ(hold.tick(10.0), TakeCommand::None) << "toggled takes do not time out";
  EXPECT_EQ(hold.on_key(kToggle, 10.0), TakeCommand::Stop);
  EXPECT_EQ(hold.on_key(kToggle, 10.5), TakeCommand::Start);
}

TEST(HoldDetector, KeyUpEventsStopOnRelease) {
  HoldDetector hold(true);
  EXPECT_EQ(hold.on_key(kTalk, 1.0), TakeCommand::Start);
  for (double t = 1.5; t < 3.0; t += 0.03) EXPECT_EQ(hold.on_key({Key::Talk, KeyAction::Repeat}, t), TakeCommand::None);
  EXPECT_EQ(hold.tick(10.0), TakeCommand::None) << "no timeout guessing when releases are reported";
  EXPECT_EQ(hold.on_key({Key::Talk, KeyAction::Release}, 10.0), TakeCommand::Stop);
}

TEST(HoldDetector, KeyUpTapLatches) {
  HoldDetector hold(true);
  EXPECT_EQ(hold.on_key(kTalk, 1.0), TakeCommand::Start);
  EXPECT_EQ(hold.on_key({Key::Talk, KeyAction::Release}, 1.1), TakeCommand::None);
  EXPECT_TRUE(hold.latched());
  EXPECT_EQ(hold.on_key(kTalk, 4.0), TakeCommand::Stop);
  EXPECT_EQ(hold.on_key(kTalk, 4.5), TakeCommand::None) << "until the key is released";
  EXPECT_EQ(hold.on_key({Key::Talk, KeyAction::Release}, 4.6), TakeCommand::None);
  EXPECT_EQ(hold.on_key(kTalk, 5.0), TakeCommand::Start);
}

}  // namespace
}  // namespace hark::dictate
