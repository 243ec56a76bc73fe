#pragma once
// Per-class results of a classifier on one split, for `unitrain eval`: how many examples of each
// class it got right and the confusion matrix, labelled with the class names when known.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace unitrain {

class Loader;
class ObjectiveModule;

/// What a classifier predicted over one split, class by class.
struct ClassResults {
  std::vector<std::string> labels;  ///< each class's name, or its index when names are unknown
  std::vector<int64_t> examples;    ///< examples of each true class
  std::vector<int64_t> correct;     ///< of those, predicted as that class
  std::vector<std::vector<int64_t>> confusion;  ///< [true class][predicted class] counts

  /// One line per class for the console: "cat: 45 of 50 right (90.0%)".
  std::vector<std::string> lines() const;
  /// {"per_class": {label: {"examples", "correct", "accuracy"}}, "confusion": {"labels": [...],
  /// "counts": [[...]] (rows the true class, columns the predicted)}} as JSON text.
  std::string json() const;
};

/// Runs the module's model over every batch of `loader` (in eval mode, without gradients) and
/// counts, per true class, the examples and the ones whose highest score is that class. A
/// classifier is a model whose first prediction is scores of shape [N, C] and a batch with `y`,
/// int64 class indices of shape [N]; for anything else (regression, sequences) the result is
/// empty. `names` label the classes when there are C of them (a checkpoint's classes.json);
/// otherwise the classes are labelled by index.
std::optional<ClassResults> class_results(ObjectiveModule& module, const Loader& loader,
                                          const std::vector<std::string>& names);

}  // namespace unitrain
