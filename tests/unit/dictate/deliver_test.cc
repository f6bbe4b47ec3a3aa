// Which clipboard/typing helper is chosen for which desktop, the messages when none
// fits, and that the text reaches the helper's stdin.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "dictate/deliver.h"
#include "hark/error.h"

namespace hark::dictate {
namespace {

Desktop desktop(bool wayland, bool x11, std::set<std::string> programs) {
  return {wayland, x11, [programs](const std::string& p) { return programs.count(p) > 0; }};
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unavailable);
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

TEST(Deliver, ClipboardHelperFollowsTheSession) {
  EXPECT_EQ(clipboard_helper(desktop(true, true, {"wl-copy", "xclip"})).argv[0], "wl-copy");
  EXPECT_EQ(clipboard_helper(desktop(true, true, {"xclip"})).argv[0], "xclip") << "XWayland";
  EXPECT_EQ(clipboard_helper(desktop(false, true, {"wl-copy", "xsel"})).argv[0], "xsel");
  EXPECT_NE(message_of([] { clipboard_helper(desktop(true, false, {"xclip"})); }).find("install wl-clipboard"),
            std::string::npos);
  EXPECT_NE(message_of([] { clipboard_helper(desktop(false, true, {})); }).find("xclip or xsel"), std::string::npos);
  EXPECT_NE(message_of([] { clipboard_helper(desktop(false, false, {"wl-copy"})); }).find("graphical session"),
            std::string::npos);
}

TEST(Deliver, TypingHelperFollowsTheSession) {
  EXPECT_EQ(typing_helper(desktop(true, false, {"wtype"})).argv, (std::vector<std::string>{"wtype", "-"}));
  EXPECT_EQ(typing_helper(desktop(false, true, {"xdotool"})).argv[0], "xdotool");
  EXPECT_NE(message_of([] { typing_helper(desktop(true, false, {})); }).find("needs wtype"), std::string::npos);
  EXPECT_NE(message_of([] { typing_helper(desktop(false, false, {})); }).find("graphical session"), std::string::npos);
}

TEST(Deliver, RunHelperWritesTheTextToItsStdin) {
  auto out = std::filesystem::temp_directory_path() / ("hark-helper-" + std::to_string(getpid()));
  run_helper({{"sh", "-c", "cat > '" + out.string() + "'"}}, "Grüße, 48 tomatoes.");
  std::ifstream in(out);
  std::string got((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(got, "Grüße, 48 tomatoes.");
  std::filesystem::remove(out);
}

TEST(Deliver, FailingOrMissingHelperIsAClearError) {
  EXPECT_NE(message_of([] { run_helper({{"sh", "-c", "exit 3"}}, "x"); }).find("exit status 3"), std::string::npos);
  // A helper that stops reading early must not kill hark with SIGPIPE.
  EXPECT_NO_THROW(run_helper({{"sh", "-c", "exec 0<&-; exit 0"}}, std::string(1 << 20, 'x')));
  EXPECT_NE(message_of([] { run_helper({{"hark-no-such-helper"}}, "x"); }).find("hark-no-such-helper"),
            std::string::npos);
}

}  // namespace
}  // namespace hark::dictate
