// hark probe: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_probe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("probe", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[probe] not implemented yet"); });
}

}  // namespace hark::cli
