// hark models: every usable checkpoint on disk (hark's folder, the Hugging Face cache,
// whisper.cpp model folders), with its format, size, dtype and vocabulary.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "hub/catalog.h"
#include "hub/discovery.h"

namespace hark::cli {
namespace {

struct ModelsArgs {
  bool json = false;
  bool paths = false;
};

void print_search_paths(const hub::SearchPaths& paths) {
  std::printf("hark:         %s\n", paths.hark_models.c_str());
  for (const auto& dir : paths.hf_caches) std::printf("hf-cache:     %s\n", dir.c_str());
  for (const auto& dir : paths.whisper_cpp) std::printf("whisper.cpp:  %s\n", dir.c_str());
}

// The short name `--model` accepts for a checkpoint, when it is an official one.
std::string short_name_of(const hub::ModelInfo& model) {
  const auto* entry = hub::find_catalog_entry_by_source(model.name);
  if (!entry) return "-";
  if (model.format == CheckpointFormat::Ggml) return "ggml-" + entry->name;
  return model.format == CheckpointFormat::Mlx ? "mlx:" + entry->name : entry->name;
}

void run_models(const ModelsArgs& args) {
  auto paths = hub::SearchPaths::from_environment();
  if (args.paths) return print_search_paths(paths);
  auto models = hub::discover_models(paths);
  if (args.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : models)
      list.push_back({{"name", m.name}, {"short_name", short_name_of(m)}, {"format", to_string(m.format)},
                      {"size", m.size_class()}, {"dtype", m.dtype}, {"vocab", m.hparams.n_vocab},
                      {"bytes", m.bytes}, {"source", m.source}, {"path", m.path}});
    std::printf("%s\n", list.dump(2).c_str());
    return;
  }
  if (models.empty()) {
    std::printf("No Whisper checkpoints found. Searched, in this order:\n");
    print_search_paths(paths);
    std::printf("Download one with `hark get turbo` (`hark get --list` shows every short name).\n");
    return;
  }
  std::printf("%-36s %-16s %-5s %-15s %-5s %-6s %-9s %-11s %s\n", "NAME", "SHORT", "FMT", "SIZE", "DTYPE", "VOCAB",
              "ON DISK", "SOURCE", "PATH");
  for (const auto& m : models)
    std::printf("%-36s %-16s %-5s %-15s %-5s %-6d %-9s %-11s %s\n", m.name.c_str(), short_name_of(m).c_str(),
                to_string(m.format), m.size_class().c_str(), m.dtype.c_str(), m.hparams.n_vocab,
                hub::human_bytes(m.bytes).c_str(), m.source.c_str(), m.path.c_str());
}

}  // namespace

void add_models_command(CLI::App& app) {
  auto args = std::make_shared<ModelsArgs>();
  auto* cmd = app.add_subcommand("models", "List the Whisper checkpoints on disk (hark, Hugging Face cache, whisper.cpp)");
  cmd->add_flag("--json", args->json, "Print the list as JSON");
  cmd->add_flag("--paths", args->paths, "Print the folders searched, in search order");
  cmd->callback([args] { run_models(*args); });
}

}  // namespace hark::cli
