// Manual optimization: a module that steps its own optimizers, Lightning-style. A small GAN
// learns to draw scikit-learn's 8x8 digits: per step the discriminator learns real from fake,
// then the generator learns to fool it, each with its own optimizer (and the generator with a
// schedule). The Trainer saves both optimizers in every checkpoint, resumes them, logs
// train/lr-<name>, and in data-parallel runs averages each backward's gradients over the ranks.
// Usage: library_gan [run_dir]
//        unitrain launch --exec --nproc-per-node 2 -- library_gan [run_dir]
#include <torch/torch.h>

#include <iostream>

#include "unitrain/core/error.h"
#include "unitrain/core/memory.h"
#include "unitrain/data/csv_dataset.h"
#include "unitrain/engine/trainer.h"
#include "unitrain/optim/optimizer_setup.h"

struct DigitsGan : unitrain::TrainModule {
  static constexpr int64_t kNoise = 16;
  torch::nn::Sequential generator{nullptr}, discriminator{nullptr};

  DigitsGan() {
    generator = register_module(
        "generator", torch::nn::Sequential(torch::nn::Linear(kNoise, 64), torch::nn::ReLU(),
                                           torch::nn::Linear(64, 64), torch::nn::Sigmoid()));
    discriminator =
        register_module("discriminator",
                        torch::nn::Sequential(
                            torch::nn::Linear(64, 64),
                            torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
                            torch::nn::Linear(64, 1)));
  }

  void configure_optimizers(unitrain::OptimizerSetup& setup) override {
    auto adam = [](torch::nn::Module& m) {
      return std::make_unique<torch::optim::Adam>(
          m.parameters(), torch::optim::AdamOptions(2e-3).betas({0.5, 0.999}));
    };
    setup.add("discriminator", adam(*discriminator));
    setup.add("generator", adam(*generator),
              unitrain::build_scheduler(unitrain::Config::from_string("{type: cosine}"),
                                        setup.context()));
  }

  unitrain::StepOutput training_step(const unitrain::Batch& b) override {
    unitrain::ModuleRun& run = this->run();
    torch::Tensor real = b.at("x") / 16.0;  // digits pixels are 0..16
    const int64_t n = real.size(0);
    // Tensors made here belong on the run's device (the batch and the modules are moved there).
    const auto on = torch::TensorOptions().device(run.device());
    torch::Tensor ones = torch::ones({n, 1}, on), zeros = torch::zeros({n, 1}, on);
    torch::Tensor fake = generator->forward(torch::randn({n, kNoise}, on));
    // The discriminator: real is 1, fake is 0 (the fake detached: the generator gets nothing).
    torch::optim::Optimizer& d = run.optimizer("discriminator");
    d.zero_grad();
    torch::Tensor d_loss =
        torch::binary_cross_entropy_with_logits(discriminator->forward(real), ones) +
        torch::binary_cross_entropy_with_logits(discriminator->forward(fake.detach()), zeros);
    run.backward(d_loss);
    d.step();
    // The generator: make the discriminator say 1.
    torch::optim::Optimizer& g = run.optimizer("generator");
    g.zero_grad();
    torch::Tensor g_loss =
        torch::binary_cross_entropy_with_logits(discriminator->forward(fake), ones);
    run.backward(g_loss);
    g.step();
    run.log("g_loss", g_loss);  // read at the log event, not every step
    return {d_loss.detach(), {}};
  }

  unitrain::StepOutput validation_step(const unitrain::Batch& b) override {
    // How often the discriminator takes a real digit for real.
    torch::Tensor real = discriminator->forward(b.at("x") / 16.0);
    return {torch::binary_cross_entropy_with_logits(real, torch::ones_like(real)),
            {{"real_as_real", unitrain::MetricValue((real > 0).to(torch::kFloat).mean())}}};
  }
};

int main(int argc, char** argv) try {
  unitrain::keep_freed_memory();
  const std::string run_dir = argc > 1 ? argv[1] : "runs/library-gan";
  unitrain::Trainer trainer(unitrain::Config::from_string(
      "name: library-gan\nrun_dir: " + run_dir + "\n" +
      "data: {loader: {batch_size: 64}}\n"
      "train: {max_length: 20 epochs, log_every: 5 epochs, val_every: 5 epochs}\n"
      "checkpoint: {every: 10 epochs}\n"));
  unitrain::CsvOptions csv;
  csv.path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  csv.header = false;
  csv.target = "64";
  auto digits = unitrain::load_csv(csv);
  DigitsGan module;
  unitrain::FitResult result = trainer.fit(module, digits, digits);
  // Every rank's weights: equal on every rank when each backward was averaged over the ranks.
  double sum = 0;
  for (const auto& p : module.parameters()) sum += p.sum().item<double>();
  std::cout << "rank " << trainer.rank() << " step " << result.state.step << " weights sum " << sum
            << " g_loss " << result.last_train.at("train/g_loss") << "\n";
  return 0;
} catch (const unitrain::ConfigError& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
