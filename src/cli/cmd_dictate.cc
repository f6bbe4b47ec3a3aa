// hark dictate: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_dictate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("dictate", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[dictate] not implemented yet"); });
}

}  // namespace hark::cli
