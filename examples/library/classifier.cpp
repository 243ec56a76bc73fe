// The library path: your own TrainModule, trained by unitrain's Trainer from a few lines of C++.
// Usage: library_classifier [run_dir]   (trains an MLP on scikit-learn's digits data; safe to
// run again: a finished run is reported, not trained further)
#include "classifier.h"

#include <torch/torch.h>

#include <iostream>

#include "unitrain/core/error.h"
#include "unitrain/core/memory.h"
#include "unitrain/engine/trainer.h"

// Stops as soon as validation accuracy reaches a target: what a YAML file cannot say.
struct StopAtAccuracy : unitrain::Callback {
  double target;
  explicit StopAtAccuracy(double t) : target(t) {}
  void on_validation_end(unitrain::Trainer& trainer, const unitrain::MetricMap& m) override {
    if (m.at("val/acc") >= target) {
      trainer.print("reached val/acc " + std::to_string(m.at("val/acc")) + ", stopping");
      trainer.request_stop();
    }
  }
};

int main(int argc, char** argv) try {
  unitrain::keep_freed_memory();  // steps reuse freed memory (what the unitrain command does)
  std::string run_dir = argc > 1 ? argv[1] : "runs/library-digits";
  unitrain::Config config = classifier_config(run_dir);
  unitrain::Trainer trainer(config);  // seeds torch first: the model's init is reproducible
  const unitrain::Split split = digits_split();
  Classifier module;
  trainer.add_callback(std::make_shared<StopAtAccuracy>(0.97));
  // Run it again and it trains nothing: the run in run_dir is complete (the callback stopped it),
  // and the result describes it from its last checkpoint.
  unitrain::FitResult result = trainer.fit(module, split.rest, split.held_out);
  auto acc = result.last_val.find("val/acc");
  if (acc == result.last_val.end()) {
    std::cerr << "error: the run reported no val/acc\n";
    return 1;
  }
  std::cout << (result.already_complete ? "already complete: " : "") << "step " << result.state.step
            << " val/acc " << acc->second << "\n";
  return acc->second >= 0.9 ? 0 : 1;
} catch (const unitrain::ConfigError& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
