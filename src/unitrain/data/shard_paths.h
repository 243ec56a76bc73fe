#pragma once
// shard_paths: the files of a dataset split into shards, from a path, a glob or a list.
#include <string>
#include <vector>

namespace unitrain {

/// The files a dataset reads, from its `path` key (one file, or a glob pattern with * ? or
/// [...], expanded and sorted by name) or its `paths` key (a list, in its order): exactly one
/// of the two is given. ConfigError naming `who` (e.g. "tokens") and the keys when both or
/// neither are given, or when a glob matches nothing (missing files are the reader's to name).
std::vector<std::string> shard_paths(const std::string& path, const std::vector<std::string>& paths,
                                     const std::string& who);

}  // namespace unitrain
