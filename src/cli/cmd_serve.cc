// hark serve: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[serve] not implemented yet"); });
}

}  // namespace hark::cli
