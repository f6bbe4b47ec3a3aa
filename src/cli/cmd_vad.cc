// hark vad: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_vad_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("vad", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[vad] not implemented yet"); });
}

}  // namespace hark::cli
