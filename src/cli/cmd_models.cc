// hark models: placeholder until its issue lands.
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_models_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[models] not implemented yet"); });
}

}  // namespace hark::cli
