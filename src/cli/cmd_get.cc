// hark get NAME: downloads a checkpoint from the Hugging Face hub (or a mirror) into
// hark's model folder, with a progress bar on a terminal and plain lines otherwise.
#include <cstdio>
#include <memory>
#include <string>

#include <unistd.h>

#include "cli/commands.h"
#include "hark/error.h"
#include "hub/catalog.h"
#include "hub/download.h"
#include "hub/progress.h"

namespace hark::cli {
namespace {

struct GetArgs {
  hub::GetOptions options;
  std::string format;
  bool list = false;
};

void print_catalog() {
  std::printf("%-18s %-32s %-38s %s\n", "NAME", "HUGGING FACE", "MLX (mlx:NAME)", "WHISPER.CPP (ggml:NAME)");
  for (const auto& entry : hub::catalog())
    std::printf("%-18s %-32s %-38s %s\n", entry.name.c_str(), entry.hf_repo.c_str(),
                entry.mlx_repo.empty() ? "-" : entry.mlx_repo.c_str(),
                entry.ggml_file.empty() ? "-" : entry.ggml_file.c_str());
  std::printf("\naliases: turbo = large-v3-turbo, large = large-v3; any repo id (org/name) or URL works too\n");
}

void run_get(GetArgs& args) {
  if (args.list) return print_catalog();
  if (args.options.name.empty())
    throw Error(ErrorCode::InvalidArgument, "[get] name a model, e.g. `hark get turbo` (`hark get --list` shows the short names)");
  if (!args.format.empty()) args.options.format = parse_checkpoint_format(args.format);
  auto printer = std::make_shared<hub::ProgressPrinter>(stderr, isatty(fileno(stderr)) != 0);
  args.options.on_progress = [printer](const hub::DownloadProgress& p) { printer->update(p); };
  args.options.on_message = [printer](const std::string& m) { printer->message(m); };

  hub::GetResult result = hub::get_model(args.options);
  if (result.already_on_disk) {
    std::fprintf(stderr, "%s is already on disk at %s (use --force to download it again)\n",
                 args.options.name.c_str(), result.path.c_str());
  } else {
    std::string what = result.repo.empty() ? args.options.name : result.repo;
    std::string commit = result.commit.substr(0, 12);
    std::fprintf(stderr, "%s%s%s: %zu file(s) downloaded, %zu already present and verified\n", what.c_str(),
                 commit.empty() ? "" : " @ ", commit.c_str(), result.downloaded.size(), result.reused.size());
  }
  std::printf("%s\n", result.path.c_str());  // stdout carries only the path, for scripts
}

}  // namespace

void add_get_command(CLI::App& app) {
  auto args = std::make_shared<GetArgs>();
  auto* cmd = app.add_subcommand("get", "Download a checkpoint from the Hugging Face hub (resumable, checksum verified)");
  cmd->add_option("name", args->options.name,
                  "Short name (turbo, small.en, distil-large-v3, mlx:base, ggml-tiny.en), repo id (org/name or "
                  "org/name/file) or URL");
  cmd->add_option("--token", args->options.token, "Hub token for gated or private repos (default: $HF_TOKEN)");
  cmd->add_option("--endpoint", args->options.endpoint,
                  "Hub URL, e.g. a mirror (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_option("--revision", args->options.revision, "Branch, tag or commit")->capture_default_str();
  cmd->add_option("--dir", args->options.dir, "Folder to download into (default: $HARK_HOME/models/<org>--<name>)");
  cmd->add_option("--format", args->format, "Which build of a short name: hf, mlx or ggml (default hf)");
  cmd->add_flag("--force", args->options.force, "Download even when the model is already on disk");
  cmd->add_option("--retries", args->options.max_retries, "Extra attempts per file after a broken connection")
      ->capture_default_str();
  cmd->add_flag("--list", args->list, "Print the short names and where each is published");
  cmd->callback([args] { run_get(*args); });
}

}  // namespace hark::cli
