// hark convert: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[convert] not implemented yet"); });
}

}  // namespace hark::cli
