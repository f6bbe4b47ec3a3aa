// hark bench (being written).
#include "cli/commands.h"
#include "hark/error.h"

namespace hark::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "(not available yet in this build)");
  cmd->callback([] { throw Error(ErrorCode::Unavailable, "[bench] not implemented yet"); });
}

}  // namespace hark::cli
