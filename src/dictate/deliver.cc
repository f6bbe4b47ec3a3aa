#include "dictate/deliver.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "hark/error.h"

extern char** environ;

namespace hark::dictate {
namespace {

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}

Error no_session(const char* what) {
  return Error(ErrorCode::Unavailable, std::string("[dictate] ") + what +
                                           " needs a graphical session, and neither WAYLAND_DISPLAY nor DISPLAY is "
                                           "set; the transcript was printed instead");
}

}  // namespace

Desktop Desktop::current() { return {set("WAYLAND_DISPLAY"), set("DISPLAY"), on_path}; }

Helper clipboard_helper(const Desktop& d) {
  if (!d.wayland && !d.x11) throw no_session("--copy");
  if (d.wayland && d.has_program("wl-copy")) return {{"wl-copy"}};
  if (d.x11 && d.has_program("xclip")) return {{"xclip", "-selection", "clipboard", "-in"}};
  if (d.x11 && d.has_program("xsel")) return {{"xsel", "--clipboard", "--input"}};
  throw Error(ErrorCode::Unavailable,
              d.wayland ? "[dictate] --copy needs wl-copy: install wl-clipboard (the transcript was printed instead)"
                        : "[dictate] --copy needs xclip or xsel: install one of them (the transcript was printed instead)");
}

Helper typing_helper(const Desktop& d) {
  if (!d.wayland && !d.x11) throw no_session("--type");
  if (d.wayland && d.has_program("wtype")) return {{"wtype", "-"}};
  if (d.x11 && d.has_program("xdotool")) return {{"xdotool", "type", "--clearmodifiers", "--file", "-"}};
  throw Error(ErrorCode::Unavailable,
              d.wayland ? "[dictate] --type needs wtype: install it (the transcript was printed instead)"
                        : "[dictate] --type needs xdotool: install it (the transcript was printed instead)");
}

void run_helper(const Helper& helper, const std::string& text) {
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) throw Error(ErrorCode::Io, "[dictate] cannot create a pipe for " + helper.argv[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (const auto& a : helper.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  if (rc != 0) {
    close(in[1]);
    throw Error(ErrorCode::Unavailable, "[dictate] cannot run " + helper.argv[0] + ": " + std::strerror(rc));
  }
  // A helper that exits early must not kill hark with SIGPIPE.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(in[1], text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(in[1]);
  sigaction(SIGPIPE, &previous, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(ErrorCode::Unavailable, "[dictate] " + helper.argv[0] + " failed (exit status " +
                                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                            "); the transcript was printed instead");
}

}  // namespace hark::dictate
