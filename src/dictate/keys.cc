#include "dictate/keys.h"

#include <charconv>

namespace hark::dictate {
namespace {

constexpr char kEsc = '\x1b';

Key key_for_code(int code, int modifiers) {
  const bool ctrl = modifiers > 0 && ((modifiers - 1) & 4);
  if (ctrl && (code == 'c' || code == 'd')) return Key::Quit;
  if (code == ' ') return Key::Talk;
  if (code == '\r' || code == '\n') return Key::Toggle;
  if (code == 'q' || code == 'Q' || code == 3 || code == 4) return Key::Quit;
  return Key::Other;
}

int leading_number(std::string_view s) {
  int v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

void KeyDecoder::feed(std::string_view bytes) {
  pending_.append(bytes);
  size_t i = 0;
  while (i < pending_.size()) {
    const char c = pending_[i];
    if (c != kEsc) {
      events_.push_back({key_for_code(static_cast<unsigned char>(c), 0), KeyAction::Press});
      ++i;
      continue;
    }
    if (i + 1 >= pending_.size()) break;  // maybe the start of a sequence: wait for more
    if (pending_[i + 1] != '[') {         // ESC + key (Alt-key) or a lone Escape
      events_.push_back({Key::Other, KeyAction::Press});
      i += 2;
      continue;
    }
    size_t end = i + 2;
    while (end < pending_.size() && !(pending_[end] >= 0x40 && pending_[end] <= 0x7e)) ++end;
    if (end >= pending_.size()) break;  // unfinished control sequence
    control_sequence(std::string_view(pending_).substr(i + 2, end - i - 2), pending_[end]);
    i = end + 1;
  }
  pending_.erase(0, i);
}

void KeyDecoder::control_sequence(std::string_view params, char final_byte) {
  if (!params.empty() && params.front() == '?') {
    if (final_byte == 'u') kitty_reply_ = true;
    if (final_byte == 'c') device_attributes_ = true;
    return;
  }
  if (final_byte != 'u') {  // arrows, function keys, …: not ours
    events_.push_back({Key::Other, KeyAction::Press});
    return;
  }
  // kitty: code[:shifted[:base]] ; modifiers[:event] ; text
  const size_t semicolon = params.find(';');
  const int code = leading_number(params.substr(0, params.find_first_of(":;")));
  int modifiers = 0, event = 1;
  if (semicolon != std::string_view::npos) {
    std::string_view mods = params.substr(semicolon + 1);
    mods = mods.substr(0, mods.find(';'));
    modifiers = leading_number(mods);
    if (size_t colon = mods.find(':'); colon != std::string_view::npos) event = leading_number(mods.substr(colon + 1));
  }
  const KeyAction action = event == 2 ? KeyAction::Repeat : event == 3 ? KeyAction::Release : KeyAction::Press;
  events_.push_back({key_for_code(code, modifiers), action});
}

std::vector<KeyEvent> KeyDecoder::take_events() {
  std::vector<KeyEvent> out;
  out.swap(events_);
  return out;
}

TakeCommand HoldDetector::stop(double now) {
  state_ = State::Cooldown;
  last_talk_ = now;
  repeats_after_stop_ = false;
  return TakeCommand::Stop;
}

TakeCommand HoldDetector::on_key(const KeyEvent& e, double now) {
  if (e.key == Key::Toggle) {
    if (e.action != KeyAction::Press) return TakeCommand::None;
    if (recording()) return stop(now);
    state_ = State::Latched;
    return TakeCommand::Start;
  }
  if (e.key != Key::Talk) return TakeCommand::None;
  const double since_last = now - last_talk_;
  last_talk_ = now;
  switch (state_) {
    case State::Idle:
      if (e.action != KeyAction::Press) return TakeCommand::None;
      state_ = State::Pressed;
      pressed_at_ = now;
      return TakeCommand::Start;
    case State::Pressed:
      if (key_up_) {
        if (e.action != KeyAction::Release) return TakeCommand::None;
        if (now - pressed_at_ < timing_.tap_max) {
          state_ = State::Latched;
          return TakeCommand::None;
        }
        return stop(now);
      }
      state_ = State::Ambiguous;  // the first repeat, or a quick second tap: the next byte tells
      return TakeCommand::None;
    case State::Ambiguous:
      if (since_last <= timing_.repeat_gap) {
        state_ = State::Holding;
        return TakeCommand::None;
      }
      return stop(now);
    case State::Holding:
      if (key_up_ && e.action == KeyAction::Release) return stop(now);
      return TakeCommand::None;
    case State::Latched:
      if (e.action == KeyAction::Press) return stop(now);
      return TakeCommand::None;
    case State::Cooldown:
      if (key_up_ && e.action == KeyAction::Release) state_ = State::Idle;
      repeats_after_stop_ = true;
      return TakeCommand::None;
  }
  return TakeCommand::None;
}

TakeCommand HoldDetector::tick(double now) {
  const double quiet = now - last_talk_;
  switch (state_) {
    case State::Pressed:
      if (!key_up_ && now - pressed_at_ > timing_.first_repeat_max) state_ = State::Latched;
      return TakeCommand::None;
    case State::Ambiguous:
      return quiet > timing_.repeat_gap ? stop(now) : TakeCommand::None;
    case State::Holding:
      return !key_up_ && quiet > timing_.release_after ? stop(now) : TakeCommand::None;
    case State::Cooldown:
      // The key that stopped the take may still be held: its first auto-repeat can take
      // up to first_repeat_max to arrive, later ones come every repeat gap.
      if (quiet > (repeats_after_stop_ ? timing_.release_after : timing_.first_repeat_max)) state_ = State::Idle;
      return TakeCommand::None;
    default:
      return TakeCommand::None;
  }
}

}  // namespace hark::dictate
