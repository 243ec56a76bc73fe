// Evaluating and exporting a checkpoint of your own module: the classifier that classifier.cpp
// trained, read back from a checkpoint of its run, evaluated on the held-out split, and its
// weights written as a state_dict that Python's torch.load reads.
// Usage: library_evaluate RUN_DIR [CHECKPOINT] [OUT.pt]
//   CHECKPOINT: last (default), best, or a checkpoint folder; OUT.pt: RUN_DIR/classifier.pt
#include <torch/torch.h>

#include <fstream>
#include <iostream>

#include "classifier.h"
#include "unitrain/checkpoint/model_weights.h"
#include "unitrain/checkpoint/state_io.h"
#include "unitrain/core/error.h"
#include "unitrain/engine/loop/evaluator.h"
#include "unitrain/engine/trainer.h"

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::cerr << "usage: library_evaluate RUN_DIR [last|best|CHECKPOINT] [OUT.pt]\n";
    return 2;
  }
  const std::string run_dir = argv[1];
  const std::string choice = argc > 2 ? argv[2] : "last";
  const std::string checkpoint =
      choice == "last" || choice == "best" ? run_dir + "/checkpoints/" + choice : choice;
  const std::string out = argc > 3 ? argv[3] : run_dir + "/classifier.pt";
  // The run's own config: the Trainer evaluates as the run validated (batch size, device).
  unitrain::Trainer trainer(classifier_config(run_dir));
  Classifier module;
  // The checkpoint's weights (model.pt, checked against its manifest), strictly by name; then
  // the weights validation used, when a callback validated with its own (the ema average).
  const unitrain::NamedTensors weights = unitrain::read_model_weights(checkpoint, "checkpoint");
  std::cout << unitrain::load_module_state(module.weights(), weights, true, checkpoint) << "\n";
  trainer.load_validated_weights(module, checkpoint);
  const unitrain::MetricMap metrics =
      trainer.evaluate(module, digits_split().held_out, unitrain::EvalSplit::Val, "val");
  for (const auto& [name, value] : metrics) std::cout << name << " " << value << "\n";
  // The weights as a state_dict: torch.load(out) in Python gives {name: tensor}.
  const std::vector<char> bytes =
      unitrain::save_tensor_dict(unitrain::module_state(module.weights(), true));
  std::ofstream(out, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::cout << "wrote " << out << "\n";
  return 0;
} catch (const unitrain::ConfigError& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
