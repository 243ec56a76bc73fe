#pragma once
// concatenate_array_shards: the arrays of several shard files read as one array per key.
#include <string>
#include <vector>

#include "unitrain/data/array_dataset.h"

namespace unitrain {

/// The columns of shards read as one column per key: key k's rows are shard 0's rows of k,
/// then shard 1's, and so on, each read from its own shard (no copy, no scan). Every shard
/// holds the same keys in the same order (its ArrayColumns). One shard is returned as it is.
/// A row is named by its shard's column and its row there (row_name). ConfigError prefixed
/// with `kind` naming the files when a shard's array is 0-d, when two shards of a key differ
/// in dtype or in the shape of a row, when the keys of one shard disagree on their number of
/// rows, or when one shard holds class names and there are several (`classes` gives them once
/// for all shards).
ArrayColumns concatenate_array_shards(const std::string& kind, std::vector<ArrayColumns> shards,
                                      bool classes_given);

}  // namespace unitrain
