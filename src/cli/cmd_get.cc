// hark get: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_get_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("get", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[get] not implemented yet"); });
}

}  // namespace hark::cli
