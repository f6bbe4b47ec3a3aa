// hark transcribe (being written).
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_transcribe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("transcribe", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[transcribe] not implemented yet"); });
}

}  // namespace hark::cli
