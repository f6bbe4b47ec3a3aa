// Manifests and shards: parsing, duplicates, the partition (every file in exactly one
// shard, balanced, stable when the list grows) and the mirrored output paths.
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/manifest.h"
#include "hark/error.h"

namespace hark::cli {
namespace {

namespace fs = std::filesystem;
using Paths = std::vector<std::string>;

template <class Fn>
std::string error_of(Fn fn, ErrorCode expected) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

Paths numbered(size_t n) {
  Paths out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::to_string(i) + ".wav");
  return out;
}

TEST(Shard, ParsesKOverN) {
  EXPECT_EQ(parse_shard("0/1").count, 1u);
  auto s = parse_shard("15/16");
  EXPECT_EQ(s.index, 15u);
  EXPECT_EQ(s.count, 16u);
}

TEST(Shard, BadValuesAreClearErrors) {
  for (const char* bad : {"", "1", "a/b", "1/", "/2", "-1/3", "1/ 2", "1/2/3", "0x1/2", "1.5/2"})
    EXPECT_NE(error_of([&] { parse_shard(bad); }, ErrorCode::InvalidArgument).find("must be K/N"), std::string::npos)
        << bad;
  EXPECT_NE(error_of([] { parse_shard("0/0"); }, ErrorCode::InvalidArgument).find("N must be at least 1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_shard("16/16"); }, ErrorCode::InvalidArgument).find("K must be 0..15"),
            std::string::npos);
}

TEST(Manifest, CommentsBlanksSpacesAndCrlf) {
  std::istringstream in("# archive 1990\n\na.wav\r\n   b dir/c d.mp3  \n\t# indented comment\n/abs/e.flac\n");
  EXPECT_EQ(read_manifest(in, "t"), (Paths{"a.wav", "b dir/c d.mp3", "/abs/e.flac"}));
}

TEST(Manifest, SameFileTwiceIsKeptOnceAtItsFirstLine) {
  std::istringstream in("x/a.wav\nb.wav\n./x/a.wav\nx//a.wav\nb.wav\nx/../x/a.wav\n");
  EXPECT_EQ(read_manifest(in, "t"), (Paths{"x/a.wav", "b.wav"}));
}

TEST(Manifest, NulByteNamesTheLine) {
  std::istringstream in(std::string("a.wav\n# c\nb\0c.wav\n", 18));
  auto message = error_of([&] { read_manifest(in, "list.txt"); }, ErrorCode::InvalidArgument);
  EXPECT_NE(message.find("line 3"), std::string::npos) << message;
}

TEST(Manifest, FileErrors) {
  EXPECT_NE(error_of([] { read_manifest_file("/nonexistent/list.txt"); }, ErrorCode::NotFound).find("cannot open"),
            std::string::npos);
  const fs::path dir = fs::temp_directory_path() / ("hark-manifest-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "empty.txt") << "# nothing here\n\n";
  EXPECT_NE(error_of([&] { read_manifest_file((dir / "empty.txt").string()); }, ErrorCode::InvalidArgument)
                .find("lists no files"),
            std::string::npos);
  std::ofstream(dir / "clash.txt") << "rec/a.wav\nrec/a.mp3\n";
  auto clash = error_of([&] { read_manifest_file((dir / "clash.txt").string()); }, ErrorCode::InvalidArgument);
  EXPECT_NE(clash.find("'rec/a.wav' and 'rec/a.mp3' would write the same outputs"), std::string::npos) << clash;
  std::ofstream(dir / "ok.txt") << "a.wav\nb.wav\n";
  EXPECT_EQ(read_manifest_file((dir / "ok.txt").string()), (Paths{"a.wav", "b.wav"}));
  fs::remove_all(dir);
}

TEST(ShardEntries, EveryFileInExactlyOneShardAndBalanced) {
  for (size_t files = 0; files <= 23; ++files) {
    const Paths entries = numbered(files);
    for (size_t n = 1; n <= 7; ++n) {
      std::map<std::string, int> seen;
      size_t smallest = files, largest = 0;
      for (size_t k = 0; k < n; ++k) {
        const Paths mine = shard_entries(entries, {k, n});
        EXPECT_EQ(mine, shard_entries(entries, {k, n})) << "deterministic";
        for (const auto& f : mine) ++seen[f];
        smallest = std::min(smallest, mine.size());
        largest = std::max(largest, mine.size());
      }
      ASSERT_EQ(seen.size(), files) << files << " files, " << n << " shards";
      for (const auto& [f, times] : seen) EXPECT_EQ(times, 1) << f;
      EXPECT_LE(largest - std::min(smallest, largest), 1u) << files << " files, " << n << " shards";
    }
  }
}

TEST(ShardEntries, AppendingFilesMovesNoneThatWereAssigned) {
  const Paths before = numbered(10), after = numbered(17);
  for (size_t k = 0; k < 4; ++k) {
    Paths old_share = shard_entries(before, {k, 4}), new_share = shard_entries(after, {k, 4});
    ASSERT_GE(new_share.size(), old_share.size());
    EXPECT_TRUE(std::equal(old_share.begin(), old_share.end(), new_share.begin())) << "shard " << k;
  }
}

TEST(OutputBase, MirrorsTheInputPathInsideTheOutputFolder) {
  EXPECT_EQ(output_base("a.wav", "out"), fs::path("out/a"));
  EXPECT_EQ(output_base("./rec/1990/tape-01.mp3", "out"), fs::path("out/rec/1990/tape-01"));
  EXPECT_EQ(output_base("/data/rec/x.flac", "/scratch/out"), fs::path("/scratch/out/data/rec/x"));
  EXPECT_EQ(output_base("noext", "out"), fs::path("out/noext"));
  EXPECT_EQ(output_base("a.tar.gz", "out"), fs::path("out/a.tar"));
  // Above the working directory: the absolute form, never outside the output folder.
  const fs::path up = output_base("../x/y.wav", "out");
  EXPECT_EQ(up, fs::path("out") / (fs::current_path().parent_path() / "x/y").relative_path());
  EXPECT_NE(up.lexically_relative("out").string().rfind("..", 0), 0u);
}

TEST(OutputBase, DistinctInputsWithDistinctOutputsPass) {
  EXPECT_NO_THROW(check_distinct_outputs({"a/x.wav", "b/x.wav", "x.wav", "/c/x.wav"}));
  // Relative and absolute paths share the mirrored tree: a clash is reported, not overwritten.
  EXPECT_NE(error_of([] { check_distinct_outputs({"a/x.wav", "/a/x.wav"}); }, ErrorCode::InvalidArgument)
                .find("would write the same outputs"),
            std::string::npos);
}

}  // namespace
}  // namespace hark::cli
